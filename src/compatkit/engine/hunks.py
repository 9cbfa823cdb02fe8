"""Hunk matching and series application in memory (pure: bytes in, bytes out).

Context must match exactly; when line numbers are off, the whole file is searched, nearest
position first, and the offset is reported. There is no fuzz. git's anchoring holds: a hunk
without trailing context matches only at the end of the file, one whose old side starts at
line 0 or 1 only at its start (``Hunk.match_end``, ``Hunk.match_beginning``). A file's several
sections apply in order; a rename or a copy reads its source's bytes. Every line keeps its own line
ending; added lines take the file's dominant one, so a CRLF file stays CRLF. An exact hunk
(one that creates a file, or changes line endings) is matched and written with the patch's
own line endings instead (docs/patchset-format.md, "Line endings").

>>> from compatkit.model.diff import parse_diff
>>> (fd,) = parse_diff("--- a/m.py\\n+++ b/m.py\\n@@ -1 +1 @@\\n-a\\n+b\\n", "p")
>>> apply_file(b"a\\r\\n", fd).data
b'b\\r\\n'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from compatkit.engine.lines import Cursor, Text, encoded
from compatkit.errors import CompatkitError
from compatkit.model.diff import FileDiff, Hunk
from compatkit.model.paths import shown
from compatkit.value import Value


class HunkMismatch(CompatkitError):
    def __init__(self, path: str, hunk_no: int, reason: str) -> None:
        super().__init__(f"{shown(path)}: hunk #{hunk_no} {reason}")
        self.path, self.hunk_no, self.reason = path, hunk_no, reason


class SeriesConflict(CompatkitError):
    def __init__(self, patch_id: str, mismatch: HunkMismatch) -> None:
        super().__init__(f"{patch_id} does not apply: {mismatch.message}")
        self.patch_id, self.mismatch = patch_id, mismatch


class FileResult(Value):
    __slots__ = ("data", "offsets")

    def __init__(self, data: bytes | None, offsets: tuple[int, ...]) -> None:
        self.data = data  # None: the file is deleted
        self.offsets = offsets


class SeriesResult(Value):
    __slots__ = ("contents", "offsets", "touched_by", "modes", "origins")
    __hash__ = None  # type: ignore[assignment]  # mutable

    def __init__(
        self,
        contents: dict[str, bytes | None],
        offsets: dict[str, dict[str, tuple[int, ...]]] | None = None,
        touched_by: dict[str, list[str]] | None = None,
    ) -> None:
        self.contents = contents
        self.offsets: dict[str, dict[str, tuple[int, ...]]] = {} if offsets is None else offsets
        self.touched_by: dict[str, list[str]] = {} if touched_by is None else touched_by
        self.modes: dict[str, int] = {}  # permission bits a section sets (new mode, 100755)
        self.origins: dict[str, str] = {}  # a renamed or copied file: its source's path


def _matches(cur: Cursor, pos: int, hunk: Hunk, old: list[bytes]) -> bool:
    end = pos + len(old)
    if pos < cur.floor or end > len(cur):
        return False
    f, at = cur.f, pos + cur.shift
    if any(f.text(at + i) != text for i, text in enumerate(old)):
        return False
    if hunk.exact and any(f.eol(at + i) != encoded(e) for i, e in enumerate(hunk.old_eols) if e):
        return False
    at_eof = end == len(cur)
    if hunk.old_no_eol:
        return at_eof and bool(old) and f.eol(len(f) - 1) == b""
    # A hunk that does not say "no newline" cannot end on a line that lacks one.
    return not (at_eof and old and f.eol(len(f) - 1) == b"")


def _find(cur: Cursor, hunk: Hunk, expected: int) -> int | None:
    """Where the hunk's old lines are: at ``expected`` if they are there, else the nearest
    match (after, then before, at each distance), never before the cursor's ``floor``.

    The search is linear in the file: a rolling hash finds every position whose next lines
    hold the hunk's old text, and only those are compared (a position-by-position scan was
    quadratic: 30,000 identical lines took 25-50 s to find no match).
    """
    old = [encoded(text) for text in hunk.old_lines]
    if hunk.match_beginning or hunk.match_end:  # git's anchoring: one place only
        at = 0 if hunk.match_beginning else len(cur) - len(old)
        if hunk.match_end and at + len(old) != len(cur):
            return None  # a hunk anchored at both ends must cover the whole file
        return at if _matches(cur, at, hunk, old) else None
    if not old:
        return expected if cur.floor <= expected <= len(cur) else None
    if _matches(cur, expected, hunk, old):
        return expected
    starts = [p - cur.shift for p in _window_starts(cur.f, cur.done, old)]
    ranked = sorted(starts, key=lambda p: (abs(p - expected), p < expected))
    return next((p for p in ranked if _matches(cur, p, hunk, old)), None)


_MOD = (1 << 61) - 1
_BASE = 1_000_003


def _window_starts(f: Text, first: int, old: list[bytes]) -> list[int]:
    """Every line i from ``first`` on whose window of ``len(old)`` lines hashes like ``old``
    (Rabin-Karp over line ids; the caller compares the candidates it picks, so collisions
    cost one comparison). A line is looked up with its ending: each old line is known with
    every ending it may have."""
    k, n = len(old), len(f) - first
    if k > n:
        return []
    ids: dict[bytes, int] = {}
    want = []
    for line in old:
        known = ids.setdefault(line, len(ids) + 1)
        ids.setdefault(line + b"\n", known)
        ids.setdefault(line + b"\r\n", known)
        want.append(known)
    data, starts = f.data, f.starts
    seq = [ids.get(data[starts[i] : starts[i + 1]], 0) for i in range(first, len(f))]
    target = window = 0
    for a, b in zip(want, seq[:k], strict=True):
        target = (target * _BASE + a) % _MOD
        window = (window * _BASE + b) % _MOD
    top = pow(_BASE, k - 1, _MOD)
    found = []
    for i in range(n - k + 1):
        if window == target:
            found.append(first + i)
        if i + k < n:
            window = ((window - seq[i] * top) * _BASE + seq[i + k]) % _MOD
    return found


def _new_region(cur: Cursor, pos: int, hunk: Hunk, eol: bytes) -> list[bytes]:
    region: list[tuple[bytes, bytes]] = []
    cursor = pos + cur.shift  # in the original
    for (kind, text), own in zip(hunk.lines, hunk.eols, strict=True):
        if kind == " ":
            region.append((encoded(text), cur.f.eol(cursor)))
            cursor += 1
        elif kind == "-":
            cursor += 1
        else:
            region.append((encoded(text), encoded(own) or eol if hunk.exact else eol))
    at_eof = cursor == len(cur.f)
    if region and at_eof:
        last_text, last_eol = region[-1]
        if hunk.new_no_eol:
            region[-1] = (last_text, b"")
        elif last_eol == b"":
            region[-1] = (last_text, eol)
    return [text + end for text, end in region]


def _apply_hunks(data: bytes, fd: FileDiff) -> tuple[bytes, tuple[int, ...]]:
    cur = Cursor(Text(data))
    eol = cur.f.dominant_eol()
    delta = 0
    offsets: list[int] = []
    for no, hunk in enumerate(fd.hunks, 1):
        stated = (hunk.old_start - 1 if hunk.old_len else hunk.old_start) + delta
        pos = _find(cur, hunk, stated + (offsets[-1] if offsets else 0))
        if pos is None:
            raise HunkMismatch(fd.path, no, f"(line {hunk.old_start}) does not match")
        offsets.append(pos - stated)
        region = _new_region(cur, pos, hunk, eol)
        old = len(hunk.old_lines)
        cur.replace(pos, old, region)
        delta += len(region) - old
    return cur.result(), tuple(offsets)


def apply_file(data: bytes | None, fd: FileDiff) -> FileResult:
    """Apply one file's hunks to ``data`` (None: the file does not exist)."""
    if fd.kind == "create":
        if data is not None:
            raise HunkMismatch(fd.path, 1, "creates a file that already exists")
        return FileResult(*_apply_hunks(b"", fd))
    if data is None:
        raise HunkMismatch(fd.source or fd.path, 1, "targets a file that does not exist")
    new, offsets = _apply_hunks(data, fd)
    if fd.kind == "delete":
        if new:
            raise HunkMismatch(fd.path, 1, "deletes a file whose content differs")
        return FileResult(None, offsets)
    return FileResult(new, offsets)


def apply_series(
    files: Mapping[str, bytes | None],
    patches: Sequence[tuple[str, Sequence[FileDiff]]],
    reverse: bool = False,
) -> SeriesResult:
    """Apply (or, with ``reverse``, un-apply in reverse order) a series of patches in memory.

    ``files`` maps every path the series touches to its current bytes (None: absent).
    Raises :class:`SeriesConflict` naming the first patch that does not apply.
    """
    result = SeriesResult(dict(files))
    ordered = list(reversed(patches)) if reverse else list(patches)
    for patch_id, diffs in ordered:
        per_patch: dict[str, tuple[int, ...]] = {}
        for fd in reversed(diffs) if reverse else diffs:  # a file's sections: in order
            fd = fd.reversed() if reverse else fd
            try:
                written = apply_section(result.contents, fd)
            except HunkMismatch as exc:
                if not reverse and _section_applies(result.contents, fd.reversed()):
                    why = f"{exc.reason}; it looks already applied (its reverse applies)"
                    exc = HunkMismatch(exc.path, exc.hunk_no, why)
                raise SeriesConflict(patch_id, exc) from None
            for path, (data, offsets) in written.items():
                result.contents[path] = data
                per_patch[path] = per_patch.get(path, ()) + offsets
                touched = result.touched_by.setdefault(path, [])
                if patch_id not in touched:
                    touched.append(patch_id)
            _note_mode(result, fd)
        result.offsets[patch_id] = per_patch
    return result


def apply_section(
    contents: Mapping[str, bytes | None], fd: FileDiff
) -> dict[str, tuple[bytes | None, tuple[int, ...]]]:
    """What one file section writes: each path's new bytes (None: deleted) and offsets."""
    if fd.source is None:
        outcome = apply_file(contents.get(fd.path), fd)
        return {fd.path: (outcome.data, outcome.offsets)}
    source = contents.get(fd.source)
    if fd.kind == "uncopy":  # a copy reversed: the copy goes if it is what the copy made
        back = apply_file(contents.get(fd.path), FileDiff(fd.path, "modify", fd.hunks))
        if back.data != source:
            raise HunkMismatch(fd.path, 1, f"is not a copy of {shown(fd.source)}")
        return {fd.source: (source, ()), fd.path: (None, back.offsets)}
    if contents.get(fd.path) is not None:
        raise HunkMismatch(fd.path, 1, f"{fd.kind}s onto a file that already exists")
    outcome = apply_file(source, fd)
    left = None if fd.kind == "rename" else source
    return {fd.source: (left, ()), fd.path: (outcome.data, outcome.offsets)}


def _note_mode(result: SeriesResult, fd: FileDiff) -> None:
    """Which permission bits the section leaves its file with (when it sets them)."""
    if fd.source is not None:
        origin = result.origins.pop(fd.source, fd.source)
        if fd.kind == "uncopy":
            result.modes.pop(fd.path, None)
            return
        if fd.kind == "rename" and fd.source in result.modes:
            result.modes[fd.path] = result.modes.pop(fd.source)
        elif fd.source in result.modes:
            result.modes[fd.path] = result.modes[fd.source]
        if fd.kind == "copy":
            result.origins[fd.source] = origin
        result.origins[fd.path] = origin
    if fd.new_mode is not None:
        result.modes[fd.path] = fd.new_mode
    elif fd.kind == "create":  # git's new file is 0644 whatever the one it replaces was
        result.modes[fd.path] = 0o644
    elif fd.kind == "delete":
        result.modes.pop(fd.path, None)


def _section_applies(contents: Mapping[str, bytes | None], fd: FileDiff) -> bool:
    """Whether ``fd`` applies to ``contents`` (files whose new side is already there)."""
    try:
        apply_section(contents, fd)
    except HunkMismatch:
        return False
    return True
