"""Port a patch series from one upstream version to another with a three-way merge (pure).

For every patch, in series order, and every file it touches: BASE is the old version with the
earlier patches applied, OURS is BASE with this patch, THEIRS is the new version with the
earlier ported patches. :mod:`merge3` merges them. Each file comes out as

- ``clean``: the patch applies to the new file exactly where it says;
- ``offset``: it applies exactly, N lines away;
- ``merged``: its context changed upstream, and the three-way merge rewrote it;
- ``upstream``: the new file already holds the change (the merge result is THEIRS);
- ``conflict``: the merge conflicts; the file with conflict markers is returned.

>>> from compatkit.model.diff import parse_diff
>>> fd = parse_diff("--- a/m.py\\n+++ b/m.py\\n@@ -1 +1 @@\\n-x = 1\\n+x = 2\\n", "p")
>>> port_series([("p1", fd)], {"m.py": b"x = 1\\n"}, {"m.py": b"x = 2\\n"})[0].status
<PortState.UPSTREAM: 'upstream'>
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping, Sequence

from merge3 import Merge3

from compatkit.engine.difftext import file_diff
from compatkit.engine.hunks import HunkMismatch, apply_file, apply_section
from compatkit.model.diff import FileDiff
from compatkit.model.results import PortState
from compatkit.value import Value

_RANK = {PortState.CLEAN: 0, PortState.OFFSET: 1, PortState.MERGED: 2}


class FilePort(Value):
    __slots__ = ("path", "status", "offset", "before", "after", "conflict", "reason", "section")

    def __init__(
        self,
        path: str,
        status: PortState,
        offset: int = 0,
        before: bytes | None = None,  # the new version's file before this patch (a rename's
        after: bytes | None = None,  # ... and after it                       source's)
        conflict: bytes | None = None,  # the file with conflict markers
        reason: str = "",
        section: FileDiff | None = None,  # the section ported: its rename, copy and modes
    ) -> None:
        self.path, self.status, self.offset, self.reason = path, status, offset, reason
        self.before, self.after, self.conflict = before, after, conflict
        self.section = section

    def diff(self) -> str:
        """The ported section as a diff: its hunks from ``before`` to ``after``, and the git
        header lines of the section it ports (rename, copy, modes)."""
        fd = self.section
        moved = (fd.kind, fd.source) if fd is not None and fd.source is not None else None
        modes = fd.modes if fd is not None else (None, None)
        return file_diff(self.path, self.before, self.after, moved=moved, modes=modes)


class PatchPort(Value):
    __slots__ = ("id", "files")

    def __init__(self, id: str, files: list[FilePort] | None = None) -> None:
        self.id = id
        self.files = [] if files is None else files

    @property
    def status(self) -> PortState:
        kinds = [f.status for f in self.files]
        if PortState.CONFLICT in kinds:
            return PortState.CONFLICT
        if all(k is PortState.UPSTREAM for k in kinds):
            return PortState.UPSTREAM
        worst = max(
            (k for k in kinds if k in _RANK), key=_RANK.__getitem__, default=PortState.CLEAN
        )
        return PortState.CLEAN if worst is PortState.MERGED else worst

    @property
    def detail(self) -> str:
        parts = []
        for f in self.files:
            if f.status is PortState.OFFSET:
                parts.append(f"{f.path}: offset {f.offset:+d}")
            elif f.status is PortState.MERGED:
                parts.append(f"{f.path}: rewritten by three-way merge")
            elif f.status is PortState.UPSTREAM and self.status != PortState.UPSTREAM:
                parts.append(f"{f.path}: already upstream")
            elif f.status is PortState.CONFLICT:
                parts.append(f"{f.path}: {f.reason or 'conflict'}")
        return "; ".join(parts)

    def diff(self) -> str:
        """The ported diff (files already upstream left out); "" if nothing is left."""
        return "".join(f.diff() for f in self.files if f.status in _RANK)


def _lines(data: bytes | None) -> list[str]:
    if not data:
        return []
    text = data.decode("utf-8", "surrogateescape")
    return [line for line in re.split(r"(?<=\n)", text) if line]


def _bytes(lines: Sequence[str]) -> bytes:
    return "".join(lines).encode("utf-8", "surrogateescape")


def syntax_error(path: str, data: bytes | None) -> str | None:
    if not path.endswith(".py") or data is None:
        return None
    try:
        compile(data, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return f"{exc.msg} (line {exc.lineno})"
    except ValueError as exc:  # e.g. NUL bytes
        return str(exc)
    except (RecursionError, MemoryError):  # CPython's parser on thousands of nested operators
        return "nested too deeply to compile"
    return None


def _compiles(port: FilePort) -> FilePort:
    """A textually clean port that breaks a Python file that compiled is a conflict."""
    error = syntax_error(port.path, port.after)
    if error is None or syntax_error(port.path, port.before) is not None:
        return port
    reason = f"applies as text, but the result does not compile: {error}"
    return FilePort(
        port.path, PortState.CONFLICT, before=port.before, conflict=port.after, reason=reason
    )


def port_file(
    fd: FileDiff, old_before: bytes | None, new_before: bytes | None, names: tuple[str, str, str]
) -> FilePort:
    """Port one file section (``old_before`` and ``new_before``: the file it reads, a rename's
    or a copy's source); ``names`` label the conflict markers (ours, base, theirs). A section
    that renames, copies or sets a mode is ported with it, its hunks on the new source."""
    port = _port_lines(fd, old_before, new_before, names)
    port.section = fd
    if port.status is PortState.UPSTREAM and (fd.source is not None or fd.modes[1] is not None):
        port.status = PortState.MERGED  # the lines are upstream, the move or the mode is not
    return port


def _port_lines(
    fd: FileDiff, old_before: bytes | None, new_before: bytes | None, names: tuple[str, str, str]
) -> FilePort:
    try:
        old_after = apply_file(old_before, fd).data
    except HunkMismatch as exc:
        return FilePort(
            fd.path, PortState.CONFLICT, reason=f"does not apply to the old version ({exc})"
        )
    if new_before is None and fd.kind != "create":
        missing = "no such file" if fd.source is None else f"no {fd.source} to {fd.kind}"
        return FilePort(fd.path, PortState.CONFLICT, reason=f"the new version has {missing}")
    direct = None
    with contextlib.suppress(HunkMismatch):
        direct = apply_file(new_before, fd)
    m3 = Merge3(_lines(old_before), _lines(old_after), _lines(new_before))
    conflicted = any(region[0] == "conflict" for region in m3.merge_regions())
    if direct is not None:
        moved = [o for o in direct.offsets if o]
        status = PortState.OFFSET if moved else PortState.CLEAN
        port = FilePort(fd.path, status, moved[0] if moved else 0, new_before, direct.data)
        return _compiles(port)
    if not conflicted:
        merged = _bytes(list(m3.merge_lines()))
        if merged == (new_before or b""):
            return FilePort(fd.path, PortState.UPSTREAM, before=new_before, after=new_before)
        after = None if fd.kind == "delete" and not merged else merged
        return _compiles(FilePort(fd.path, PortState.MERGED, before=new_before, after=after))
    ours, base, theirs = names
    marked = m3.merge_lines(name_a=ours, name_b=theirs, name_base=base, base_marker="|||||||")
    return FilePort(fd.path, PortState.CONFLICT, before=new_before, conflict=_bytes(list(marked)))


def port_series(
    patches: Sequence[tuple[str, Sequence[FileDiff]]],
    old: Mapping[str, bytes | None],
    new: Mapping[str, bytes | None],
    labels: tuple[str, str] = ("old", "new"),
) -> list[PatchPort]:
    """Port every patch in order. A conflicting patch is left out of what later ones see."""
    old_cur, new_cur = dict(old), dict(new)
    ported = []
    for patch_id, diffs in patches:
        names = (f"{patch_id} on {labels[0]}", labels[0], labels[1])
        result = PatchPort(patch_id)
        staged = dict(new_cur)  # a file's later sections read what its earlier ones wrote
        for fd in diffs:
            read = fd.source or fd.path
            port = port_file(fd, old_cur.get(read), staged.get(read), names)
            if fd.source is not None and staged.get(fd.path) is not None:
                why = f"the new version already has {fd.path}"
                port = FilePort(fd.path, PortState.CONFLICT, reason=why, section=fd)
            result.files.append(port)
            with contextlib.suppress(HunkMismatch):
                old_cur.update((p, data) for p, (data, _) in apply_section(old_cur, fd).items())
            if fd.kind == "rename":
                staged[read] = None
            staged[fd.path] = port.after
        if result.status is not PortState.CONFLICT:
            new_cur = staged
        ported.append(result)
    return ported
