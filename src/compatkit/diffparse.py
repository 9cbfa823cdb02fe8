"""Unified diffs → a small immutable model (pure; no file system access).

unidiff does the parsing; this module turns its objects into small value objects that carry
exactly what the engine needs, and refuses what compatkit does not apply (binary patches,
renames, mode changes, symlinks).

>>> diff = "--- a/pkg/m.py\\n+++ b/pkg/m.py\\n@@ -1 +1 @@\\n-x = 1\\n+x = 2\\n"
>>> [(f.path, f.kind, len(f.hunks)) for f in parse_diff(diff, "demo.patch")]
[('pkg/m.py', 'modify', 1)]
"""

from __future__ import annotations

from io import StringIO

from compatkit.errors import PatchFormatError
from compatkit.value import Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    FileKind = Literal["modify", "create", "delete"]

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
    ) -> None:
        self.old_start, self.old_len = old_start, old_len
        self.new_start, self.new_len = new_start, new_len
        self.lines = lines
        self.old_no_eol, self.new_no_eol = old_no_eol, new_no_eol

    @property
    def old_lines(self) -> list[str]:
        return [text for kind, text in self.lines if kind != "+"]

    @property
    def new_lines(self) -> list[str]:
        return [text for kind, text in self.lines if kind != "-"]

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


def _convert_hunk(hunk: object, where: str) -> Hunk:
    lines: list[tuple[str, str]] = []
    old_no_eol = new_no_eol = False
    for line in hunk:  # type: ignore[attr-defined]
        kind = line.line_type
        if kind == "\\":
            if not lines:
                raise PatchFormatError(f"{where}: '\\ No newline' marker before any line")
            prev = lines[-1][0]
            old_no_eol = old_no_eol or prev in (" ", "-")
            new_no_eol = new_no_eol or prev in (" ", "+")
            continue
        value: str = line.value
        if value.endswith("\n"):
            value = value[:-1]
        lines.append((kind or " ", value))  # unidiff types a bare empty line "" (context)
    return Hunk(
        hunk.source_start,  # type: ignore[attr-defined]
        hunk.source_length,  # type: ignore[attr-defined]
        hunk.target_start,  # type: ignore[attr-defined]
        hunk.target_length,  # type: ignore[attr-defined]
        tuple(lines),
        old_no_eol,
        new_no_eol,
    )


def _refuse_unsupported(pf: object, where: str) -> None:
    if pf.is_binary_file:  # type: ignore[attr-defined]
        raise PatchFormatError(f"{where}: binary patches are not supported")
    info = "".join(pf.patch_info or [])  # type: ignore[attr-defined]
    if "old mode " in info or "new mode " in info:
        raise PatchFormatError(f"{where}: file mode changes are not supported")
    if "rename from " in info or "copy from " in info or pf.is_rename:  # type: ignore[attr-defined]
        raise PatchFormatError(f"{where}: renames and copies are not supported")
    if "120000" in info or "160000" in info:
        raise PatchFormatError(f"{where}: symlink and submodule changes are not supported")


def _convert_file(pf: object, label: str) -> FileDiff:
    source, target = _strip_prefixes(pf.source_file or "", pf.target_file or "")  # type: ignore[attr-defined]
    where = f"{label}: {shown(target if target != DEV_NULL else source)}"
    _refuse_unsupported(pf, where)
    if source == DEV_NULL and target == DEV_NULL:
        raise PatchFormatError(f"{where}: both sides are /dev/null")
    kind: FileKind = (
        "create" if source == DEV_NULL else "delete" if target == DEV_NULL else "modify"
    )
    if kind == "modify" and source != target:
        raise PatchFormatError(
            f"{where}: source and target paths differ ({shown(source)} vs {shown(target)})"
        )
    hunks = tuple(_convert_hunk(h, where) for h in pf)  # type: ignore[attr-defined]
    if not hunks and kind == "modify":
        raise PatchFormatError(f"{where}: file header without any hunk")
    return FileDiff(source if kind == "delete" else target, kind, hunks)


def parse_diff(text: str, label: str) -> tuple[FileDiff, ...]:
    """Parse ``git diff``, ``git format-patch`` or ``diff -u`` text into file diffs.

    Line endings of the patch are normalised; an empty patch or one that unidiff rejects
    raises :class:`PatchFormatError` with a one-line message.
    """
    from unidiff.errors import UnidiffParseError
    from unidiff.patch import PatchSet

    text = text.replace("\r\n", "\n")
    try:
        parsed = PatchSet(StringIO(text))
    except UnidiffParseError as exc:
        raise PatchFormatError(f"{label}: malformed diff: {_one_line(str(exc))}") from None
    except (ValueError, TypeError, IndexError, AttributeError, AssertionError) as exc:
        raise PatchFormatError(f"{label}: malformed diff: {_one_line(str(exc))}") from None
    if not parsed:
        raise PatchFormatError(f"{label}: contains no diff")
    files = tuple(_convert_file(pf, label) for pf in parsed)
    seen: set[str] = set()
    for f in files:
        if f.path in seen:
            raise PatchFormatError(f"{label}: {shown(f.path)} appears twice in one patch")
        seen.add(f.path)
    return files


def shown(text: str) -> str:
    """``text`` safe to print on one line: control and undecodable characters escaped."""
    return text if text.isprintable() else repr(text)[1:-1]


def _one_line(message: str, limit: int = 160) -> str:
    flat = shown(" ".join(message.split()))
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
