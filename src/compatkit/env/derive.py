"""What an applied patchset's files must hold, derived again from their original bytes and the
patch files; :func:`problems` compares that with the disk (``verify``).

The state file records what an apply wrote (``written_sha``), but a record is only a claim: a
wrong write (a forged cache entry, a bug, a tampered state file with a matching hash) would
agree with it. So ``verify`` does the apply again in memory:

1. the original bytes of each file come from the apply's backup (a patched wheel keeps none:
   they are recovered by un-applying the patches from the disk), and must hash to the original
   hash the state and the original RECORD row record (a forced apply started from bytes RECORD
   does not list: only the state's hash then);
2. the patchset's patch files, as they are now (same digest as when applied) and parsed afresh
   (never from compatkit's cache), are applied to them in series order, excluded ones left out;
3. each result must be exactly the file on disk, or, where another patchset was applied on top
   of the same file, exactly the bytes the state says were written (that patchset's own verify
   proves the rest).

The state file, the backups and RECORD live together in ``.dist-info``: whoever can rewrite all
three consistently can also rewrite the files, so this proves the bytes against the patch files
and the recorded originals, not against the index (docs/security.md, "verify proves the bytes").
Used as ``problems(patchset, dist, state, other_states)``: an empty list is a proof.
"""

from __future__ import annotations

from compatkit.engine.hunks import SeriesConflict, apply_series
from compatkit.env.state import FileState, State, read_backup
from compatkit.env.target import Dist
from compatkit.model.diff import FileDiff
from compatkit.model.patchset import Patchset
from compatkit.model.records import Row, hash_bytes

_WRONG = "does not hold what {ps}'s patch files make of its original bytes"


def _sha(data: bytes | None) -> str | None:
    return None if data is None else hash_bytes(data)


def _originals(
    dist: Dist, state: State, series: list[tuple[str, tuple[FileDiff, ...]]]
) -> tuple[dict[str, bytes | None], list[str]]:
    """Each file's original bytes, and every way they are not the recorded originals."""
    found: list[str] = []
    if state.built_in:  # no backups: un-apply the patches from what is installed
        disk = {f.path: dist.read(f.path) for f in state.files}
        try:
            base = apply_series(disk, series, reverse=True).contents
        except SeriesConflict as exc:
            return {}, [f"cannot recover the original bytes: {exc.message}"]
    else:
        base = {f.path: read_backup(dist.read, f) for f in state.files}
    for f in state.files:
        original = base.get(f.path)
        if original is None and f.original_sha is None:
            continue  # a file the patchset created
        if original is None:
            found.append(f"the original bytes of {f.path} are missing ({f.backup})")
        elif hash_bytes(original) != f.original_sha or not _in_record(f, original, state):
            found.append(f"the original bytes of {f.path} are not the ones recorded")
    return base, found


def _in_record(f: FileState, original: bytes, state: State) -> bool:
    if state.forced or state.built_in or not f.record_row:
        return True  # forced: applied to bytes RECORD does not list; a wheel: RECORD is new
    row = Row.from_raw(f.record_row)
    return not row.hash or row.hash == hash_bytes(original)


def _stacked(f: FileState, others: list[State]) -> bool:
    """Another applied patchset started from what this one wrote to ``f``."""
    return any(
        g.path == f.path and g.original_sha == f.written_sha for o in others for g in o.files
    )


def problems(ps: Patchset, dist: Dist, state: State, others: list[State]) -> list[str]:
    """Every file whose bytes are not what ``ps``'s patch files make of its original bytes."""
    ps.bind_names(dist.files.is_file)
    patches = [ps.patch(pid) for pid in state.applied]
    series = [(p.id, p.files) for p in patches if p is not None]
    if len(series) != len(state.applied):
        return ["cannot re-derive its files: the state names patches the patchset does not have"]
    base, found = _originals(dist, state, series)
    if found:
        return found
    try:
        derived = apply_series(base, series).contents
    except SeriesConflict as exc:
        return [f"its patches no longer apply to the original bytes: {exc.message}"]
    listed = {f.path: f for f in state.files}
    for path, data in derived.items():
        f = listed.get(path)
        if f is None:
            found.append(f"{path} is patched by {ps.name} but its state does not list it")
        elif _stacked(f, others):
            if _sha(data) != f.written_sha:
                found.append(f"{path} {_WRONG.format(ps=ps.name)} (state: written bytes)")
        elif dist.hash(path) != _sha(data):  # streamed: only the hash of the disk's is needed
            found.append(f"{path} {_WRONG.format(ps=ps.name)}")
    return found
