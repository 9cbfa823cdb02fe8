"""A strict line reader for unified diffs: text → raw file sections, with line numbers (pure).

Modelled on ``git apply``: a hunk holds exactly the lines its ``@@`` header counts, each ending
in a newline (``\\ No newline at end of file`` is the only way to end without one); ``---`` is
followed by ``+++``, both with a path; no hunk stands outside a file; and, stricter than git,
a hunk followed by more hunk lines than it counts is refused instead of cut short (what may
follow a complete hunk is listed in ``_Reader._ends_hunk``: git apply skips it all). Each line
keeps the patch's own line ending. Every refusal is one line: ``LABEL: corrupt patch at line
N: WHAT``, N counted in the patch file.

>>> (f,) = read("--- a/m\\n+++ b/m\\n@@ -1 +1 @@\\n-x\\n+y\\r\\n", "p")
>>> f.old, f.new, f.hunks[0].lines
('a/m', 'b/m', [('-', 'x', '\\n'), ('+', 'y', '\\r\\n')])
>>> try:
...     read("--- a/m\\n+++ b/m\\n@@ -1 +1 @@\\n-x\\n+y", "p")
... except PatchFormatError as exc:
...     print(exc.message)
p: corrupt patch at line 5: the last line has no newline (the patch is cut off)
"""

from __future__ import annotations

import re

from compatkit.errors import PatchFormatError
from compatkit.value import Value

HUNK_HEADER = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
GIT_EXTENDED = (
    "old mode ",
    "new mode ",
    "deleted file mode ",
    "new file mode ",
    "copy from ",
    "copy to ",
    "rename from ",
    "rename to ",
    "rename old ",
    "rename new ",
    "similarity index ",
    "dissimilarity index ",
    "index ",
)
BINARY = ("Binary files ", "GIT binary patch")
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


class RawHunk(Value):
    __slots__ = ("line_no", "old_start", "old_len", "new_start", "new_len", "lines", "no_eol")

    def __init__(self, line_no: int, counts: tuple[int, int, int, int]) -> None:
        self.line_no = line_no
        self.old_start, self.old_len, self.new_start, self.new_len = counts
        self.lines: list[tuple[str, str, str]] = []  # (kind, text, eol): eol "\n", "\r\n", ""
        self.no_eol = ""  # the sides whose last line has no newline: "", "-", "+" or "-+"


class RawFile(Value):
    __slots__ = ("line_no", "git", "extended", "binary", "old", "new", "stamps", "hunks")

    def __init__(self, line_no: int, git: str | None = None) -> None:
        self.line_no = line_no
        self.git = git  # what follows "diff --git ", if the section starts with it
        self.extended: list[str] = []  # git's extended header lines
        self.binary = False
        self.old: str | None = None  # the "---" and "+++" paths (None: no such line)
        self.new: str | None = None
        self.stamps = ("", "")  # their timestamps (after a tab), as written
        self.hunks: list[RawHunk] = []


def unquote(name: str) -> str:
    """A path as git C-quotes it (``"a/t\\303\\251st.py"``) → the path; others unchanged."""
    if len(name) < 2 or name[0] != '"' or name[-1] != '"':
        return name
    out, i, body = bytearray(), 0, name[1:-1]
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 == len(body):
            out += ch.encode("utf-8", "surrogateescape")
            i += 1
        elif body[i + 1 : i + 4].isdigit() and len(body[i + 1 : i + 4]) == 3:
            out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
            i += 4
        else:
            out.append(_ESCAPES.get(body[i + 1], ord(body[i + 1]) & 0xFF))
            i += 2
    return out.decode("utf-8", "surrogateescape")


class _Reader:
    def __init__(self, text: str, label: str, first_line: int) -> None:
        parts = text.split("\n")
        self.open_end = parts[-1] != ""  # the last line has no newline
        self.lines = parts if self.open_end else parts[:-1]
        self.label, self.first = label, first_line
        self.i = 0

    def fail(self, index: int, what: str) -> PatchFormatError:
        where = f"{self.label}: corrupt patch at line {self.first + index}"
        return PatchFormatError(f"{where}: {what}")

    def head(self, index: int) -> str:
        """Line ``index`` as a header line: a CRLF patch's CR dropped."""
        line = self.lines[index]
        return line[:-1] if line.endswith("\r") else line

    def more(self) -> bool:
        return self.i < len(self.lines)

    def files(self) -> list[RawFile]:
        out: list[RawFile] = []
        while self.more():
            line = self.head(self.i)
            if line.startswith("diff --git "):
                out.append(self.git_file(line[len("diff --git ") :]))
            elif line.startswith(("--- ", "+++ ", "@@ ")) or line in ("+++", "@@"):
                out.append(self.plain_file(RawFile(self.first + self.i)))
            elif line.startswith(BINARY):
                out.append(RawFile(self.first + self.i))
                out[-1].binary = True
                self.i += 1
            else:
                self.i += 1  # commentary: a mail, a diffstat, "diff -ruN a b", "Index:"
        return out

    def git_file(self, names: str) -> RawFile:
        raw = RawFile(self.first + self.i, names)
        self.i += 1
        while self.more() and self.head(self.i).startswith(GIT_EXTENDED + BINARY):
            line = self.head(self.i)
            raw.binary = raw.binary or line.startswith(BINARY)
            raw.extended.append(line)
            self.i += 1
            if line.startswith("GIT binary patch"):
                return raw  # refused later; its base85 lines are commentary here
        if self.more() and self.head(self.i).startswith(("--- ", "+++ ", "@@ ")):
            return self.plain_file(raw)
        return raw

    def plain_file(self, raw: RawFile) -> RawFile:
        line = self.head(self.i)
        if line.startswith("@@"):
            raise self.fail(self.i, "hunk outside any file (no '---' and '+++' lines before it)")
        if not line.startswith("--- "):
            raise self.fail(self.i, "'+++' line without a '---' line before it")
        after = self.head(self.i + 1) if self.i + 1 < len(self.lines) else ""
        if not (after.startswith("+++ ") or after == "+++"):
            raise self.fail(self.i + 1, "'---' line not followed by a '+++' line")
        raw.old, old_stamp = self.path(self.i, line[4:])
        raw.new, new_stamp = self.path(self.i + 1, after[4:])
        raw.stamps = (old_stamp, new_stamp)
        self.i += 2
        while self.more() and self.head(self.i).startswith("@@"):
            raw.hunks.append(self.hunk())
        return raw

    def path(self, index: int, text: str) -> tuple[str, str]:
        name, _, stamp = text.partition("\t")
        name = unquote(name)
        if not name.strip():
            raise self.fail(index, f"'{self.head(index)[:3]}' line without a path")
        return name, stamp.strip()

    def hunk(self) -> RawHunk:
        match = HUNK_HEADER.match(self.head(self.i))
        if not match:
            raise self.fail(self.i, "malformed hunk header (expected '@@ -A,B +C,D @@')")
        a, b, c, d = (int(g) if g is not None else 1 for g in match.groups())
        if b == 0 and d == 0:
            raise self.fail(self.i, "empty hunk (its header counts no lines)")
        hunk = RawHunk(self.first + self.i, (a, b, c, d))
        self.i += 1
        self.body(hunk, b, d)
        return hunk

    def body(self, hunk: RawHunk, old: int, new: int) -> None:
        total = (old, new)
        while old or new or (self.more() and self.lines[self.i].startswith("\\")):
            if not self.more():
                raise self.fail(self.i, f"the patch ends inside a hunk ({_left(total, old, new)})")
            line = self.lines[self.i]
            if line.startswith("\\"):
                self.marker(hunk)
                continue
            if self.i + 1 == len(self.lines) and self.open_end:
                raise self.fail(self.i, "the last line has no newline (the patch is cut off)")
            kind = line[:1] if line[:1] in ("-", "+", " ") else " " if line in ("", "\r") else ""
            if not kind:
                raise self.fail(self.i, f"hunk ends early ({_left(total, old, new)})")
            old, new = old - (kind != "+"), new - (kind != "-")
            if old < 0 or new < 0:
                raise self.fail(self.i, "hunk has more lines than its header counts")
            if any(side in hunk.no_eol for side in kind.replace(" ", "-+")):
                raise self.fail(self.i, "a line after '\\ No newline at end of file' on its side")
            text, eol = (line[1:-1], "\r\n") if line.endswith("\r") else (line[1:], "\n")
            hunk.lines.append((kind, text, eol))
            self.i += 1
        if self.more() and self.head(self.i)[:1] in ("+", "-", " ") and not self._ends_hunk():
            raise self.fail(self.i, "hunk has more lines than its header counts")

    def _ends_hunk(self) -> bool:
        """Whether the line after a complete hunk starts what git apply skips: the next
        file's ``---``, a blank line, or a mail's signature (``-- ``, or ``--`` once an editor
        or a whitespace hook stripped its space, then the version line or nothing)."""
        line = self.head(self.i)
        if line.startswith("--- ") or line == "-- " or not line.strip():
            return True
        if line != "--":
            return False
        after = self.head(self.i + 1) if self.i + 1 < len(self.lines) else ""
        return after[:1] not in ("+", "-", " ", "\\", "@")

    def marker(self, hunk: RawHunk) -> None:
        if not hunk.lines or self.lines[self.i - 1].startswith("\\"):
            raise self.fail(self.i, "'\\ No newline at end of file' without a line before it")
        kind, text, _ = hunk.lines[-1]
        hunk.lines[-1] = (kind, text, "")
        hunk.no_eol += {" ": "-+", "-": "-", "+": "+"}[kind]
        self.i += 1


_STAMP = re.compile(r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.\d+)?(?: ([+-])(\d\d)(\d\d))?")


def is_epoch(stamp: str) -> bool:
    """Whether a ``diff -u`` date is the epoch (``diff -N``'s date for an absent file), in any
    time zone: ``1970-01-01 00:00:00.000000000 +0000``, ``1969-12-31 19:00:00 -0500``."""
    match = _STAMP.fullmatch(stamp)
    if not match:
        return False
    y, mo, d, h, mi, s, sign, zh, zm = match.groups()
    from datetime import datetime, timedelta, timezone

    try:
        offset = timedelta(hours=int(zh or 0), minutes=int(zm or 0)) * (-1 if sign == "-" else 1)
        when = datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), tzinfo=timezone(offset))
        return when.timestamp() == 0
    except (ValueError, OverflowError):
        return False


def _left(total: tuple[int, int], old: int, new: int) -> str:
    return f"{total[0] - old} of {total[0]} old and {total[1] - new} of {total[1]} new lines"


def read(text: str, label: str, first_line: int = 1) -> list[RawFile]:
    """Every file section of ``text``; ``first_line``: the patch file line ``text`` starts at."""
    return _Reader(text, label, first_line).files()
