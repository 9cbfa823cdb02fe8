"""explain finds the transformers tokenizer patches (issue 45) from what a user sees: the
decoded text with byte-level markers, the token lists, the warning 5.22.0 prints. The markers
(Ġ a space, Ċ a newline) are words of their own to the search: before, "['<', 'think', '>',
'Ċ', 'Okay']" shared only two words with patch-18 and matched nothing."""

from __future__ import annotations

import json

import pytest

from compatkit.engine.search import tokens
from helpers import run_cli

B, A = "patch-17", "patch-18"


@pytest.mark.parametrize(
    ("text", "patch"),
    [
        ("weĠneedĠtoĠaddĠ9ĠandĠ6", B),  # decode of the right ids through the wrong class
        ("['we', 'n', 'eed', 't', 'o', 'a', 'dd', '9', 'a', 'nd', '6']", B),
        (
            "`tokenizer_class` is `LlamaTokenizerFast` but `tokenizer.json` is ByteLevel; "
            "loading `TokenizersBackend`. Set `tokenizer_class` to `TokenizersBackend` in "
            "`tokenizer_config.json`.",
            B,
        ),
        ("['<', 'think', '>', 'Ċ', 'Okay']", A),
        ("NameError: name '_hub_declared_class' is not defined", A),  # A without B on 5.19
    ],
)
def test_explain_matches_what_the_user_sees(
    capsys: pytest.CaptureFixture[str], text: str, patch: str
) -> None:
    code, out, err = run_cli(capsys, "explain", "--json", text)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["candidates"][0]["id"] == patch, doc["candidates"]
    assert {m["id"] for m in doc["matches"]} == {patch}, doc["matches"]


def test_a_token_list_of_newlines_finds_the_split_patch(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every word of the text ("Ċ", "hello") is in patch-18's Symptom: a match, in both
    patchsets that carry it (before the markers were words: "hello" alone, nothing)."""
    code, out, err = run_cli(capsys, "explain", "--json", "['Ċ', 'Ċ', 'hello']")
    doc = json.loads(out)
    assert code == 0, err
    assert {m["id"] for m in doc["matches"]} == {A}
    assert {(c["id"], c["patchset"]) for c in doc["candidates"]} == {
        (A, "transformers-tokenizers"),
        (A, "transformers519-tokenizers"),
    }


def test_byte_level_markers_are_words() -> None:
    assert {"Ġ", "Ċ", "need"} <= tokens("weĠneedĊ").keys()
