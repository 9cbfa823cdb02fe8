"""Unified diffs → a small immutable model, read as strictly as ``git apply`` reads them (pure).

One reader turns each file section of the text into a :class:`FileDiff` of :class:`Hunk`\\ s that
carry exactly what the engine needs. Modelled on ``git apply``: a hunk holds exactly the lines its
``@@`` header counts, each ending in a newline (``\\ No newline at end of file`` is the only way
to end without one); ``---`` is followed by ``+++``, both with a path; no hunk stands outside a
file; and, stricter than git, a hunk followed by more hunk lines than it counts is refused
instead of cut short (what may follow a complete hunk is listed in ``_Reader._ends_hunk``: git
apply skips it all). Each line keeps the patch's own line ending. What each file diff does is
decided from ``/dev/null``, git's ``new file mode`` and ``diff -N``'s epoch dates (in any zone
notation); git's renames, copies and modes (100644, 100755) are read, binary patches, symlinks
and submodules refused. git's checks hold: ``---``/``+++`` names against the ``diff --git``
line, context-only hunks, ``-U0`` hunks unless the patch opts in (docs/git-apply.md). Every
refusal is one line; one of the text itself reads ``LABEL: corrupt patch at line N: WHAT``,
N counted in the patch file.

>>> diff = "--- a/pkg/m.py\\n+++ b/pkg/m.py\\n@@ -1 +1 @@\\n-x = 1\\n+x = 2\\r\\n"
>>> [(f.path, f.kind, f.hunks[0].lines, f.hunks[0].eols) for f in parse_diff(diff, "p")]
[('pkg/m.py', 'modify', (('-', 'x = 1'), ('+', 'x = 2')), ('\\n', '\\r\\n'))]
>>> try:
...     parse_diff(diff[:-2], "p")
... except PatchFormatError as exc:
...     print(exc.message)
p: corrupt patch at line 5: the last line has no newline (the patch is cut off)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from compatkit.errors import PatchFormatError
from compatkit.model.paths import shown
from compatkit.value import Value

TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Literal

    FileKind = Literal["modify", "create", "delete", "rename", "copy", "uncopy"]

DEV_NULL = "/dev/null"
# patterns, not compiled ones: re compiles and caches them on the first parse, so a command that
# never reads a diff does not pay for them (start-up time)
_HUNK_HEADER = r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@"
_STAMP = r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.\d+)?(?: ?([+-])(\d\d):?(\d\d))?"
# a date after a path that spaces, not a tab, separate from it (git's diff_timestamp_len)
_SPACED_STAMP = r"(.*?) +(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: ?[+-]\d\d:?\d\d)?)"
_MODES = {"100644": 0o644, "100755": 0o755}
_GIT_EXTENDED = (
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
_BINARY = ("Binary files ", "GIT binary patch")
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


class Hunk(Value):
    __slots__ = (
        "old_start",
        "old_len",
        "new_start",
        "new_len",
        "lines",
        "old_no_eol",
        "new_no_eol",
        "eols",
        "exact",
        "zero",
    )

    def __init__(
        self,
        old_start: int,
        old_len: int,
        new_start: int,
        new_len: int,
        lines: tuple[tuple[str, str], ...],  # (kind, text): kind " ", "-" or "+"; text no EOL
        old_no_eol: bool = False,  # the old side's last line has no newline at end of file
        new_no_eol: bool = False,
        eols: tuple[str, ...] | None = None,  # each line's ending in the patch: "\n", "\r\n", ""
        exact: bool = False,  # match and write line endings as the patch has them
        zero: bool = False,  # from a patch that opts in to context-free hunks (Unidiff-Zero)
    ) -> None:
        self.old_start, self.old_len = old_start, old_len
        self.new_start, self.new_len = new_start, new_len
        self.lines = lines
        self.old_no_eol, self.new_no_eol = old_no_eol, new_no_eol
        self.eols = eols if eols is not None else ("\n",) * len(lines)
        self.exact = exact
        self.zero = zero

    @property
    def context(self) -> tuple[int, int]:
        """Its leading and trailing context lines (git's ``leading`` and ``trailing``)."""
        kinds = [kind for kind, _ in self.lines]
        leading = next((i for i, k in enumerate(kinds) if k != " "), len(kinds))
        trailing = next((i for i, k in enumerate(reversed(kinds)) if k != " "), len(kinds))
        return leading, trailing

    @property
    def match_beginning(self) -> bool:
        """git's rule: a hunk whose old side starts at line 0, or at line 1 outside
        ``--unidiff-zero``, must match at the start of the file."""
        return self.old_start == 0 or (self.old_start == 1 and not self.zero)

    @property
    def match_end(self) -> bool:
        """git's rule: a hunk without trailing context must match at the end of the file
        (outside ``--unidiff-zero``)."""
        return not self.zero and self.context[1] == 0

    @property
    def old_lines(self) -> list[str]:
        return [text for kind, text in self.lines if kind != "+"]

    @property
    def new_lines(self) -> list[str]:
        return [text for kind, text in self.lines if kind != "-"]

    @property
    def old_eols(self) -> list[str]:
        return [eol for (kind, _), eol in zip(self.lines, self.eols, strict=True) if kind != "+"]

    def reversed(self) -> Hunk:
        swap = {" ": " ", "-": "+", "+": "-"}
        return Hunk(
            self.new_start,
            self.new_len,
            self.old_start,
            self.old_len,
            tuple((swap[k], t) for k, t in self.lines),
            self.new_no_eol,
            self.old_no_eol,
            self.eols,
            self.exact,
            self.zero,
        )


class FileDiff(Value):
    """One file section. ``rename`` and ``copy`` read ``source`` and write ``path``; a
    rename also deletes ``source``. ``uncopy`` is a copy reversed: ``path`` deleted when it
    holds what the copy made of ``source``. ``new_mode``: the permission bits the section
    sets (git's ``new mode`` or ``new file mode`` 100755; None: the file keeps its own)."""

    __slots__ = ("path", "kind", "hunks", "source", "old_mode", "new_mode", "alias")

    def __init__(
        self,
        path: str,
        kind: FileKind,
        hunks: tuple[Hunk, ...],
        source: str | None = None,
        old_mode: int | None = None,
        new_mode: int | None = None,
        alias: str | None = None,
    ) -> None:
        self.path = path  # relative to the site-packages root, "/"-separated, no a/ b/ prefix
        self.kind: FileKind = kind
        self.hunks = hunks
        self.source = source  # rename, copy, uncopy: the other path
        self.old_mode, self.new_mode = old_mode, new_mode
        # a traditional edit whose ---/+++ names differ: ``path`` is git's choice, ``alias``
        # the other name, patched instead when only it is in the distribution (bind_names)
        self.alias = alias

    @property
    def paths(self) -> tuple[str, ...]:
        """Every path the section reads or writes."""
        return (self.path,) if self.source is None else (self.source, self.path)

    def reversed(self) -> FileDiff:
        flip: dict[str, FileKind] = {
            "modify": "modify",
            "create": "delete",
            "delete": "create",
            "rename": "rename",
            "copy": "uncopy",
            "uncopy": "copy",
        }
        kind = flip[self.kind]
        path, source = self.path, self.source
        if kind == "rename":
            assert source is not None
            path, source = source, path
        hunks = tuple(h.reversed() for h in self.hunks)
        return FileDiff(path, kind, hunks, source, self.new_mode, self.old_mode, self.alias)

    def bound(self, exists: Callable[[str], bool]) -> FileDiff:
        """This section on the name the distribution has: its ``alias`` when only that
        exists there, else itself (git's choice: ``path``)."""
        if self.alias is None or exists(self.path) or not exists(self.alias):
            return self
        return FileDiff(self.alias, self.kind, self.hunks, None, self.old_mode, self.new_mode)

    @property
    def added(self) -> int:
        return sum(1 for h in self.hunks for k, _ in h.lines if k == "+")

    @property
    def removed(self) -> int:
        return sum(1 for h in self.hunks for k, _ in h.lines if k == "-")


def parse_diff(
    text: str, label: str, first_line: int = 1, unidiff_zero: bool = False
) -> tuple[FileDiff, ...]:
    """Parse ``git diff``, ``git format-patch`` or ``diff -u`` text into file diffs.

    ``first_line`` is the line of the patch file ``text`` starts at (for messages). Anything
    malformed, truncated or not supported raises :class:`PatchFormatError` with one line.
    ``unidiff_zero``: hunks without context are taken as ``git apply --unidiff-zero`` takes
    them (at their stated line, no end anchoring); otherwise such a hunk is refused. A file
    may have several sections: they apply in order, as git applies them.
    """
    files = _Reader(text, label, first_line, unidiff_zero).files()
    if not files:
        raise PatchFormatError(f"{label}: contains no diff")
    return tuple(files)


def changes_eol(lines: Sequence[tuple[str, str]], eols: Sequence[str]) -> bool:
    """Whether a hunk changes line endings: in one run of ``-`` and ``+`` lines, a line is
    removed with one ending ("\\n" or "\\r\\n") and added back with the other."""
    if "\r\n" not in eols:
        return False  # one ending throughout (or none): nothing to change
    runs: list[tuple[set[tuple[str, str]], set[tuple[str, str]]]] = [(set(), set())]
    for (kind, text), eol in zip(lines, eols, strict=True):
        if kind == " ":
            runs.append((set(), set()))
        elif eol:  # "": no newline at all, which the no-eol flags express
            runs[-1][kind == "+"].add((text, eol))
    for removed, added in runs:
        if {t for t, _ in removed - added} & {t for t, _ in added - removed}:
            return True
    return False


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


def is_epoch(stamp: str) -> bool:
    """Whether a ``diff -u`` date is the epoch (``diff -N``'s date for an absent file), in any
    time zone: ``1970-01-01 00:00:00.000000000 +0000``, ``1969-12-31 19:00:00 -0500``."""
    match = re.fullmatch(_STAMP, stamp)
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


class _Header:
    """What a file section says before its hunks: its ``diff --git`` names, git's extended
    header lines, its ``---`` and ``+++`` paths and their timestamps."""

    __slots__ = ("line_no", "git", "extended", "binary", "old", "new", "stamps", "names_line")

    def __init__(self, line_no: int, git: str | None = None) -> None:
        self.line_no = line_no
        self.git = git  # what follows "diff --git ", if the section starts with it
        self.extended: list[str] = []  # git's extended header lines
        self.binary = False
        self.old: str | None = None  # the "---" and "+++" paths (None: no such line)
        self.new: str | None = None
        self.stamps = ("", "")  # their timestamps (after a tab), as written
        self.names_line = line_no  # the line of the "---" line


class _Reader:
    def __init__(self, text: str, label: str, first_line: int, zero: bool = False) -> None:
        self.zero = zero
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

    def files(self) -> list[FileDiff]:
        """Every file section, read to the end of the text first (so a corrupt patch is called
        corrupt before a section of it is refused as unsupported, as git apply reads), then
        each made a file diff."""
        out: list[tuple[_Header, list[Hunk]]] = []
        while self.more():
            line = self.head(self.i)
            if line.startswith("diff --git "):
                out.append(self.git_file(line[len("diff --git ") :]))
            elif line.startswith(("--- ", "+++ ", "@@ ")) or line in ("+++", "@@"):
                out.append(self.plain_file(_Header(self.first + self.i)))
            elif line.startswith(_BINARY):
                header = _Header(self.first + self.i)
                header.binary = True
                self.i += 1
                out.append((header, []))
            else:
                self.i += 1  # commentary: a mail, a diffstat, "diff -ruN a b", "Index:"
        return [self.file_diff(header, hunks) for header, hunks in out]

    def git_file(self, names: str) -> tuple[_Header, list[Hunk]]:
        header = _Header(self.first + self.i, names)
        self.i += 1
        while self.more() and self.head(self.i).startswith(_GIT_EXTENDED + _BINARY):
            line = self.head(self.i)
            header.binary = header.binary or line.startswith(_BINARY)
            header.extended.append(line)
            self.i += 1
            if line.startswith("GIT binary patch"):
                return header, []  # refused; its base85 lines are commentary here
        if self.more() and self.head(self.i).startswith(("--- ", "+++ ", "@@ ")):
            return self.plain_file(header)
        return header, []

    def plain_file(self, header: _Header) -> tuple[_Header, list[Hunk]]:
        line = self.head(self.i)
        if line.startswith("@@"):
            raise self.fail(self.i, "hunk outside any file (no '---' and '+++' lines before it)")
        if not line.startswith("--- "):
            raise self.fail(self.i, "'+++' line without a '---' line before it")
        after = self.head(self.i + 1) if self.i + 1 < len(self.lines) else ""
        if not (after.startswith("+++ ") or after == "+++"):
            raise self.fail(self.i + 1, "'---' line not followed by a '+++' line")
        header.old, old_stamp = self.path(self.i, line[4:])
        header.new, new_stamp = self.path(self.i + 1, after[4:])
        header.stamps = (old_stamp, new_stamp)
        header.names_line = self.first + self.i
        self.i += 2
        hunks = []
        while self.more() and self.head(self.i).startswith("@@"):
            hunks.append(self.hunk())
        return header, hunks

    def path(self, index: int, text: str) -> tuple[str, str]:
        name, _, stamp = text.partition("\t")
        spaced = None if stamp else re.fullmatch(_SPACED_STAMP, name)
        if spaced:  # "--- pkg/m.py  2024-01-01 00:00:00 +0000": spaces, not a tab
            name, stamp = spaced.groups()
        name = unquote(name)
        if not name.strip():
            raise self.fail(index, f"'{self.head(index)[:3]}' line without a path")
        return name, stamp.strip()

    def hunk(self) -> Hunk:
        match = re.match(_HUNK_HEADER, self.head(self.i))
        if not match:
            raise self.fail(self.i, "malformed hunk header (expected '@@ -A,B +C,D @@')")
        a, b, c, d = (int(g) if g is not None else 1 for g in match.groups())
        if b == 0 and d == 0:
            raise self.fail(self.i, "empty hunk (its header counts no lines)")
        start = self.i
        self.i += 1
        body, eols, no_eol = self.body(b, d)
        if all(kind == " " for kind, _ in body):  # git: "corrupt patch" (parse_fragment)
            raise self.fail(start, "hunk has only context lines (it changes nothing)")
        exact = changes_eol(body, eols)
        old_no_eol, new_no_eol = "-" in no_eol, "+" in no_eol
        return Hunk(a, b, c, d, tuple(body), old_no_eol, new_no_eol, tuple(eols), exact, self.zero)

    def body(self, old: int, new: int) -> tuple[list[tuple[str, str]], list[str], str]:
        """The ``old`` and ``new`` lines a hunk header counts: (kind, text) pairs, each line's
        ending ("\\n", "\\r\\n", or "" for no newline at end of file), and the sides whose last
        line has no newline ("", "-", "+" or "-+")."""
        body: list[tuple[str, str]] = []
        eols: list[str] = []
        no_eol = ""
        total = (old, new)
        while old or new or (self.more() and self.lines[self.i].startswith("\\")):
            if not self.more():
                raise self.fail(self.i, f"the patch ends inside a hunk ({_left(total, old, new)})")
            line = self.lines[self.i]
            if line.startswith("\\"):
                if not body or self.lines[self.i - 1].startswith("\\"):
                    what = "'\\ No newline at end of file' without a line before it"
                    raise self.fail(self.i, what)
                eols[-1] = ""
                no_eol += {" ": "-+", "-": "-", "+": "+"}[body[-1][0]]
                self.i += 1
                continue
            if self.i + 1 == len(self.lines) and self.open_end:
                raise self.fail(self.i, "the last line has no newline (the patch is cut off)")
            kind = line[:1] if line[:1] in ("-", "+", " ") else " " if line in ("", "\r") else ""
            if not kind:
                raise self.fail(self.i, f"hunk ends early ({_left(total, old, new)})")
            old, new = old - (kind != "+"), new - (kind != "-")
            if old < 0 or new < 0:
                raise self.fail(self.i, "hunk has more lines than its header counts")
            if no_eol and any(side in no_eol for side in kind.replace(" ", "-+")):
                raise self.fail(self.i, "a line after '\\ No newline at end of file' on its side")
            text, eol = (line[1:-1], "\r\n") if line.endswith("\r") else (line[1:], "\n")
            body.append((kind, text))
            eols.append(eol)
            self.i += 1
        if self.more() and self.head(self.i)[:1] in ("+", "-", " ") and not self._ends_hunk():
            raise self.fail(self.i, "hunk has more lines than its header counts")
        return body, eols, no_eol

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

    def file_diff(self, header: _Header, hunks: list[Hunk]) -> FileDiff:
        """A section read as a file diff, or its refusal."""
        where = f"{self.label}: line {header.line_no}"
        _refuse_unsupported(header, where)
        ext = _Extended(header.extended, where)
        if header.git is not None:
            source, target = _git_sides(header, ext, self.label)
        else:
            source, target = _strip_prefixes(*_sides(header, where))
        where = f"{self.label}: {shown(target if target != DEV_NULL else source)}"
        kind = ext.moved or _kind(header, ext, hunks, source, target, where)
        alias = None
        hint = _first_folder_hint(source, target)  # a diff made one folder up: refused
        if kind == "modify" and source != target and header.git is None and not hint:
            source, alias = _traditional_names(source, target)
            target, where = source, f"{self.label}: {shown(source)}"
        if kind == "modify" and source != target:
            raise PatchFormatError(
                f"{where}: source and target paths differ ({shown(source)} vs {shown(target)})"
                + hint
            )
        bare = kind == "modify" or (kind in ("create", "delete") and header.old is not None)
        if bare and not hunks and not ext.metadata:
            raise PatchFormatError(f"{where}: file header without any hunk")
        if kind == "create":
            for h in hunks:
                h.exact = True  # a new file is written exactly as the patch has it
        elif kind != "delete":
            _refuse_contextless(hunks, where)
        path = source if kind == "delete" else target
        moved_from = source if kind in ("rename", "copy") else None
        return FileDiff(path, kind, tuple(hunks), moved_from, ext.old_mode, ext.new_mode, alias)


class _Extended:
    """What git's extended header lines say: modes, new or deleted, renamed or copied."""

    __slots__ = ("old_mode", "new_mode", "new", "deleted", "moved", "names", "metadata")

    def __init__(self, lines: list[str], where: str) -> None:
        self.old_mode: int | None = None
        self.new_mode: int | None = None
        self.new = self.deleted = False
        self.moved: FileKind | None = None  # "rename" or "copy"
        self.names: list[str] = ["", ""]  # rename/copy from, to
        found: list[str] = []  # new, deleted, rename, copy: at most one (git)
        for line in lines:
            head, _, value = line.rpartition(" ")
            if head in ("old mode", "deleted file mode"):
                self.old_mode = _mode(value, where)
            if head == "new mode" or (head == "new file mode" and value != "100644"):
                self.new_mode = _mode(value, where)  # a new file is 0644 unless it says not
            if head in ("new file mode", "deleted file mode"):
                found.append(head)
                self.new, self.deleted = self.new or head[0] == "n", self.deleted or head[0] == "d"
            for verb in ("rename", "copy"):
                for side, word in enumerate(("from ", "to ", "old ", "new ")):
                    if line.startswith(f"{verb} {word}"):
                        self.names[side % 2] = unquote(line[len(verb) + 1 + len(word) :])
                        if side % 2 == 0:
                            found.append(verb)
                            self.moved = "rename" if verb == "rename" else "copy"
        if len(found) > 1:
            raise PatchFormatError(f"{where}: inconsistent header lines ({', '.join(found)})")
        if self.moved and not all(self.names):
            raise PatchFormatError(f"{where}: {self.moved} header without both names")
        if self.new_mode is not None and self.new_mode == self.old_mode:
            self.new_mode = None  # nothing to change
        self.metadata = self.new_mode is not None or self.moved is not None


def _mode(value: str, where: str) -> int:
    if value in _MODES:
        return _MODES[value]
    if value == "120000":
        raise PatchFormatError(f"{where}: symlinks (mode 120000) are not supported")
    if value == "160000":
        raise PatchFormatError(f"{where}: submodules (mode 160000) are not supported")
    raise PatchFormatError(f"{where}: file mode {value} is not supported (100644 or 100755)")


def _refuse_contextless(hunks: list[Hunk], where: str) -> None:
    """A hunk without a single context line whose place git's anchoring does not pin
    (``-U0``) is refused unless the patch opts in: git would take it to the end of the file."""
    for no, h in enumerate(hunks, 1):
        if not h.zero and h.old_start > 1 and all(kind != " " for kind, _ in h.lines):
            raise PatchFormatError(
                f"{where}: hunk #{no} (line {h.old_start}) has no context lines (a -U0 diff), "
                "so nothing pins where it goes; make the diff with context, or add "
                "'Unidiff-Zero: yes' to the patch header to apply it at its stated line "
                "(git apply --unidiff-zero)"
            )


def _git_sides(header: _Header, ext: _Extended, label: str) -> tuple[str, str]:
    """The two paths of a ``diff --git`` section, checked as git checks them: the ``---`` and
    ``+++`` names must be those of the ``diff --git`` line (or of the rename/copy lines),
    each compared without its first folder (git's ``-p1``). Kept from GNU patch: ``---
    /dev/null`` creates (``+++ /dev/null`` deletes) without git's ``new file mode`` line."""
    if ext.moved:  # "rename from X": no a/ prefix
        names: tuple[str, str] | None = ("a/" + ext.names[0], "b/" + ext.names[1])
    else:
        names = _git_names(header)
    old = DEV_NULL if ext.new else names[0] if names else None
    new = DEV_NULL if ext.deleted else names[1] if names else None
    if header.old is None or header.new is None:
        if old is None or new is None:
            where = f"{label}: line {header.line_no}"
            raise PatchFormatError(f"{where}: cannot tell which file the git header names")
        if ext.moved:
            return ext.names[0], ext.names[1]
        return _strip_prefixes(old, new)
    at = f"{label}: corrupt patch at line"
    for side, want, got in (("old", old, header.old), ("new", new, header.new)):
        line = header.names_line + (side == "new")
        if want == DEV_NULL and got != DEV_NULL:
            raise PatchFormatError(
                f"{at} {line}: bad git-diff - expected /dev/null, got {shown(got)}"
            )
        if want is not None and got != DEV_NULL and _p1(want) != _p1(got):
            raise PatchFormatError(f"{at} {line}: bad git-diff - inconsistent {side} filename")
    if ext.moved:
        return ext.names[0], ext.names[1]
    return _strip_prefixes(header.old, header.new)


def _p1(name: str) -> str:
    """``name`` without its first folder, as ``git apply -p1`` reads it."""
    return name.partition("/")[2] or name


def _traditional_names(source: str, target: str) -> tuple[str, str]:
    """An edit's name when its ``---`` and ``+++`` names differ, as git's
    parse_traditional_patch takes it (find_name_traditional): the ``---`` name when the
    ``+++`` one only adds to its end (``X`` / ``X.new``), else the ``+++`` name (``X.orig`` /
    ``X``, ``old/m.py`` / ``new/m.py``); then the other name."""
    if len(source) < len(target) and target.startswith(source):
        return source, target
    return target, source


def _left(total: tuple[int, int], old: int, new: int) -> str:
    return f"{total[0] - old} of {total[0]} old and {total[1] - new} of {total[1]} new lines"


def _strip_prefixes(source: str, target: str) -> tuple[str, str]:
    src_ok = source == DEV_NULL or source.startswith("a/")
    tgt_ok = target == DEV_NULL or target.startswith("b/")
    if src_ok and tgt_ok:
        source = source if source == DEV_NULL else source[2:]
        target = target if target == DEV_NULL else target[2:]
    return source, target


def _refuse_unsupported(header: _Header, where: str) -> None:
    if header.binary:
        raise PatchFormatError(f"{where}: binary patches are not supported")
    for line in header.extended:  # "index 1234567..89abcde 120000": a symlink's change
        if line.startswith("index ") and line.endswith((" 120000", " 160000")):
            kind = (
                "symlinks (mode 120000)" if line.endswith("120000") else "submodules (mode 160000)"
            )
            raise PatchFormatError(f"{where}: {kind} are not supported")


def _git_names(header: _Header) -> tuple[str, str] | None:
    """The two paths of a ``diff --git a/P b/P`` line, when it names one file unambiguously."""
    names = header.git or ""
    if names.startswith('"'):
        left, sep, right = names[1:].partition('" ')
        return (unquote(f'"{left}"'), unquote(right)) if sep else None
    half = (len(names) - 1) // 2
    left, right = names[:half], names[half + 1 :]
    stripped = _strip_prefixes(left, right)
    return (left, right) if names[half : half + 1] == " " and stripped[0] == stripped[1] else None


def _sides(header: _Header, where: str) -> tuple[str, str]:
    if header.old is None or header.new is None:
        raise PatchFormatError(f"{where}: cannot tell which file the header names")
    return header.old, header.new


def _kind(
    header: _Header, ext: _Extended, hunks: list[Hunk], source: str, target: str, where: str
) -> FileKind:
    if source == DEV_NULL and target == DEV_NULL:
        raise PatchFormatError(f"{where}: both sides are /dev/null")
    if source == DEV_NULL or _absent(header, hunks, 0):
        kind: FileKind = "create"
    elif target == DEV_NULL or _absent(header, hunks, 1):
        kind = "delete"
    else:
        kind = "modify"
    if (ext.new and kind != "create") or (ext.deleted and kind != "delete"):
        raise PatchFormatError(f"{where}: its git header and its '---'/'+++' lines disagree")
    if kind == "create" and any(h.old_len for h in hunks):
        raise PatchFormatError(f"{where}: new file depends on old contents")
    if kind == "delete" and any(h.new_len for h in hunks):
        raise PatchFormatError(f"{where}: deleted file still has contents")
    return kind


def _absent(header: _Header, hunks: list[Hunk], side: int) -> bool:
    """``diff -N``'s way to say side 0 (old) or 1 (new) is no file: the epoch as its date, and
    no line on that side in any hunk (as git and GNU patch read it)."""
    lengths = [(h.old_len, h.new_len)[side] for h in hunks]
    return bool(lengths) and not any(lengths) and is_epoch(header.stamps[side])


def _first_folder_hint(source: str, target: str) -> str:
    """When two paths differ only in their first folder (``diff -ruN pkg-0.11.orig/
    pkg-0.11/``), which folders to drop: a patch's paths start at site-packages."""
    old_top, _, old_rest = source.partition("/")
    new_top, _, new_rest = target.partition("/")
    if not old_rest or old_rest != new_rest:
        return ""
    return (
        f"; they differ only in their first folder: drop {old_top + '/'!r} and "
        f"{new_top + '/'!r} (paths start at site-packages, e.g. {shown(new_rest)}; "
        "make the diff from inside those folders, or with git diff)"
    )
