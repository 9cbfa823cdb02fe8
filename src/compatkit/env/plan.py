"""Plan an apply or a revert as an in-memory overlay of the target, then hand it to txn.

Nothing here writes: :class:`Overlay` records what each file *will* hold, and
:meth:`Overlay.changes` turns that into the change list :func:`compatkit.env.txn.commit` runs. A
re-apply of an edited patchset plans the revert of the old version and the apply of the new
one on the same overlay, so both land in one transaction.
"""

from __future__ import annotations

from compatkit import bounded
from compatkit.env.state import (
    FileState,
    PycState,
    State,
    backup_dir,
    read_backup,
    state_relpath,
)
from compatkit.env.target import Dist
from compatkit.env.txn import Change
from compatkit.errors import CompatkitError, UsageError
from compatkit.model import startup_code
from compatkit.model.ownership import Ownership
from compatkit.model.paths import shown
from compatkit.model.records import Record, Row, hash_bytes, row_for, row_with

TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Protocol

    from compatkit.engine.hunks import SeriesResult
    from compatkit.model.patchset import Patch, Patchset

    class Files(Protocol):
        """What planning reads (see :class:`compatkit.env.target.DiskFiles` for each)."""

        def read(self, relpath: str) -> bytes | None: ...
        def is_file(self, relpath: str) -> bool: ...
        def lexists(self, relpath: str) -> bool: ...
        def listdir(self, relpath: str) -> list[str]: ...
        def mtime_ns(self, relpath: str) -> int: ...
        def mode(self, relpath: str) -> int: ...
        def check_inside(self, relpath: str, dirs_ok: set[str]) -> None: ...
        def size(self, relpath: str) -> int: ...
        def hash(self, relpath: str) -> str | None: ...


class Overlay:
    """The target distribution's files as a transaction would leave them."""

    def __init__(self, dist: Dist, files: Files | None = None) -> None:
        self.dist = dist
        self.files = dist.files if files is None else files  # every read goes through it
        self.data: dict[str, bytes | None] = {}
        self.mtimes: dict[str, int] = {}
        self.modes: dict[str, int] = {}  # permission bits a write sets (a deleted file back)
        self._disk: dict[str, bytes | None] = {}  # each file is read once (under the lock)
        raw_record = self.disk(dist.record_relpath)  # kept: the journal needs it too
        if raw_record is None:
            raise UsageError(f"{dist.name} {dist.version} has no RECORD file")
        self.record = Record.parse(raw_record)
        self._original_record = self.record
        self._planned_pycs: dict[str, set[str]] = {}  # "dir/__pycache__/stem." -> pyc paths
        # "dir/__pycache__" -> "\0name\0name…\0", or once searched often, its pycs by stem
        self._pycaches: dict[str, str | dict[str, list[str]]] = {}
        self._pycache_searches: dict[str, int] = {}
        self.moves: dict[str, str] = {}  # renames: source -> destination
        self._moved_to: dict[str, str] = {}  # destination -> source
        self._free: dict[str, int] = {}  # free_name(): where to start looking
        self._listed: dict[str, set[str]] = {}  # free_name(): a folder's names on disk

    def disk(self, relpath: str) -> bytes | None:
        if relpath not in self._disk:
            self._disk[relpath] = self.files.read(relpath)
        return self._disk[relpath]

    def read(self, relpath: str) -> bytes | None:
        if relpath in self.data:
            return self.data[relpath]
        if relpath in self._moved_to:
            return self.disk(self._moved_to[relpath])
        return None if relpath in self.moves else self.disk(relpath)

    def hash(self, relpath: str) -> str | None:
        """The RECORD form of the hash of what ``relpath`` will hold (None: nothing). A file
        that is only on disk and larger than one :data:`compatkit.bounded.HASH_CHUNK` is
        hashed in chunks, never read whole: a RECORD check keeps memory flat however large
        the file it refuses (issue 36); one that passes is read for the patch."""
        known = (self.data, self._moved_to, self.moves, self._disk)
        if not any(relpath in k for k in known) and self.files.size(relpath) > bounded.HASH_CHUNK:
            return self.files.hash(relpath)
        data = self.read(relpath)
        return None if data is None else hash_bytes(data)

    def exists(self, relpath: str) -> bool:
        """Whether ``relpath`` will exist, without reading it if it is only on disk."""
        if relpath in self.data:
            return self.data[relpath] is not None
        if relpath in self._moved_to:
            return True
        if relpath in self.moves:
            return False
        if relpath in self._disk:
            return self._disk[relpath] is not None
        return self.files.is_file(relpath)

    def write(
        self, relpath: str, data: bytes | None, mtime_ns: int | None = None, mode: int | None = None
    ) -> None:
        if relpath in self._moved_to or relpath in self.moves:
            raise CompatkitError(f"internal: {relpath} is both renamed and written")
        self.data[relpath] = data
        if mtime_ns is not None:
            self.mtimes[relpath] = mtime_ns
        if mode is not None:
            self.modes[relpath] = mode
        self._note_pyc(relpath)

    def mode(self, relpath: str) -> int:
        """The permission bits ``relpath`` (a file that will exist) will have: as planned, else
        its own on disk (a write keeps them), else 0644 (see :func:`compatkit.env.txn.commit`)."""
        if relpath in self.modes:
            return self.modes[relpath]
        source = self._moved_to.get(relpath, relpath)
        return self.files.mode(source) if self.files.is_file(source) else 0o644

    def free_name(self, pattern: str) -> str:
        """``pattern`` (``{}`` in its last name only) formatted with the lowest n whose path
        is neither on disk nor planned. Its folder is listed once (under the lock, nothing
        else adds to it): one look per pyc backup was a stat per file (benchmark P2)."""
        folder, _, last = pattern.rpartition("/")
        taken_here = self._listed.get(folder)
        if taken_here is None:
            taken_here = self._listed[folder] = set(self.files.listdir(folder))
        n = self._free.get(pattern, 0)  # names below it are taken already
        while True:
            name = pattern.format(n)
            n += 1
            taken = name in self.data or name in self.moves or name in self._moved_to
            if not taken and last.format(n - 1) not in taken_here:
                self._free[pattern] = n
                return name

    def move(self, source: str, dest: str) -> None:
        """Rename ``source`` (a file on disk) to ``dest``, replacing whatever ``dest`` holds.

        Destinations are fresh names (see free_name), so no rename waits for another to vacate
        its destination. A chain (a re-apply moving on a pyc that the revert half just moved
        back) becomes one rename.
        """
        if source in self._moved_to:  # source is itself arriving by a rename: redirect that
            first = self._moved_to.pop(source)
            del self.moves[first]
            if self.files.lexists(source):
                self.data[source] = None  # what is on disk there still goes
            source = first
        if source == dest:  # moved back and out again: it just stays
            return
        self.data.pop(dest, None)  # a file there is deleted first (see changes())
        self.moves[source] = dest
        self._moved_to[dest] = source
        self._note_pyc(dest)

    def _note_pyc(self, relpath: str) -> None:
        if relpath.endswith(".pyc") and "/__pycache__/" in f"/{relpath}":
            stem = relpath.rsplit("/", 1)[-1].split(".", 1)[0]
            prefix = relpath.rsplit("/", 1)[0] + f"/{stem}."
            self._planned_pycs.setdefault(prefix, set()).add(relpath)

    def pycs(self, relpath: str) -> list[str]:
        """``pycs_of(relpath)`` as this overlay would leave them."""
        folder, _, name = relpath.rpartition("/")
        stem = name[:-3] if name.endswith(".py") else name.rpartition(".")[0] or name
        prefix = f"{folder}/__pycache__/{stem}." if folder else f"__pycache__/{stem}."
        found = set(self._pycs_on_disk(relpath)) | self._planned_pycs.get(prefix, set())
        return sorted(r for r in found if self.exists(r))

    def _pycs_on_disk(self, relpath: str) -> list[str]:
        """Bytecode files on disk compiled from ``relpath``, every tag and optimisation level
        (``STEM.TAG.pyc``, ``STEM.TAG.opt-N.pyc``: any interpreter's, a stale one included).

        Each ``__pycache__`` is listed once and its names kept as one string, each name
        between NUL characters (which no file name holds): a module's names are then found by
        searching for NUL, its stem and a dot, at C speed. A glob per source file would list
        the folder again for every module in it (quadratic in big packages), and indexing or
        sorting every name costs a small patch to a 15,000-module package more than the rest
        of its work (issue 36, G-apply). A folder searched ``_SEARCHES`` times (a patch of
        thousands of modules: a search each is quadratic too) is indexed by stem instead.
        """
        if not relpath.endswith(".py"):
            return []
        folder, _, name = relpath.rpartition("/")
        cache = f"{folder}/__pycache__" if folder else "__pycache__"
        names = self._pycaches.get(cache)
        if names is None:
            names = self._pycaches[cache] = "\0" + "\0".join(self.files.listdir(cache)) + "\0"
        if isinstance(names, str):
            searched = self._pycache_searches[cache] = self._pycache_searches.get(cache, 0) + 1
            if searched > _SEARCHES:
                names = self._pycaches[cache] = _pycs_by_stem(names)
        stem = name[:-3]
        found = names.get(stem, ()) if isinstance(names, dict) else _search_pycs(names, stem)
        return sorted(f"{cache}/{pyc}" for pyc in found)

    def changes(self) -> list[Change]:
        """Writes and deletes, then deletes that clear rename destinations, then renames."""
        out = [
            Change(
                rel,
                data,
                self.mtimes.get(rel),
                before=self.disk(rel),
                before_known=True,
                mode=self.modes.get(rel),
            )
            for rel, data in self.data.items()
            if rel in self.mtimes or rel in self.modes or self.disk(rel) != data
        ]
        if self.record != self._original_record:
            rel = self.dist.record_relpath
            out.append(Change(rel, self.record.render(), before=self.disk(rel), before_known=True))
        for dest in self._moved_to:
            if dest not in self.moves and self.files.lexists(dest):
                out.append(Change(dest, None, before=self.disk(dest), before_known=True))
        out += [Change(src, None, move_to=dest) for src, dest in self.moves.items()]
        return out


# searches of one __pycache__ listing before it is indexed by stem (Overlay._pycs_on_disk)
_SEARCHES = 64


def _is_pyc_name(name: str) -> bool:
    return name.endswith(".pyc") and name.count(".") >= 2  # STEM.TAG[.opt-N].pyc


def _search_pycs(names: str, stem: str) -> list[str]:
    """The bytecode names of a ``__pycache__`` listing (NUL-separated) compiled from the
    module ``stem``: those after a NUL and ``stem`` and a dot."""
    start = f"\0{stem}."
    found = []
    i = names.find(start)
    while i >= 0:
        end = names.index("\0", i + 1)
        if _is_pyc_name(names[i + 1 : end]):
            found.append(names[i + 1 : end])
        i = names.find(start, end)
    return found


def _pycs_by_stem(names: str) -> dict[str, list[str]]:
    """The bytecode names of a ``__pycache__`` listing (NUL-separated) under every stem a
    search finds them by: each part of the name before one of its dots."""
    index: dict[str, list[str]] = {}
    for name in names.split("\0"):
        if _is_pyc_name(name):
            dot = name.find(".")
            while dot >= 0:
                index.setdefault(name[:dot], []).append(name)
                dot = name.find(".", dot + 1)
    return index


def _sha(data: bytes | None) -> str | None:
    return None if data is None else hash_bytes(data)


def plan_revert(ov: Overlay, state: State, force: bool) -> list[str]:
    """Plan putting back every original byte; return the problems found (empty: fine)."""
    problems: list[str] = []
    for f in state.files:
        if ov.hash(f.path) != f.written_sha:  # a large one streamed, never read for this
            problems.append(f"{f.path} changed since compatkit wrote it")
    if problems and not force:
        return problems
    problems = []
    rows: list[tuple[int | None, str]] = []  # original rows and their original indexes
    for f in state.files:
        for pyc in ov.pycs(f.path):
            ov.write(pyc, None)
        original = read_backup(ov.read, f)
        if f.backup and original is None:
            problems.append(f"backup of {f.path} is missing ({f.backup})")
            continue
        ov.write(f.path, original, f.mtime_ns, f.mode)  # mode: a deleted file's own, not 0644
        rows.append((f.record_index, f.record_row) if f.record_row is not None else (None, ""))
    for p in state.pycs:
        if p.moved:
            if ov.exists(p.backup):
                ov.move(p.backup, p.path)
        else:
            ov.write(p.path, read_backup(ov.read, p))
        if p.record_row is not None:
            rows.append((p.record_index, p.record_row))
    own = [state_relpath(ov.dist, state.patchset)]
    own += [f.backup for f in state.files if f.backup] + [p.backup for p in state.pycs]
    own = list(dict.fromkeys(own))
    for rel in own:
        if rel not in ov.moves:
            ov.write(rel, None)
    ov.record = _restore_rows(ov.record, {f.path for f in state.files} | set(own), rows)
    return problems


def _restore_rows(record: Record, drop: set[str], rows: list[tuple[int | None, str]]) -> Record:
    """Drop every row the apply added or changed, then put the original rows back.

    Indexes are those of the RECORD the apply started from, so inserting in ascending order
    rebuilds it byte for byte whatever the apply removed, replaced or appended.
    """
    record = record.without(drop | {Row.from_raw(raw).path for _, raw in rows if raw})
    known = sorted((i, raw) for i, raw in rows if raw and i is not None)
    record = record.insert_all([(i, Row.from_raw(raw)) for i, raw in known])
    unplaced = [Row.from_raw(raw) for i, raw in rows if raw and i is None]  # older states
    return record.edit({}, set(), unplaced) if unplaced else record


def _check_ownership(ov: Overlay, ps: Patchset, patches: list[Patch]) -> list[str]:
    problems: list[str] = []
    own = Ownership(ov.record.owned(), ov.dist.dist_info.name, ov.files.lexists, ps.distribution)
    dirs_ok: set[str] = set()
    created: set[str] = set()  # by an earlier patch of the series: a later one may change it
    for patch in patches:
        for fd_path, fd_kind in _sides(patch):
            try:
                ov.files.check_inside(fd_path, dirs_ok)
            except CompatkitError as exc:
                problems.append(f"{patch.id}: {exc.message}")
                continue
            if fd_kind != "create" and fd_path in created:
                continue
            if fd_kind != "create" and fd_path not in own.owned:
                problems.append(
                    f"{patch.id}: {shown(fd_path)} is not a file of {ps.distribution}"
                    + _prefix_hint(own, fd_path)
                )
                continue
            if fd_kind != "create":
                continue
            created.add(fd_path)  # if it is refused here, the apply is refused anyway
            if startup_code.is_startup_path(fd_path):
                continue  # a root .pth, sitecustomize: allowed if declared (plan_apply)
            why = own.problem(fd_path)
            if why and why.endswith("packages"):
                problems.append(
                    f"{patch.id}: new file {shown(fd_path)} is outside {ps.distribution}'s packages"
                )
            elif why:
                problems.append(f"{patch.id}: new file {why}")
    return problems


def _sides(patch: Patch) -> list[tuple[str, str]]:
    """Each path a patch's sections touch, and how: a rename or a copy reads a file of the
    distribution and creates another."""
    out = []
    for fd in patch.files:
        if fd.source is not None:
            out.append((fd.source, "modify"))
        out.append((fd.path, "create" if fd.kind in ("create", "rename", "copy") else fd.kind))
    return out


def _prefix_hint(own: Ownership, path: str) -> str:
    """When ``path`` minus its leading folders is a file of the distribution (a diff made one
    folder up, ``diff -ruN pkg-0.11.orig/ pkg-0.11/``), which prefix to drop."""
    parts = path.split("/")
    for k in range(1, len(parts)):
        rest = "/".join(parts[k:])
        if rest in own.owned:
            drop = "/".join(parts[:k]) + "/"
            return f" (drop the leading {drop!r} from the patch's paths: {shown(rest)} is)"
    return ""


def _check_record(ov: Overlay, paths: list[str]) -> list[str]:
    problems = []
    for path in paths:
        row = ov.record.get(path)
        if row is None or not row.hash:
            continue
        now = ov.hash(path)
        if now is not None and now != row.hash:
            problems.append(f"{shown(path)} does not match its RECORD hash (edited after install?)")
    return problems


class ApplyPlan:
    __slots__ = ("state", "result")

    def __init__(self, state: State, result: SeriesResult) -> None:
        self.state = state
        self.result = result


def plan_apply(
    ov: Overlay, ps: Patchset, excluded: list[str], force: bool, built_in: bool = False
) -> ApplyPlan:
    """Plan the series minus ``excluded`` on ``ov``; raise CompatkitError listing problems.

    ``built_in``: for a patched wheel (``compatkit wheel``), whose state keeps no originals."""
    ps.bind_names(ov.files.is_file)
    selected = [p for p in ps.patches if p.id not in excluded]
    problems = _check_ownership(ov, ps, selected) + startup_code.undeclared(ps, selected)
    paths = list(dict.fromkeys(path for p in selected for fd in p.files for path in fd.paths))
    if not problems and not force:
        problems = _check_record(ov, paths)
    if problems:
        raise CompatkitError(f"{ps.name}: refusing to apply", problems)
    base = {path: ov.read(path) for path in paths}
    from compatkit.engine.hunks import SeriesConflict, apply_series  # apply's: not revert's

    try:
        result = apply_series(base, [(p.id, p.files) for p in selected])
    except SeriesConflict as exc:
        raise CompatkitError(exc.message) from None
    state = State(ps.name, ps.version, ps.digest, ps.distribution, ov.dist.version)
    state.applied, state.excluded, state.forced = [p.id for p in selected], excluded, force
    state.built_in = built_in
    state.offsets = {
        pid: {f: list(o) for f, o in per.items()} for pid, per in result.offsets.items()
    }
    _record_changes(ov, state, base, result)
    return ApplyPlan(state, result)


def _record_changes(
    ov: Overlay, state: State, base: dict[str, bytes | None], result: SeriesResult
) -> None:
    folder = backup_dir(ov.dist, state.patchset)
    archive = _Archive(f"{folder}/originals")
    own: list[str] = [state_relpath(ov.dist, state.patchset)]
    start = ov.record  # indexes below are indexes in this RECORD (see _restore_rows)
    replace: dict[str, Row] = {}
    remove: set[str] = set()
    append: list[Row] = []
    for path, touched in result.touched_by.items():
        original, new = base[path], result.contents[path]
        new_sha = _sha(new)  # the state's and the RECORD row's: hashed once
        fs = FileState(path, _sha(original), new_sha, patches=touched)
        mode = _mode(ov, result, path, original, new)
        if original is not None and not state.built_in:
            fs.backup, fs.backup_offset, fs.backup_size = archive.add(original)
            fs.mtime_ns = ov.mtimes.get(path) or ov.files.mtime_ns(path)
            if new is None or mode is not None:  # revert puts its own mode back
                fs.mode = ov.mode(path)
        row = ov.record.get(path)
        if row is not None:
            fs.record_row, fs.record_index = row.raw, start.index(path)
        if new is None:
            remove.add(path)
        else:
            assert new_sha is not None  # new is not None
            digest = (new_sha, len(new))
            if row is not None:
                replace[path] = row_with(path, digest)
            else:
                append.append(row_with(path, digest))
        ov.write(path, new, mode=mode)
        for pyc in ov.pycs(path):
            backup = _drop_pyc(ov, state, pyc, folder, start)
            if backup is not None:
                remove.add(pyc)
                own.append(backup)
        state.files.append(fs)
    if archive.used:  # written even when every original is empty: revert reads it back
        ov.write(archive.path, bytes(archive.data))
        own.append(archive.path)
    ov.write(own[0], state.to_json())
    append += [row_for(rel, None) for rel in own]
    ov.record = ov.record.edit(replace, remove, append)


def _mode(
    ov: Overlay, result: SeriesResult, path: str, original: bytes | None, new: bytes | None
) -> int | None:
    """The permission bits to write ``path`` with (None: its own, or 0644 for a new file): a
    mode the series sets, else for a renamed or copied new file its source's."""
    if new is None:
        return None
    mode = result.modes.get(path)
    origin = result.origins.get(path)
    if mode is None and original is None and origin is not None and ov.files.is_file(origin):
        mode = ov.files.mode(origin)  # a rename or copy keeps its source's mode
    if mode is None or (original is not None and mode == ov.mode(path)):
        return None
    return None if original is None and mode == 0o644 else mode


class _Archive:
    """All original bytes of one apply in one file: one write instead of one per file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.data = bytearray()
        self.used = False  # an original was added (its bytes may be none: an empty file)

    def add(self, blob: bytes) -> tuple[str, int, int]:
        offset = len(self.data)
        self.data += blob
        self.used = True
        return self.path, offset, len(blob)


def _drop_pyc(ov: Overlay, state: State, pyc: str, folder: str, start: Record) -> str | None:
    """Move one bytecode file into the backup folder; its backup path (None: no such file)."""
    if not ov.exists(pyc):
        return None
    row = ov.record.get(pyc)
    backup = ov.free_name(f"{folder}/pyc/{{}}.pyc")
    state.pycs.append(PycState(pyc, backup, row.raw if row else None, start.index(pyc), moved=True))
    ov.move(pyc, backup)
    return backup
