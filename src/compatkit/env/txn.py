"""All writes to a target environment: lock, journal, atomic replace, crash recovery.

A transaction is a list of :class:`Change` objects for one distribution. It runs in steps:

1. the "before" bytes of every file it will touch go into ``<dist-info>/compatkit-journal.tmp``,
   which is synced and then renamed to ``compatkit-journal`` (the journal now exists, whole);
2. every change is written to a temp file beside its target, synced and ``os.replace``-d
   (never written in place: uv hardlinks installed files from its cache), through folder
   descriptors opened from the site-packages root down (:mod:`compatkit.env.beneath`: a
   folder swapped for a link fails the write instead of redirecting it);
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
from pathlib import Path

from compatkit import bounded
from compatkit.env.beneath import Tree
from compatkit.env.diskcheck import disk_problems, path_problems
from compatkit.env.state import JOURNAL as JOURNAL  # where recover and the tests look for it
from compatkit.env.target import Dist
from compatkit.errors import CompatkitError
from compatkit.value import Value

TYPE_CHECKING = False

if TYPE_CHECKING:
    from compatkit.model import journal

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


def _write_journal(dist: Dist, tree: Tree, changes: Sequence[Change], modes: dict[str, int]) -> str:
    """Save every "before" state in one blob file plus an index (one file, not one per change).

    ``modes`` gets the permission bits of every file that exists, for the writes to keep.
    Each entry also carries the SHA-256 of its saved and of its new bytes, so a recovery can
    check both the journal and the disk before it writes (see :mod:`compatkit.model.journal`).
    """
    from compatkit.model import journal

    info = dist.dist_info.name
    tmp = f"{info}/{JOURNAL}.tmp"
    tree.rmtree(tmp)
    tree.mkdir(tmp)
    entries: list[journal.Entry] = []
    with open(tree.create(f"{tmp}/blobs"), "wb") as blobs:
        for change in changes:
            if change.move_to is not None:
                entries.append(journal.Entry(change.relpath, move_to=change.move_to))
                continue
            after = None if change.data is None else journal.sha256(change.data)
            data, st = _before(tree, change)
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
    _reserve(tree, f"{tmp}/{RESERVE}", sum(len(e.before) for e in entries if e.before is not None))
    with open(tree.create(f"{tmp}/journal.json"), "wb") as index:
        index.write(journal.index(info, entries))
    tree.sync()
    final = f"{info}/{JOURNAL}"
    tree.rename(tmp, final)
    _step()
    return final


def _reserve(tree: Tree, relpath: str, size: int) -> None:
    """Hold the disk space a rollback needs (every saved file written back once), so a disk
    that fills up during the writes still has room to restore them: the rollback frees it
    first. Fails, before any target is written, when that space is not there."""
    fd = tree.create(relpath)
    try:
        os.fchmod(fd, 0o600)
        os.posix_fallocate(fd, 0, size + _RESERVE_SLACK)
    finally:
        os.close(fd)


def _before(tree: Tree, change: Change) -> tuple[bytes | None, os.stat_result | None]:
    """The bytes and stat of the file ``change`` replaces (None, None: it does not exist)."""
    if change.before_known and change.before is None:
        return None, None
    st = tree.lstat(change.relpath)
    if st is None:
        return None, None
    if change.before_known:
        return change.before, st
    return tree.read(change.relpath, bounded.INSTALLED, follow=True), st


def _apply_change(tree: Tree, change: Change, modes: dict[str, int], emptied: set[str]) -> None:
    """One change, through the folders' descriptors (made where missing); the folders it
    empties are pruned at the end."""
    if change.move_to is not None:
        tree.rename(change.relpath, change.move_to)
        emptied.add(change.relpath.rpartition("/")[0])
    elif change.data is None:
        tree.unlink(change.relpath)
        emptied.add(change.relpath.rpartition("/")[0])
    else:
        mode = change.mode if change.mode is not None else modes.get(change.relpath, 0o644)
        tree.write(change.relpath, change.data, mode, change.mtime_ns)
    _step()


def _prune_empty_dirs(tree: Tree, reldir: str, dist: Dist) -> None:
    """Remove folders a transaction emptied (``__pycache__``, backup folders), up to the
    root or the ``.dist-info``."""
    while reldir and reldir != dist.dist_info.name and tree.rmdir(reldir):
        reldir = reldir.rpartition("/")[0]


def _finish(tree: Tree, journal: str) -> None:
    """Delete a journal: renamed to ``.del`` first (a committed journal), then its files."""
    done = f"{journal}.del"
    tree.rename(journal, done)
    _step()
    for name in JOURNAL_FILES:  # what _write_journal writes there
        tree.unlink(f"{done}/{name}")
    if not tree.rmdir(done):  # something else in it (a journal this compatkit did not write)
        tree.rmtree(done)


def commit(dist: Dist, changes: Sequence[Change]) -> None:
    """Run one all-or-nothing transaction. On any error, restore and raise CompatkitError."""
    if not changes:
        return
    _arm()
    with Tree(dist.root) as tree:
        _commit(dist, tree, changes)


def _commit(dist: Dist, tree: Tree, changes: Sequence[Change]) -> None:
    tmp = f"{dist.dist_info.name}/{JOURNAL}.tmp"
    try:
        modes: dict[str, int] = {}
        journal = _write_journal(dist, tree, changes, modes)
    except CompatkitError as exc:
        with contextlib.suppress(OSError):
            tree.rmtree(tmp)
        raise CompatkitError(f"{exc.message}; nothing was changed", exc.problems) from None
    except OSError as exc:
        with contextlib.suppress(OSError):
            tree.rmtree(tmp)
        raise _write_error(dist, exc) from None
    done = 0  # the changes made: a rollback restores those (the rest were not touched)
    try:
        emptied: set[str] = set()
        for change in changes:
            _apply_change(tree, change, modes, emptied)
            done += 1
        for reldir in sorted(emptied, key=lambda d: d.count("/"), reverse=True):
            _prune_empty_dirs(tree, reldir, dist)
        tree.sync()
        _finish(tree, journal)
    except OSError as exc:
        from compatkit.model.journal import JournalError

        folder = dist.root / journal
        try:
            _rollback(dist, tree, journal, done)
        except (OSError, JournalError) as second:
            raise _stuck(dist, folder, second, f"{_where(dist, exc)}: {exc.strerror}") from None
        failed = changes[done] if done < len(changes) else None
        for path in () if failed is None else (failed.relpath, failed.move_to or ""):
            with contextlib.suppress(OSError):  # folders it made before it failed
                _prune_empty_dirs(tree, path.rpartition("/")[0], dist)
        raise _write_error(dist, exc) from None


def _where(dist: Dist, exc: OSError) -> str:
    return str(exc.filename or dist.root)


def _write_error(dist: Dist, exc: OSError) -> CompatkitError:
    return CompatkitError(f"cannot write {_where(dist, exc)}: {exc.strerror}; nothing was changed")


def _stuck(
    dist: Dist, folder: Path, exc: OSError | CompatkitError, first: str = ""
) -> CompatkitError:
    """The rollback itself failed: the files are mixed, the journal is kept, say what to do."""
    cause = f"cannot write {first}, and " if first else ""
    why = exc.message if isinstance(exc, CompatkitError) else f"{_where(dist, exc)}: {exc.strerror}"
    return CompatkitError(
        f"{cause}rolling back failed too ({why}): "
        f"{dist.name}'s files are partly changed and the journal {folder} is kept; fix the "
        f"cause (free disk space, a read-write mount, the files' owner), then run "
        f"'compatkit recover {dist.name}'"
    )


def _rollback(dist: Dist, tree: Tree, journal_dir: str, done: int | None = None) -> None:
    """Check the journal and the disk, then restore every journaled file (or write nothing);
    ``done``: only the first ``done`` entries were made (a commit that failed knows which: a
    folder swapped for a link under the next one does not stop the others' rollback)."""
    from compatkit.model import journal

    entries = _load_journal(dist, dist.root / journal_dir)[:done]
    problems = disk_problems(dist, entries)
    if problems:
        raise journal.JournalError(problems[0], problems[1:])
    with contextlib.suppress(OSError):  # a read-only file system: the writes will say so
        tree.unlink(f"{journal_dir}/{RESERVE}")
    for entry in reversed(entries):
        target = entry.path
        if entry.move_to is not None:
            # the rename happened if the source is gone and the destination is there (before
            # it, the destination may hold a file a later entry of this journal deletes)
            if tree.lstat(entry.move_to) is not None and tree.lstat(target) is None:
                tree.rename(entry.move_to, target)
                _prune_empty_dirs(tree, entry.move_to.rpartition("/")[0], dist)
            continue
        tree.remove_temps(target)
        if entry.before is None:
            tree.unlink(target)
            _prune_empty_dirs(tree, target.rpartition("/")[0], dist)
            continue
        assert entry.mode is not None
        tree.write(target, entry.before, entry.mode, entry.mtime_ns)
    tree.sync()
    _finish(tree, journal_dir)


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
    :func:`compatkit.env.diskcheck.disk_problems`) is refused: nothing is written, and every
    command on this distribution stops with one line until ``compatkit recover --discard``.
    """
    from compatkit.model import journal

    with Tree(dist.root) as tree:
        folder = dist.dist_info / JOURNAL
        try:
            left = _journal_left(dist, tree)
            if left is None:
                return False
            _arm()
            _rollback(dist, tree, left)
        except OSError as exc:
            raise _stuck(dist, folder, exc) from None
        except journal.JournalError as exc:
            raise journal.JournalError(
                f"refused {folder} (left by an interrupted compatkit run): {exc.message}; "
                f"nothing was written. Inspect it, then 'compatkit recover --discard "
                f"{dist.name}' deletes it and leaves the files as they are",
                exc.problems,
            ) from None
    return True


def _journal_left(dist: Dist, tree: Tree) -> str | None:
    """The journal an interrupted run left, if any (relative to the root); half-written or
    finished ones are removed (a ``.tmp`` journal was never in force, a ``.del`` one was
    committed)."""
    folder = f"{dist.dist_info.name}/{JOURNAL}"
    tree.rmtree(f"{folder}.tmp")
    tree.rmtree(f"{folder}.del")
    return folder if tree.lstat(folder) is not None else None


def discard(dist: Dist) -> bool:
    """Delete an interrupted transaction's journal without restoring anything."""
    with Tree(dist.root) as tree:
        folder = _journal_left(dist, tree)
        if folder is None:
            return False
        st = tree.lstat(folder)
        if st is not None and not stat.S_ISDIR(st.st_mode):
            tree.unlink(folder)  # a symlink or a file: remove the name, never what it points to
            return True
        _arm()
        _finish(tree, folder)
    return True
