"""Offline fixtures for the transformers tokenizer smoke tests: no torch, no network.

Each fixture builds a small BPE tokenizer with the `tokenizers` package (trained in a
fraction of a second on a few sentences), saves its tokenizer.json, and writes the
tokenizer_config.json (and config.json) a Hub checkpoint of that shape ships. The ids
`tokenizers` itself gives for a text are the truth `AutoTokenizer` must reproduce.

HF_HUB_OFFLINE must be set before huggingface_hub is imported (it reads it once).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # "PyTorch was not found" is expected

# the pre-tokenizer regex of cl100k (OLMo 2/3, phi-4, Granite 4 ship it in a Split step)
CL100K = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
CORPUS = [
    "we need to add 9 and 6 to get 15",
    "The quick brown fox jumps over the lazy dog.",
    "<think>\nOkay, so we need to add the numbers.\n</think>\n\nhello world",
    "\n\nhello\n\nworld\n",
    "def add(a, b):\n    return a + b\n",
]
TEXTS = ["we need to add 9 and 6", "\n\nhello", "<think>\nOkay", "The quick brown fox."]


def _build(folder: Path, kind: str, tokenizer_class: str, model_type: str | None) -> Path:
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    if kind == "metaspace":
        pre = pre_tokenizers.Metaspace()
        decoder = decoders.Metaspace()
        alphabet: list[str] = []
    else:
        byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=kind == "bytelevel")
        pre = byte_level
        if kind == "split":
            split = pre_tokenizers.Split(Regex(CL100K), behavior="isolated")
            pre = pre_tokenizers.Sequence([split, byte_level])
        decoder = decoders.ByteLevel()
        alphabet = pre_tokenizers.ByteLevel.alphabet()
    tok = Tokenizer(models.BPE(unk_token="<unk>" if kind == "metaspace" else None))
    tok.pre_tokenizer = pre
    tok.decoder = decoder
    special = ["<unk>", "<s>", "</s>"]
    trainer = trainers.BpeTrainer(
        vocab_size=360, special_tokens=special, initial_alphabet=alphabet, show_progress=False
    )
    tok.train_from_iterator(CORPUS * 20, trainer)
    folder.mkdir(parents=True)
    tok.save(str(folder / "tokenizer.json"))
    config = {"tokenizer_class": tokenizer_class, "bos_token": "<s>", "eos_token": "</s>"}
    if kind == "metaspace":
        config["unk_token"] = "<unk>"
    config["add_bos_token"] = False
    config["add_eos_token"] = False
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    if model_type is not None:
        (folder / "config.json").write_text(json.dumps({"model_type": model_type}))
    return folder


def own_ids(folder: Path, text: str) -> list[int]:
    """The ids the folder's tokenizer.json gives, through `tokenizers` alone."""
    from tokenizers import Tokenizer

    return (
        Tokenizer.from_file(str(folder / "tokenizer.json"))
        .encode(text, add_special_tokens=False)
        .ids
    )


@pytest.fixture
def bytelevel_llama_dir(tmp_path: Path) -> Path:
    """DeepSeek-R1-Distill-Llama's shape: LlamaTokenizerFast over ByteLevel BPE, llama config."""
    return _build(tmp_path / "bytelevel-llama", "bytelevel", "LlamaTokenizerFast", "llama")


@pytest.fixture
def metaspace_llama_dir(tmp_path: Path) -> Path:
    """A SentencePiece-style (Metaspace) llama tokenizer.json: the Llama tokenizer's own shape."""
    return _build(tmp_path / "metaspace-llama", "metaspace", "LlamaTokenizerFast", "llama")


@pytest.fixture
def split_gpt2_dir(tmp_path: Path) -> Path:
    """OLMo 2's tokenizer-only shape: GPT2Tokenizer over Sequence[Split(cl100k), ByteLevel]."""
    return _build(tmp_path / "split-gpt2", "split", "GPT2Tokenizer", None)


@pytest.fixture
def plain_gpt2_dir(tmp_path: Path) -> Path:
    """GPT-2's own shape: GPT2Tokenizer over a plain ByteLevel BPE, model_type gpt2."""
    return _build(tmp_path / "plain-gpt2", "bytelevel", "GPT2Tokenizer", "gpt2")
