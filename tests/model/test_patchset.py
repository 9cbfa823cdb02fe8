"""compatkit.model.patchset's header reader: it looks only at the header's lines and slices the diff
off whole (start-up time, P1). The reference below is the per-line definition it replaced:
split the whole file into lines, strip each one's CR, read fields until the diff starts, join
the rest back. A hypothesis test checks the two agree on any text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compatkit.model.patchset import _ALIASES, _clean_subject, split_patch

ROOT = Path(__file__).resolve().parents[2]
_FIELD = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*):[ \t]?(.*)$")
_MAIL_FROM = re.compile(r"^From [0-9a-f]{7,64} ")


def _reference(text: str) -> tuple[dict[str, str], str, int]:
    raw = text.split("\n")
    lines = [x[:-1] if x.endswith("\r") and i < len(raw) - 1 else x for i, x in enumerate(raw)]
    fields: dict[str, str] = {}
    description: list[str] = []
    current: str | None = None
    start = len(lines)
    for i, line in enumerate(lines):
        if line == "---" or line.startswith(("diff --git ", "--- ", "Index: ")):
            start = i + 1 if line == "---" else i
            break
        if i == 0 and _MAIL_FROM.match(line):
            continue
        if line[:1] in (" ", "\t") and current is not None:
            cont = line[1:]
            fields[current] += "\n" + ("" if cont.strip() == "." else cont)
            continue
        match = _FIELD.match(line)
        if match:
            name = match.group(1).lower()
            current = _ALIASES.get(name, name)
            if current in fields and name in _ALIASES:
                current = name
            fields[current] = match.group(2).strip()
            continue
        current = None
        if line.strip():
            description.append(line.strip())
    body = "\n".join(raw[start:])
    if "title" in fields:
        fields["title"] = _clean_subject(fields["title"])
    if description and "description" not in fields:
        fields["description"] = "\n".join(description)
    return {k: v.strip() for k, v in fields.items()}, body, start + 1


LINES = [
    "---",
    "--- a/x.py",
    "+++ b/x.py",
    "diff --git a/x b/x",
    "Index: x",
    "From 0123456789abcdef Mon Sep 17 00:00:00 2001",
    "Subject: [PATCH 1/2] a title",
    "Title: t",
    "Patch-Id: patch-1",
    "Symptom: it breaks\r",
    " continued",
    " .",
    "\t.",
    "a description line",
    "",
    "\r",
    "x:y",
    "@@ -1 +1 @@",
]


@pytest.mark.slow
@settings(max_examples=2000)
@given(
    st.lists(st.sampled_from(LINES) | st.text(max_size=12), max_size=10),
    st.sampled_from(["\n", "\r\n"]),
    st.sampled_from(["", "\n", "\r\n", "\r"]),
)
def test_split_patch_agrees_with_the_per_line_reference(
    lines: list[str], eol: str, end: str
) -> None:
    text = eol.join(lines) + end
    assert split_patch(text) == _reference(text)


def test_split_patch_on_every_bundled_patch() -> None:
    patches = sorted(ROOT.glob("patchsets/*/patches/*.patch"))
    assert len(patches) >= 20
    for path in patches:
        text = path.read_bytes().decode("utf-8", "surrogateescape")
        for variant in (text.replace("\n", "\r\n"), text[:300]):
            assert split_patch(variant) == _reference(variant), path
        fields, body, first = split_patch(text)
        assert (fields, body, first) == _reference(text), path
        assert body.startswith(("diff --git ", "--- ")), path
        assert fields["patch-id"] and fields["title"], path
