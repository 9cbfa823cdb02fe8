"""Unified diffs → a small immutable model (pure; no file system access).

:mod:`compatkit.model.diffread` reads the text strictly (counts, truncation, headers); this module
turns its sections into small value objects that carry exactly what the engine needs, decides
what each file diff does (``/dev/null``, git's ``new file mode``, ``diff -N``'s epoch dates),
and refuses what compatkit does not apply (binary patches, renames, mode changes, symlinks).

>>> diff = "--- a/pkg/m.py\\n+++ b/pkg/m.py\\n@@ -1 +1 @@\\n-x = 1\\n+x = 2\\n"
>>> [(f.path, f.kind, len(f.hunks)) for f in parse_diff(diff, "demo.patch")]
[('pkg/m.py', 'modify', 1)]
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from compatkit.errors import PatchFormatError
from compatkit.value import Value

TYPE_CHECKING = False  # not typing's: `import typing` moves bench P1 explain 3.95× → 4.24×
if TYPE_CHECKING:
    from typing import Literal

    from compatkit.model.diffread import RawFile, RawHunk

    FileKind = Literal["modify", "create", "delete"]
# compatkit.model.diffread (the line reader) is imported on the first parse: a command that never
# reads a diff does not pay for it (start-up time, P1)

DEV_NULL = "/dev/null"


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
    ) -> None:
        self.old_start, self.old_len = old_start, old_len
        self.new_start, self.new_len = new_start, new_len
        self.lines = lines
        self.old_no_eol, self.new_no_eol = old_no_eol, new_no_eol
        self.eols = eols if eols is not None else ("\n",) * len(lines)
        self.exact = exact

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
        )


class FileDiff(Value):
    __slots__ = ("path", "kind", "hunks")

    def __init__(self, path: str, kind: FileKind, hunks: tuple[Hunk, ...]) -> None:
        self.path = path  # relative to the site-packages root, "/"-separated, no a/ b/ prefix
        self.kind: FileKind = kind
        self.hunks = hunks

    def reversed(self) -> FileDiff:
        flip: dict[str, FileKind] = {"modify": "modify", "create": "delete", "delete": "create"}
        kind = flip[self.kind]
        return FileDiff(self.path, kind, tuple(h.reversed() for h in self.hunks))

    @property
    def added(self) -> int:
        return sum(1 for h in self.hunks for k, _ in h.lines if k == "+")

    @property
    def removed(self) -> int:
        return sum(1 for h in self.hunks for k, _ in h.lines if k == "-")


def _strip_prefixes(source: str, target: str) -> tuple[str, str]:
    src_ok = source == DEV_NULL or source.startswith("a/")
    tgt_ok = target == DEV_NULL or target.startswith("b/")
    if src_ok and tgt_ok:
        source = source if source == DEV_NULL else source[2:]
        target = target if target == DEV_NULL else target[2:]
    return source, target


def changes_eol(lines: Sequence[tuple[str, str]], eols: Sequence[str]) -> bool:
    """Whether a hunk changes line endings: in one run of ``-`` and ``+`` lines, a line is
    removed with one ending ("\\n" or "\\r\\n") and added back with the other."""
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


def _hunk(raw: RawHunk, create: bool) -> Hunk:
    lines = tuple((kind, text) for kind, text, _ in raw.lines)
    eols = tuple(eol for _, _, eol in raw.lines)
    exact = create or changes_eol(lines, eols)
    counts = (raw.old_start, raw.old_len, raw.new_start, raw.new_len)
    return Hunk(*counts, lines, "-" in raw.no_eol, "+" in raw.no_eol, eols, exact)


def _refuse_unsupported(raw: RawFile, where: str) -> None:
    info = "\n".join(raw.extended) + "\n"
    if raw.binary:
        raise PatchFormatError(f"{where}: binary patches are not supported")
    if "old mode " in info or "new mode " in info:
        raise PatchFormatError(f"{where}: file mode changes are not supported")
    if "rename from " in info or "copy from " in info or "rename old " in info:
        raise PatchFormatError(f"{where}: renames and copies are not supported")
    if "120000" in info or "160000" in info:
        raise PatchFormatError(f"{where}: symlink and submodule changes are not supported")
    if re.search(r"^new file mode (?!100644\n)", info, re.M):
        raise PatchFormatError(f"{where}: file modes are not supported (a new file is 100644)")


def _git_names(raw: RawFile) -> tuple[str, str] | None:
    """The two paths of a ``diff --git a/P b/P`` line, when it names one file unambiguously."""
    names = raw.git or ""
    if names.startswith('"'):
        left, sep, right = names[1:].partition('" ')
        from compatkit.model.diffread import unquote

        return (unquote(f'"{left}"'), unquote(right)) if sep else None
    half = (len(names) - 1) // 2
    left, right = names[:half], names[half + 1 :]
    stripped = _strip_prefixes(left, right)
    return (left, right) if names[half : half + 1] == " " and stripped[0] == stripped[1] else None


def _sides(raw: RawFile, where: str) -> tuple[str, str]:
    git = _git_names(raw) if raw.git is not None else None
    if raw.old is None or raw.new is None:
        if git is None:
            raise PatchFormatError(f"{where}: cannot tell which file the git header names")
        new_file = any(x.startswith("new file mode ") for x in raw.extended)
        gone = any(x.startswith("deleted file mode ") for x in raw.extended)
        return (DEV_NULL if new_file else git[0]), (DEV_NULL if gone else git[1])
    return raw.old, raw.new


def _kind(raw: RawFile, source: str, target: str, where: str) -> FileKind:
    if source == DEV_NULL and target == DEV_NULL:
        raise PatchFormatError(f"{where}: both sides are /dev/null")
    hunks = raw.hunks
    if source == DEV_NULL or _absent(raw, 0):
        kind: FileKind = "create"
    elif target == DEV_NULL or _absent(raw, 1):
        kind = "delete"
    else:
        kind = "modify"
    extended = "\n".join(raw.extended)
    if ("new file mode" in extended and kind != "create") or (
        "deleted file mode" in extended and kind != "delete"
    ):
        raise PatchFormatError(f"{where}: its git header and its '---'/'+++' lines disagree")
    if kind != "modify" and any(h.new_len if kind == "delete" else h.old_len for h in hunks):
        raise PatchFormatError(f"{where}: a hunk of a {kind}d file has lines on the other side")
    return kind


def _absent(raw: RawFile, side: int) -> bool:
    """``diff -N``'s way to say side 0 (old) or 1 (new) is no file: the epoch as its date, and
    no line on that side in any hunk (as git and GNU patch read it)."""
    lengths = [(h.old_len, h.new_len)[side] for h in raw.hunks]
    from compatkit.model.diffread import is_epoch

    return bool(lengths) and not any(lengths) and is_epoch(raw.stamps[side])


def _convert_file(raw: RawFile, label: str) -> FileDiff:
    where = f"{label}: line {raw.line_no}"
    _refuse_unsupported(raw, where)
    source, target = _strip_prefixes(*_sides(raw, where))
    where = f"{label}: {shown(target if target != DEV_NULL else source)}"
    kind = _kind(raw, source, target, where)
    if kind == "modify" and source != target:
        raise PatchFormatError(
            f"{where}: source and target paths differ ({shown(source)} vs {shown(target)})"
            + _first_folder_hint(source, target)
        )
    if not raw.hunks and (kind == "modify" or raw.old is not None):
        raise PatchFormatError(f"{where}: file header without any hunk")
    hunks = tuple(_hunk(h, kind == "create") for h in raw.hunks)
    return FileDiff(source if kind == "delete" else target, kind, hunks)


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


def parse_diff(text: str, label: str, first_line: int = 1) -> tuple[FileDiff, ...]:
    """Parse ``git diff``, ``git format-patch`` or ``diff -u`` text into file diffs.

    ``first_line`` is the line of the patch file ``text`` starts at (for messages). Anything
    malformed, truncated or not supported raises :class:`PatchFormatError` with one line.
    """
    from compatkit.model.diffread import read

    files = tuple(_convert_file(raw, label) for raw in read(text, label, first_line))
    if not files:
        raise PatchFormatError(f"{label}: contains no diff")
    seen: set[str] = set()
    for f in files:
        if f.path in seen:
            raise PatchFormatError(f"{label}: {shown(f.path)} appears twice in one patch")
        seen.add(f.path)
    return files


def shown(text: str) -> str:
    """``text`` for a one-line message, never ambiguous: as it is, or quoted as Python quotes
    it (``repr``: control and undecodable characters escaped) when it holds one of those or
    begins or ends with white space, which would be invisible.

    >>> print(shown("pkg/m.py"), shown("pkg/m.py  "), shown("pkg/\\x1b[2Jm.py"))
    pkg/m.py 'pkg/m.py  ' 'pkg/\\x1b[2Jm.py'
    """
    return text if text.isprintable() and text == text.strip() else repr(text)
