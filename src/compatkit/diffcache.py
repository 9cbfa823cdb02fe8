"""Parsed diffs from compatkit's cache, so a warm ``apply`` / ``status`` imports no unidiff.

Importing unidiff (and the ``typing`` it pulls in) and parsing with it is a fixed cost of every
command that reads a diff, larger than the work on a small real patchset (benchmark P5). The
parsed :class:`~compatkit.diffparse.FileDiff` tuple is kept as JSON keyed by the SHA-256 of the
diff text, like the TOML cache (:mod:`compatkit.cache`). Only successful parses are cached (an
error is raised, and worded, by the parser every time), and an entry is checked field by field
when read: anything malformed is parsed again, never trusted.

>>> from compatkit.diffparse import parse_diff
>>> files = parse_diff("--- a/p/m.py\\n+++ b/p/m.py\\n@@ -1 +1 @@\\n-x = 1\\n+x = 2\\n", "t")
>>> from_doc(to_doc(files)) == files
True
"""

from __future__ import annotations

from compatkit import cache
from compatkit.diffparse import FileDiff, Hunk, parse_diff

FORMAT = 1
_KINDS = ("modify", "create", "delete")


def parse(text: str, label: str) -> tuple[FileDiff, ...]:
    """:func:`compatkit.diffparse.parse_diff`, from the cache when this exact text was seen."""
    entry = cache.entry("diff", text.encode("utf-8", "surrogatepass"))
    cached = from_doc(cache.load(entry))
    if cached is not None:
        return cached
    files = parse_diff(text, label)
    cache.store(entry, to_doc(files))
    return files


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
                    ]
                    for h in f.hunks
                ],
            ]
            for f in files
        ],
    }


def _ints(values: list[object]) -> bool:
    return all(type(v) is int and v >= 0 for v in values)


def _hunk(raw: object) -> Hunk | None:
    if not (isinstance(raw, list) and len(raw) == 7 and _ints(raw[:4])):
        return None
    lines, old_no_eol, new_no_eol = raw[4:]
    if not (isinstance(lines, list) and type(old_no_eol) is bool and type(new_no_eol) is bool):
        return None
    pairs = []
    for line in lines:
        if not (isinstance(line, list) and len(line) == 2 and line[0] in (" ", "-", "+")):
            return None
        if not isinstance(line[1], str):
            return None
        pairs.append((line[0], line[1]))
    a, b, c, d = raw[:4]
    return Hunk(a, b, c, d, tuple(pairs), old_no_eol, new_no_eol)


def from_doc(doc: dict[str, object] | None) -> tuple[FileDiff, ...] | None:
    """The file diffs an entry holds, or None if it is missing or not exactly well formed."""
    if doc is None or doc.get("format") != FORMAT or not isinstance(doc.get("files"), list):
        return None
    out = []
    for raw in doc["files"]:  # type: ignore[attr-defined]
        if not (isinstance(raw, list) and len(raw) == 3 and isinstance(raw[0], str)):
            return None
        path, kind, hunks = raw
        if kind not in _KINDS or not isinstance(hunks, list):
            return None
        converted = [_hunk(h) for h in hunks]
        if any(h is None for h in converted):
            return None
        out.append(FileDiff(path, kind, tuple(converted)))  # type: ignore[arg-type]
    return tuple(out) if out else None
