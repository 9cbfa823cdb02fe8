"""Parsed diffs from compatkit's cache: a warm ``apply`` or ``status`` does not re-read them.

Reading a diff strictly (:mod:`compatkit.model.diffread`) and turning it into file diffs costs more
than the rest of a small real patchset's work (≈ 2.6 ms for the 13-file requests upgrade,
≈ 6 ms for speculators-vllm016's ten patches: benchmarks P1 and P5). The parsed
:class:`~compatkit.model.diffparse.FileDiff` tuple is kept in compatkit's cache (:mod:`compatkit.
cache`), keyed by the diff text and by the parser's own files (their size and mtime, so an
edited parser never serves an old parse). Only successful parses are cached: an error is
raised, and worded, by the parser every time. An entry is checked field by field when read;
anything malformed is parsed again, never trusted.

>>> from compatkit.model.diffparse import parse_diff
>>> files = parse_diff("--- a/p/m.py\\n+++ b/p/m.py\\n@@ -1 +1 @@\\n-x = 1\\n+x = 2\\n", "t")
>>> from_doc(to_doc(files)) == files
True
"""

from __future__ import annotations

import os

from compatkit.load import cache
from compatkit.model import diffparse
from compatkit.model.diffparse import FileDiff, Hunk, parse_diff

FORMAT = 2
_KINDS = ("modify", "create", "delete")
_EOLS = ("\n", "\r\n", "")
_HERE = os.path.dirname(os.path.abspath(diffparse.__file__))  # the parser's folder (model/)


def parse(text: str, label: str, first_line: int = 1) -> tuple[FileDiff, ...]:
    """:func:`compatkit.model.diffparse.parse_diff`, from the cache when this exact text was
    seen."""
    entry = cache.entry("diff", _key(text))
    cached = from_doc(cache.load(entry))
    if cached is not None:
        return cached
    files = parse_diff(text, label, first_line)
    cache.store(entry, to_doc(files))
    return files


def _key(text: str) -> bytes:
    parser = []
    for name in ("diffparse.py", "diffread.py"):
        try:
            st = os.stat(os.path.join(_HERE, name))
            parser.append(f"{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parser.append("?")  # a zipped install: FORMAT alone tells parses apart
    head = f"compatkit diff {FORMAT} {' '.join(parser)}\n".encode()
    return head + text.encode("utf-8", "surrogatepass")


def to_doc(files: tuple[FileDiff, ...]) -> dict[str, object]:
    return {
        "format": FORMAT,
        "files": [
            [
                f.path,
                f.kind,
                [
                    [
                        h.old_start,
                        h.old_len,
                        h.new_start,
                        h.new_len,
                        [list(x) for x in h.lines],
                        h.old_no_eol,
                        h.new_no_eol,
                        list(h.eols),
                        h.exact,
                    ]
                    for h in f.hunks
                ],
            ]
            for f in files
        ],
    }


def _hunk(raw: object) -> Hunk | None:
    if not (isinstance(raw, list) and len(raw) == 9):
        return None
    if not all(type(v) is int and v >= 0 for v in raw[:4]):
        return None
    lines, old_no_eol, new_no_eol, eols, exact = raw[4:]
    flags = (old_no_eol, new_no_eol, exact)
    if not (isinstance(lines, list) and all(type(f) is bool for f in flags)):
        return None
    if not (isinstance(eols, list) and len(eols) == len(lines) and all(e in _EOLS for e in eols)):
        return None
    pairs = []
    for line in lines:
        if not (isinstance(line, list) and len(line) == 2 and line[0] in (" ", "-", "+")):
            return None
        if type(line[1]) is not str:
            return None
        pairs.append((line[0], line[1]))
    a, b, c, d = raw[:4]
    return Hunk(a, b, c, d, tuple(pairs), old_no_eol, new_no_eol, tuple(eols), exact)


def from_doc(doc: dict[str, object] | None) -> tuple[FileDiff, ...] | None:
    """The file diffs an entry holds, or None if it is missing or not exactly well formed."""
    if doc is None or doc.get("format") != FORMAT or not isinstance(doc.get("files"), list):
        return None
    out = []
    for raw in doc["files"]:  # type: ignore[attr-defined]
        if not (isinstance(raw, list) and len(raw) == 3 and type(raw[0]) is str):
            return None
        path, kind, hunks = raw
        if kind not in _KINDS or not isinstance(hunks, list):
            return None
        converted = [_hunk(h) for h in hunks]
        if any(h is None for h in converted):
            return None
        out.append(FileDiff(path, kind, tuple(converted)))  # type: ignore[arg-type]
    paths = [f.path for f in out]
    if not out or len(set(paths)) != len(paths):
        return None
    return tuple(out)
