"""git's extended header lines, read and checked as ``git apply`` reads them (pure).

The lines between a ``diff --git`` line and its ``---`` line: modes (``old mode``, ``new mode``,
``new file mode``, ``deleted file mode``), renames and copies, and the ``index`` line, and git's
C-quoted names (``"a/t\\303\\251st.py"``). :mod:`compatkit.model.diff` imports this module only
when a patch has a ``diff --git`` section or a quoted name, so a command that reads plain
``diff -u`` patches never loads it (start-up time).

>>> ext = Extended(["old mode 100644", "new mode 100755"], "p")
>>> (ext.old_mode, ext.new_mode, ext.moved, ext.metadata)
(420, 493, None, True)
>>> try:
...     Extended(["new file mode 100644", "rename from x"], "p")
... except PatchFormatError as exc:
...     print(exc.message)
p: inconsistent header lines (new file mode, rename)
"""

from __future__ import annotations

from compatkit.errors import PatchFormatError

TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Literal

    Moved = Literal["rename", "copy"]

_MODES = {"100644": 0o644, "100755": 0o755}
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


class Extended:
    """What git's extended header lines say: modes, new or deleted, renamed or copied."""

    __slots__ = ("old_mode", "new_mode", "new", "deleted", "moved", "names", "metadata")

    def __init__(self, lines: list[str], where: str) -> None:
        self.old_mode: int | None = None
        self.new_mode: int | None = None
        self.new = self.deleted = False
        self.moved: Moved | None = None
        self.names: list[str] = ["", ""]  # rename/copy from, to
        found: list[str] = []  # new, deleted, rename, copy: at most one (git)
        for line in lines:
            head, _, value = line.rpartition(" ")
            if head in ("old mode", "deleted file mode"):
                self.old_mode = mode(value, where)
            if head == "new mode" or (head == "new file mode" and value != "100644"):
                self.new_mode = mode(value, where)  # a new file is 0644 unless it says not
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


def mode(value: str, where: str) -> int:
    """A git mode's permission bits: 100644 and 100755; symlinks, submodules and the rest are
    refused."""
    if value in _MODES:
        return _MODES[value]
    if value == "120000":
        raise PatchFormatError(f"{where}: symlinks (mode 120000) are not supported")
    if value == "160000":
        raise PatchFormatError(f"{where}: submodules (mode 160000) are not supported")
    raise PatchFormatError(f"{where}: file mode {value} is not supported (100644 or 100755)")


def refuse_special(lines: list[str], where: str) -> None:
    """An ``index`` line's mode that is a symlink's or a submodule's (``index 1234567..89abcde
    120000``), refused: nothing in an installed distribution is one."""
    for line in lines:
        if line.startswith("index ") and line.endswith((" 120000", " 160000")):
            kind = (
                "symlinks (mode 120000)" if line.endswith("120000") else "submodules (mode 160000)"
            )
            raise PatchFormatError(f"{where}: {kind} are not supported")


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
