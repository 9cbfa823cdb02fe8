"""patch-18: AutoTokenizer keeps the Split step of a GPT2Tokenizer's tokenizer.json.

Unpatched (transformers 5.0 - 5.25.0), a folder whose tokenizer_config.json declares
GPT2Tokenizer over a tokenizer.json with pre_tokenizer Sequence[Split(cl100k regex),
ByteLevel(use_regex=false)] (OLMo 2/3, phi-4, Granite 4, the Dolma 2 tokenizer-only repos)
encodes "\\n\\nhello" as ['Ċ', 'Ċ', 'hello'] instead of ['ĊĊ', 'hello']: GPT2Tokenizer
rebuilds a bare ByteLevel pre-tokenizer and the split is lost. The guard test pins what the
fix must keep: a plain ByteLevel GPT-2 tokenizer.json still loads as GPT2Tokenizer, with the
same ids as its tokenizer.json.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import TEXTS, own_ids


@pytest.mark.parametrize("text", TEXTS)
def test_split_pre_tokenizer_is_kept(split_gpt2_dir: Path, text: str) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(split_gpt2_dir)
    ids = tokenizer.encode(text, add_special_tokens=False)
    # unpatched, "\n\nhello": ['Ċ', 'Ċ', 'hello'] where tokenizer.json gives ['ĊĊ', 'hello']
    assert tokenizer.convert_ids_to_tokens(ids) == tokenizer.convert_ids_to_tokens(
        own_ids(split_gpt2_dir, text)
    )
    assert tokenizer.decode(ids) == text


def test_think_tag_tokens(split_gpt2_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(split_gpt2_dir)
    # unpatched: ['<', 'think', '>', 'Ċ', 'Okay']
    assert tokenizer.tokenize("<think>\nOkay") == ["<think", ">Ċ", "Okay"]


@pytest.mark.parametrize("text", TEXTS)
def test_plain_byte_level_gpt2_loads_as_before(plain_gpt2_dir: Path, text: str) -> None:
    from transformers import AutoTokenizer, GPT2Tokenizer

    tokenizer = AutoTokenizer.from_pretrained(plain_gpt2_dir)
    assert isinstance(tokenizer, GPT2Tokenizer)
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert ids == own_ids(plain_gpt2_dir, text)
    assert tokenizer.decode(ids) == text
