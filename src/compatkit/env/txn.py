"""All writes to a target environment: lock, journal, atomic replace, crash recovery.

A transaction is a list of :class:`Change` objects for one distribution. It runs in steps:

1. the "before" bytes of every file it will touch go into ``<dist-info>/compatkit-journal.tmp``,
   which is synced and then renamed to ``compatkit-journal`` (the journal now exists, whole);
2. every change is written to a temp file beside its target, synced and ``os.replace``-d
   (never written in place: uv hardlinks installed files from its cache);
3. the journal is renamed to ``compatkit-journal.del`` (the commit point) and removed.

A crash (SIGKILL included) at any step leaves either no journal (nothing changed yet, or the
transaction is complete) or a whole journal, from which :func:`recover` restores every file to
its "before" bytes. Every command calls :func:`recover` under the lock
(:func:`compatkit.env.session.locked`) before it reads.

>>> Change("pkg/m.py", b"x = 1\\n").relpath
'pkg/m.py'
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path

from compatkit import bounded
from compatkit.env.state import JOURNAL as JOURNAL  # where recover and the tests look for it
from compatkit.env.target import Dist
from compatkit.errors import CompatkitError
from compatkit.model import startup_code
from compatkit.model.ownership import Ownership
from compatkit.model.paths import resolve_inside
from compatkit.model.records import Record, Row
from compatkit.value import Value

TYPE_CHECKING = False

if TYPE_CHECKING:
    from compatkit.model import journal
    from compatkit.model.journal import Entry

# compatkit.atomic and .journal are imported where a write or a recovery needs them

TMP_SUFFIX = ".compatkit-tmp"  # compatkit.atomic's (tests/env/test_atomic.py checks they agree)
RESERVE = "reserve"  # in the journal folder: the space a rollback needs
JOURNAL_FILES = ("blobs", "journal.json", RESERVE)  # every file of a journal folder
_RESERVE_SLACK = 64 * 1024  # directory entries, the journal's own rename
_steps = 0


class Change(Value):
    """Write ``data`` to ``relpath`` (None: delete it), or, with ``move_to``, rename it there.

    A rename journals no bytes: rolling it back is renaming back. It moves bytecode files out
    of the way and back (one rename each instead of a copy, an unlink and a re-create).
    """

    __slots__ = ("relpath", "data", "mtime_ns", "before", "before_known", "move_to", "mode")

    def __init__(
        self,
        relpath: str,  # relative to the distribution's root (site-packages)
        data: bytes | None,  # None: delete the file
        mtime_ns: int | None = None,  # set after writing (revert restores the original mtime)
        before: bytes | None = None,  # the current bytes, when the caller already read them
        before_known: bool = False,  # ... so the journal does not read the file again
        move_to: str | None = None,  # rename relpath to this (a path that does not exist)
        mode: int | None = None,  # permission bits to write (None: the file's own, else 0644)
    ) -> None:
        self.relpath = relpath
        self.data = data
        self.mtime_ns = mtime_ns
        self.before = before
        self.before_known = before_known
        self.move_to = move_to
        self.mode = mode


def _sync_fs(path: Path | str) -> None:
    """Flush the file system holding ``path`` (one syncfs instead of thousands of fsyncs)."""
    import ctypes  # here, not at the top: only a commit or a rollback needs it

    fd = os.open(path, os.O_RDONLY)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if getattr(libc, "syncfs", None) is None or libc.syncfs(fd) != 0:
            os.sync()
    finally:
        os.close(fd)


_hooks = ["", ""]  # COMPATKIT_CRASH_AT and COMPATKIT_PAUSE_AT, as _arm last read them


def _arm() -> None:
    """Read the tests' hooks for :func:`_step` once per transaction (a step is taken per
    file: the environment looked up at each costs a big transaction milliseconds)."""
    _hooks[:] = os.environ.get("COMPATKIT_CRASH_AT", ""), os.environ.get("COMPATKIT_PAUSE_AT", "")


def _step() -> None:
    """A write step. Tests set COMPATKIT_CRASH_AT=N to be SIGKILLed at step N, or
    COMPATKIT_PAUSE_AT=N:FILE to wait there (creating FILE.waiting) until FILE exists."""
    global _steps
    _steps += 1
    crash_at = _hooks[0]
    if crash_at and int(crash_at) == _steps:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)
    pause_at, _, go = _hooks[1].partition(":")
    if pause_at and int(pause_at) == _steps:
        _wait_for(go)


def _wait_for(go: str) -> None:
    import time

    open(f"{go}.waiting", "w").close()
    deadline = time.monotonic() + 60
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.02)


def write_atomic(path: str, data: bytes, mode: int, mtime_ns: int | None = None) -> None:
    """A temp file beside ``path`` (exclusive, unpredictable name), then ``os.replace``."""
    from compatkit import atomic

    atomic.write(path, data, mode, mtime_ns)


def _write_journal(dist: Dist, changes: Sequence[Change], modes: dict[str, int]) -> Path:
    """Save every "before" state in one blob file plus an index (one file, not one per change).

    ``modes`` gets the permission bits of every file that exists, for the writes to keep.
    Each entry also carries the SHA-256 of its saved and of its new bytes, so a recovery can
    check both the journal and the disk before it writes (see :mod:`compatkit.model.journal`).
    """
    from compatkit.model import journal

    tmp = dist.dist_info / f"{JOURNAL}.tmp"
    _remove_tree(tmp)
    tmp.mkdir(parents=True)
    entries: list[journal.Entry] = []
    with open(tmp / "blobs", "wb") as blobs:
        root = str(dist.root)
        for change in changes:
            if change.move_to is not None:
                entries.append(journal.Entry(change.relpath, move_to=change.move_to))
                continue
            after = None if change.data is None else journal.sha256(change.data)
            data, st = _before(os.path.join(root, change.relpath), change)
            if data is None or st is None:
                entries.append(journal.Entry(change.relpath, after_sha=after))
                continue
            blobs.write(data)
            modes[change.relpath] = mode = stat.S_IMODE(st.st_mode)
            entries.append(journal.Entry(change.relpath, data, after, mode, st.st_mtime_ns))
            _step()
    problems = path_problems(dist, entries)  # every write, not only apply's
    if problems:
        raise CompatkitError(f"refusing to write {dist.name}'s files", problems)
    _reserve(tmp / RESERVE, sum(len(e.before) for e in entries if e.before is not None))
    (tmp / "journal.json").write_bytes(journal.index(dist.dist_info.name, entries))
    _sync_fs(tmp)
    final = dist.dist_info / JOURNAL
    os.replace(tmp, final)
    _step()
    return final


def _reserve(path: Path, size: int) -> None:
    """Hold the disk space a rollback needs (every saved file written back once), so a disk
    that fills up during the writes still has room to restore them: the rollback frees it
    first. Fails, before any target is written, when that space is not there."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.posix_fallocate(fd, 0, size + _RESERVE_SLACK)
    finally:
        os.close(fd)


def _before(target: str, change: Change) -> tuple[bytes | None, os.stat_result | None]:
    """The bytes and stat of ``target`` now (None, None: it does not exist)."""
    try:
        if change.before_known and change.before is None:
            return None, None
        st = os.lstat(target)
        if change.before_known:
            return change.before, st
        with open(target, "rb") as fh:
            return fh.read(), st
    except FileNotFoundError:
        return None, None


def _apply_change(
    root: str, change: Change, modes: dict[str, int], made: set[str], emptied: set[str]
) -> None:
    """One change; directories are created once each (``made``) and pruned at the end.

    Plain string paths: pathlib costs per file here (benchmark P2).
    """
    target = os.path.join(root, change.relpath)
    if change.move_to is not None:
        dest = os.path.join(root, change.move_to)
        _make_dirs(os.path.dirname(dest), made)
        os.rename(target, dest)
        emptied.add(os.path.dirname(target))
    elif change.data is None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(target)
        emptied.add(os.path.dirname(target))
    else:
        _make_dirs(os.path.dirname(target), made)
        mode = change.mode if change.mode is not None else modes.get(change.relpath, 0o644)
        write_atomic(target, change.data, mode, change.mtime_ns)
    _step()


def _make_dirs(directory: str, made: set[str]) -> None:
    if directory not in made:
        os.makedirs(directory, exist_ok=True)
        made.add(directory)


def _prune_empty_dirs(directory: Path, dist: Dist) -> None:
    """Remove directories a transaction emptied (``__pycache__``, backup folders)."""
    stop = {dist.root, dist.dist_info}
    while directory not in stop and dist.root in directory.parents:
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent


def _finish(journal: Path) -> None:
    """Delete a journal: renamed to ``.del`` first (a committed journal), then its files."""
    done = journal.with_name(f"{JOURNAL}.del")
    os.replace(journal, done)
    _step()
    for name in JOURNAL_FILES:  # what _write_journal writes there
        with contextlib.suppress(FileNotFoundError):
            os.unlink(done / name)
    try:
        os.rmdir(done)
    except OSError:  # something else in it (a journal this compatkit did not write)
        import shutil

        shutil.rmtree(done)


def _remove_tree(folder: Path) -> None:
    """``shutil.rmtree(folder, ignore_errors=True)`` where a folder is there: shutil (with
    zlib, bz2 and lzma) is imported only for a journal an interrupted run left."""
    if os.path.lexists(folder):
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


def commit(dist: Dist, changes: Sequence[Change]) -> None:
    """Run one all-or-nothing transaction. On any error, restore and raise CompatkitError."""
    if not changes:
        return
    _arm()
    try:
        modes: dict[str, int] = {}
        journal = _write_journal(dist, changes, modes)
    except CompatkitError as exc:
        _remove_tree(dist.dist_info / f"{JOURNAL}.tmp")
        raise CompatkitError(f"{exc.message}; nothing was changed", exc.problems) from None
    except OSError as exc:
        _remove_tree(dist.dist_info / f"{JOURNAL}.tmp")
        raise _write_error(dist, exc) from None
    try:
        made: set[str] = set()
        emptied: set[str] = set()
        root = str(dist.root)
        for change in changes:
            _apply_change(root, change, modes, made, emptied)
        for directory in sorted(emptied, key=lambda d: d.count(os.sep), reverse=True):
            _prune_empty_dirs(Path(directory), dist)
        _sync_fs(dist.root)
        _finish(journal)
    except OSError as exc:
        try:
            _rollback(dist, journal)
        except OSError as second:
            raise _stuck(dist, journal, second, f"{_where(dist, exc)}: {exc.strerror}") from None
        raise _write_error(dist, exc) from None


def _where(dist: Dist, exc: OSError) -> str:
    return str(exc.filename or dist.root)


def _write_error(dist: Dist, exc: OSError) -> CompatkitError:
    return CompatkitError(f"cannot write {_where(dist, exc)}: {exc.strerror}; nothing was changed")


def _stuck(dist: Dist, folder: Path, exc: OSError, first: str = "") -> CompatkitError:
    """The rollback itself failed: the files are mixed, the journal is kept, say what to do."""
    cause = f"cannot write {first}, and " if first else ""
    return CompatkitError(
        f"{cause}rolling back failed too ({_where(dist, exc)}: {exc.strerror}): "
        f"{dist.name}'s files are partly changed and the journal {folder} is kept; fix the "
        f"cause (free disk space, a read-write mount, the files' owner), then run "
        f"'compatkit recover {dist.name}'"
    )


def _rollback(dist: Dist, folder: Path) -> None:
    """Check the journal and the disk, then restore every journaled file (or write nothing)."""
    from compatkit import atomic
    from compatkit.model import journal

    entries = _load_journal(dist, folder)
    problems = disk_problems(dist, entries)
    if problems:
        raise journal.JournalError(problems[0], problems[1:])
    with contextlib.suppress(OSError):  # a read-only file system: the writes will say so
        os.unlink(folder / RESERVE)
    for entry in reversed(entries):
        target = dist.root / entry.path
        if entry.move_to is not None:
            moved = dist.root / entry.move_to
            # the rename happened if the source is gone and the destination is there (before
            # it, the destination may hold a file a later entry of this journal deletes)
            if os.path.lexists(moved) and not os.path.lexists(target):
                target.parent.mkdir(parents=True, exist_ok=True)
                os.rename(moved, target)
                _prune_empty_dirs(moved.parent, dist)
            continue
        atomic.remove_temps(str(target))
        if entry.before is None:
            with contextlib.suppress(FileNotFoundError):
                target.unlink()
            _prune_empty_dirs(target.parent, dist)
            continue
        assert entry.mode is not None
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(str(target), entry.before, entry.mode, entry.mtime_ns)
    _sync_fs(dist.root)
    _finish(folder)


def _load_journal(dist: Dist, folder: Path) -> list[journal.Entry]:
    """The journal's entries; it is a real folder of two regular files (no symlinks)."""
    from compatkit.model import journal

    if not stat.S_ISDIR(os.lstat(folder).st_mode):
        raise journal.JournalError("it is not a folder (a symlink?)")
    parts = []
    for name, limit in (("journal.json", bounded.METADATA), ("blobs", bounded.INSTALLED)):
        try:
            parts.append(bounded.read(folder / name, limit, follow=False))
        except bounded.Refused as exc:
            raise journal.JournalError(f"cannot read its {name}: {exc.why}") from None
        except OSError as exc:
            raise journal.JournalError(f"cannot read its {name}: {exc.strerror}") from None
    return journal.parse(parts[0], parts[1], dist.dist_info.name)


def recover(dist: Dist) -> bool:
    """Finish or roll back an interrupted transaction. True if there was one to roll back.

    A journal that fails any check (see :mod:`compatkit.model.journal` and
    :func:`disk_problems`) is refused: nothing is written, and every
    command on this distribution stops with one line until ``compatkit recover --discard``.
    """
    folder = _journal_left(dist)
    if folder is None:
        return False
    from compatkit.model import journal

    _arm()
    try:
        _rollback(dist, folder)
    except OSError as exc:
        raise _stuck(dist, folder, exc) from None
    except journal.JournalError as exc:
        raise journal.JournalError(
            f"refused {folder} (left by an interrupted compatkit run): {exc.message}; nothing "
            f"was written. Inspect it, then 'compatkit recover --discard {dist.name}' deletes "
            "it and leaves the files as they are",
            exc.problems,
        ) from None
    return True


def _journal_left(dist: Dist) -> Path | None:
    """The journal an interrupted run left, if any; half-written or finished ones are removed
    (a ``.tmp`` journal was never in force, a ``.del`` one was committed)."""
    info = dist.dist_info
    _remove_tree(info / f"{JOURNAL}.tmp")
    _remove_tree(info / f"{JOURNAL}.del")
    folder = info / JOURNAL
    return folder if os.path.lexists(folder) else None


def discard(dist: Dist) -> bool:
    """Delete an interrupted transaction's journal without restoring anything."""
    folder = _journal_left(dist)
    if folder is None:
        return False
    if not stat.S_ISDIR(os.lstat(folder).st_mode):
        os.unlink(folder)  # a symlink or a file: remove the name, never what it points to
        return True
    _arm()
    _finish(folder)
    return True


# What the disk must look like before a transaction or a recovery may write (reads only).
#
# What the disk must look like before a recovery may write (reads only).
#
# A journal that parsed (:mod:`compatkit.model.journal`) is still only a claim. Before the rollback
# writes a byte, every path it names must:
#
# - resolve inside the site-packages root through real directories, never a symlink
#   (:func:`compatkit.model.paths.resolve_inside`), and end at a regular file or at nothing;
# - belong to the distribution: compatkit's own files in its ``.dist-info``, a file RECORD
#   lists (now, or as the journal saved it), a file whose original RECORD row an applied
#   patchset's state keeps (apply removed the row of a file it deleted; revert puts it back:
#   the state on disk, or as the journal saved it), a file inside one of its top-level packages
#   (new files, moved bytecode), or a root start-up file (a declared ``.pth``) the journal
#   created;
# - be in the state the interrupted transaction can have left it in: a file holds its
#   "before" or its "after" bytes (atomic replace: nothing in between); a rename either
#   happened or did not.
#
# Anything else means the journal or the files were changed after the crash: the journal is
# refused whole (the caller raises) and nothing is written.


def disk_problems(dist: Dist, entries: list[Entry]) -> list[str]:
    """Every reason the rollback of ``entries`` must not run (empty: it may)."""
    return path_problems(dist, entries) or _state_problems(dist, entries)


def _ownership(dist: Dist, entries: list[Entry], recorded: bool = False) -> Ownership | str:
    """Who owns what; ``recorded``: also the rows the applied patchsets' states keep."""
    raw_record = _read(dist, dist.record_relpath)
    if not isinstance(raw_record, bytes):
        return f"{dist.name} {dist.version} has no readable RECORD"
    owned: AbstractSet[str] = Record.paths_in(raw_record)  # a view: looked up, not listed
    if recorded:
        owned = owned | _recorded_rows(dist, entries)
    # ... and as it was when the transaction began (a revert may have written the new RECORD
    # already; its saved bytes are hash-checked by compatkit.model.journal); before a commit
    # writes, those are the bytes on disk: read once
    saved = next((e.before for e in entries if e.path == dist.record_relpath), None)
    if saved is not None and saved != raw_record:
        owned = owned | Record.paths_in(saved)
    # folders this transaction creates do not count as someone else's existing folders
    made = {
        "/".join(e.path.split("/")[:i])
        for e in entries
        if e.move_to is None and e.before is None
        for i in range(1, e.path.count("/") + 1)
    }

    def exists(folder: str) -> bool:
        return folder not in made and dist.files.lexists(folder)

    return Ownership(owned, dist.dist_info.name, exists, dist.name)


def path_problems(dist: Dist, entries: list[Entry]) -> list[str]:
    """Every path of ``entries`` that is not inside the root through real directories, or
    not the distribution's (:mod:`compatkit.model.ownership`; a root start-up file, a declared
    ``.pth``, that the transaction creates is allowed). Checked before a transaction writes
    (:func:`compatkit.env.txn.commit`) and before a rollback does."""
    own = _ownership(dist, entries)
    if isinstance(own, str):
        return [own]
    problems: list[tuple[str | None, str]] = []  # (the path whose owner is in doubt, why)
    dirs_ok: set[str] = set()
    info = dist.dist_info.name
    for entry in entries:
        for path in (entry.path, entry.move_to):
            if path is None:
                continue
            try:
                resolve_inside(dist.root, path, dirs_ok, own_metadata=info, replace_last=True)
            except CompatkitError as exc:
                problems.append((None, exc.message))
                continue
            created = entry.move_to is None and entry.before is None
            if created and "/" not in path and startup_code.is_startup_path(path):
                continue
            why = own.problem(path)
            if why:
                problems.append((path, why))
    if any(path is not None for path, _ in problems):
        # only now read the states: a file apply deleted has no RECORD row until revert is done
        own = _ownership(dist, entries, recorded=True)
        if isinstance(own, str):
            return [own]
        problems = [(p, why) for p, why in problems if p is None or own.problem(p)]
    return [why for _, why in problems]


def _recorded_rows(dist: Dist, entries: list[Entry]) -> set[str]:
    """The paths of the original RECORD rows every applied patchset's state keeps: apply
    removes the row of a file it deletes, and revert (or the recovery of a revert) must still
    see that file as the distribution's. The states on disk, and those this transaction
    rewrites or deletes as the journal saved them (their bytes are hash-checked)."""
    from compatkit.env.state import STATE_DIR, State, states_of

    states: list[State] = []
    with contextlib.suppress(CompatkitError, AttributeError):  # an unreadable state owns nothing
        states += states_of(dist)
    folder = f"{dist.dist_info.name}/{STATE_DIR}/"
    for e in entries:
        name = e.path[len(folder) :] if e.path.startswith(folder) else "/"
        if e.before is not None and name.endswith(".json") and "/" not in name:
            with contextlib.suppress(
                ValueError, TypeError, KeyError, AttributeError, RecursionError
            ):
                states.append(State.from_json(e.before))
    rows = [f.record_row for state in states for f in state.files]
    rows += [p.record_row for state in states for p in state.pycs]
    return {Row.from_raw(raw).path for raw in rows if isinstance(raw, str)}


def _state_problems(dist: Dist, entries: list[Entry]) -> list[str]:
    from compatkit.model import journal

    problems: list[str] = []
    moved_in = {e.move_to: e.path for e in entries if e.move_to is not None}
    for entry in entries:
        if entry.move_to is not None:
            source, dest = _exists(dist, entry.path), _exists(dist, entry.move_to)
            if not source and not dest:
                problems.append(f"{entry.path} and its new name {entry.move_to} are both gone")
            continue
        mover = moved_in.get(entry.path)
        if mover is not None and not _exists(dist, mover):
            continue  # a rename put another file here after this entry cleared the name
        now = _read(dist, entry.path)
        if isinstance(now, str):
            problems.append(now)
            continue
        now_sha = None if now is None else journal.sha256(now)
        if now_sha not in (entry.before_sha, entry.after_sha):
            problems.append(
                f"{entry.path} holds neither its saved bytes nor the ones the interrupted "
                "run wrote: it was changed after the crash"
            )
    return problems


def _exists(dist: Dist, relpath: str) -> bool:
    return os.path.lexists(os.path.join(dist.root, relpath))


def _read(dist: Dist, relpath: str) -> bytes | str | None:
    """The bytes at ``relpath`` (None: absent), or a problem line (str) if unreadable."""
    try:
        return dist.read(relpath)
    except CompatkitError as exc:
        return exc.message
