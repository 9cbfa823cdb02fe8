"""What the disk must look like before a transaction or a recovery may write (reads only).

A journal that parsed (:mod:`compatkit.model.journal`) is still only a claim. Before the rollback
writes a byte, every path it names must:

- resolve inside the site-packages root through real directories, never a symlink
  (:func:`compatkit.model.paths.resolve_inside`), and end at a regular file or at nothing;
- belong to the distribution: compatkit's own files in its ``.dist-info``, a file RECORD
  lists (now, or as the journal saved it), a file whose original RECORD row an applied
  patchset's state keeps (apply removed the row of a file it deleted; revert puts it back:
  the state on disk, or as the journal saved it), a file inside one of its top-level packages
  (new files, moved bytecode), or a root start-up file (a declared ``.pth``) the journal
  created;
- be in the state the interrupted transaction can have left it in: a file holds its
  "before" or its "after" bytes (atomic replace: nothing in between); a rename either
  happened or did not.

Anything else means the journal or the files were changed after the crash: the journal is
refused whole (the caller, :mod:`compatkit.env.txn`, raises) and nothing is written. A
transaction checks the paths (:func:`path_problems`) before it writes, too.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Set as AbstractSet

from compatkit.env.target import Dist
from compatkit.errors import CompatkitError
from compatkit.model import startup_code
from compatkit.model.ownership import Ownership
from compatkit.model.paths import resolve_inside
from compatkit.model.records import Record, Row, record_hash

TYPE_CHECKING = False

if TYPE_CHECKING:
    from compatkit.model.journal import Entry


def disk_problems(dist: Dist, entries: list[Entry]) -> list[str]:
    """Every reason the rollback of ``entries`` must not run (empty: it may)."""
    return path_problems(dist, entries) or _state_problems(dist, entries)


def _ownership(dist: Dist, entries: list[Entry], recorded: bool = False) -> Ownership:
    """Who owns what; ``recorded``: also the rows the applied patchsets' states keep.
    CompatkitError if the RECORD cannot be read."""
    try:
        raw_record = dist.read(dist.record_relpath)
    except CompatkitError:
        raw_record = None
    if raw_record is None:
        raise CompatkitError(f"{dist.name} {dist.version} has no readable RECORD")
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
    try:
        own = _ownership(dist, entries)
    except CompatkitError as exc:
        return [exc.message]
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
        own = _ownership(dist, entries, recorded=True)  # the RECORD was read just now
        problems = [(p, why) for p, why in problems if p is None or own.problem(p)]
    return [why for _, why in problems]


def _recorded_rows(dist: Dist, entries: list[Entry]) -> set[str]:
    """The paths of the original RECORD rows every applied patchset's state keeps: apply
    removes the row of a file it deletes, and revert (or the recovery of a revert) must still
    see that file as the distribution's. The states on disk, and those this transaction
    rewrites or deletes as the journal saved them (their bytes are hash-checked)."""
    from compatkit.env.state import STATE_DIR, State, states_of

    states: list[State] = []
    with contextlib.suppress(CompatkitError):  # an unreadable state owns nothing
        states += states_of(dist)
    folder = f"{dist.dist_info.name}/{STATE_DIR}/"
    for e in entries:
        name = e.path[len(folder) :] if e.path.startswith(folder) else "/"
        if e.before is not None and name.endswith(".json") and "/" not in name:
            with contextlib.suppress(CompatkitError):  # BadState: it owns nothing
                states.append(State.from_json(e.before))
    rows = [f.record_row for state in states for f in state.files]
    rows += [p.record_row for state in states for p in state.pycs]
    return {Row.from_raw(raw).path for raw in rows if isinstance(raw, str)}


def _state_problems(dist: Dist, entries: list[Entry]) -> list[str]:
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
        try:
            now = dist.hash(entry.path)  # streamed: memory does not grow with its size
        except CompatkitError as exc:  # unreadable
            problems.append(exc.message)
            continue
        if now not in (_record_form(entry.before_sha), _record_form(entry.after_sha)):
            problems.append(
                f"{entry.path} holds neither its saved bytes nor the ones the interrupted "
                "run wrote: it was changed after the crash"
            )
    return problems


def _record_form(sha: str | None) -> str | None:
    """A journal's hex SHA-256 in RECORD's form (the journal checked it is 64 hex digits)."""
    return None if sha is None else record_hash(bytes.fromhex(sha))


def _exists(dist: Dist, relpath: str) -> bool:
    return os.path.lexists(os.path.join(dist.root, relpath))
