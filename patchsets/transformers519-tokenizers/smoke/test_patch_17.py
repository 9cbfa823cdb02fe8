"""patch-17: AutoTokenizer keeps the spaces of a byte-level tokenizer.json declared as Llama.

Unpatched (transformers 5.0 - 5.21.x), a checkpoint whose tokenizer_config.json declares
LlamaTokenizerFast over a ByteLevel BPE tokenizer.json (DeepSeek-R1-Distill-Llama,
deepseek-math, deepseek-coder, Yi) encodes "we need to add 9 and 6" as
['we', 'n', 'eed', 't', 'o', 'a', 'dd', '9', 'a', 'nd', '6']: LlamaTokenizer rebuilds its own
Metaspace pre-tokenizer over the byte-level vocabulary and every space is lost. The guard
test pins what the fix must keep: a SentencePiece-style (Metaspace) llama tokenizer.json still
loads as LlamaTokenizer, with the same ids as its tokenizer.json.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import TEXTS, own_ids


@pytest.mark.parametrize("text", TEXTS)
def test_byte_level_llama_keeps_spaces(bytelevel_llama_dir: Path, text: str) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(bytelevel_llama_dir)
    ids = tokenizer.encode(text, add_special_tokens=False)
    # unpatched: ['we', 'n', 'eed', ...] where tokenizer.json gives ['we', 'Ġneed', 'Ġto', ...]
    assert tokenizer.convert_ids_to_tokens(ids) == tokenizer.convert_ids_to_tokens(
        own_ids(bytelevel_llama_dir, text)
    )
    # unpatched, decoding the right ids prints the markers: 'weĠneedĠtoĠaddĠ9ĠandĠ6'
    assert tokenizer.decode(ids) == text


@pytest.mark.parametrize("text", TEXTS)
def test_metaspace_llama_loads_as_before(metaspace_llama_dir: Path, text: str) -> None:
    from transformers import AutoTokenizer, LlamaTokenizer

    tokenizer = AutoTokenizer.from_pretrained(metaspace_llama_dir)
    assert isinstance(tokenizer, LlamaTokenizer)
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert ids == own_ids(metaspace_llama_dir, text)
    assert tokenizer.decode(ids) == text
