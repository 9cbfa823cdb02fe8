"""Offline fixtures for the transformers-config-fallback smoke tests: no torch, no network.

HF_HUB_OFFLINE must be set before huggingface_hub is imported (it reads it once), so it is
set here, at collection, before the tests import transformers.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # "PyTorch was not found" is expected


@pytest.fixture
def tiny_llama_dir(tmp_path: Path) -> Path:
    """A folder holding a small LlamaConfig saved with save_pretrained (config.json)."""
    from transformers import LlamaConfig

    folder = tmp_path / "tiny-llama"
    LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=32,
    ).save_pretrained(folder)
    return folder


@pytest.fixture
def tokenizer_only_dir(tmp_path: Path) -> Path:
    """A folder holding only a tokenizer (a WordLevel model built with `tokenizers`), no config.json."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "[PAD]": 1, "hello": 2, "world": 3}
    backend = Tokenizer(WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = Whitespace()
    folder = tmp_path / "tokenizer-only"
    PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="[UNK]",
        pad_token="[PAD]",
        clean_up_tokenization_spaces=False,  # 4.44 warns (FutureWarning) without it
    ).save_pretrained(folder)
    assert not (folder / "config.json").exists()
    return folder
