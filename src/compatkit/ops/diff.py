"""Turn hand edits of an installed distribution into a new patch, then record it as applied
(``compatkit diff DIST --patchset NAME --id ID``).

The edited files are the ones whose bytes differ from RECORD (RECORD rows of files compatkit
patched hold the bytes compatkit wrote), plus files added inside the distribution's packages.
The base of each diff is the wheel's pristine file, or, for a file the applied patchset already
patches, the bytes compatkit wrote. The new patch is checked (applies to the base giving the
edits, reverts back to the base) before anything is written; then the patchset files are
written and one transaction records the patchset as applied, as ``apply`` would have.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from compatkit import atomic, bounded
from compatkit.delivery.wheels import WheelSource, pristine
from compatkit.engine.difftext import diff_files
from compatkit.engine.hunks import SeriesConflict, apply_series
from compatkit.env import txn
from compatkit.env.plan import plan_apply, plan_revert
from compatkit.env.session import Session
from compatkit.env.state import State, load_state, read_backup
from compatkit.env.target import Dist, Environment
from compatkit.errors import CompatkitError, UsageError
from compatkit.load import authoring
from compatkit.load.registry import Registry
from compatkit.load.validate import load_patchset
from compatkit.model.names import normalize_name
from compatkit.model.patchset import Patchset, parse_patch
from compatkit.model.progress import NONE, Reporter
from compatkit.value import Value

_SKIP_SUFFIXES = (".pyc", ".pyo", txn.TMP_SUFFIX)


def _is_metadata(path: str) -> bool:
    top = path.split("/", 1)[0]
    return path.startswith("..") or top.endswith((".dist-info", ".data", ".egg-info"))


def _ignored(path: str) -> bool:
    return "__pycache__" in path.split("/") or path.endswith(_SKIP_SUFFIXES)


def _owned_by_others(dist: Dist) -> set[str]:
    owned: set[str] = set()
    for record in dist.root.glob("*.dist-info/RECORD"):
        if record.parent != dist.dist_info:
            text = bounded.read(record, bounded.METADATA).decode("utf-8", "replace")
            owned |= {line.split(",", 1)[0] for line in text.split("\n")}
    return owned


def find_edits(dist: Dist, reporter: Reporter = NONE) -> dict[str, bytes | None]:
    """Every file of ``dist`` that differs from RECORD, and every file added to its packages
    (``reporter``: the RECORD rows read of the total). A file is hashed streamed
    (:meth:`compatkit.env.target.Dist.hash`) and read only when it differs: an unedited
    gigabyte library is never held in memory."""
    record = dist.read_record()
    edits: dict[str, bytes | None] = {}
    rows = [r for r in record.rows if r.hash and not _is_metadata(r.path) and not _ignored(r.path)]
    with reporter.task(f"reading {dist.name} {dist.version}", total=len(rows)) as task:
        for row in rows:
            if dist.hash(row.path) != row.hash:
                edits[row.path] = dist.read(row.path)
            task.advance()
    known = record.paths() | _owned_by_others(dist)
    tops = {p.split("/", 1)[0] for p in record.paths() if "/" in p and not _is_metadata(p)}
    for top in sorted(tops):
        for folder, dirs, files in os.walk(dist.root / top):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for fname in files:
                full = Path(folder) / fname
                rel = full.relative_to(dist.root).as_posix()
                if rel not in known and not _ignored(rel) and not full.is_symlink():
                    edits[rel] = dist.read(rel)  # a FIFO, a device: one line naming it
    return edits


class _Target(Value):
    """Where the new patch goes: ``root`` the patchset directory, ``existing`` that patchset
    (None: a new one), ``state`` its applied state here (None: not applied)."""

    __slots__ = ("root", "existing", "state")

    def __init__(self, root: Path, existing: Patchset | None, state: State | None) -> None:
        self.root, self.existing, self.state = root, existing, state


def _target(registry: Registry, into: Path, dist: Dist, name: str, patch_id: str) -> _Target:
    existing = registry.get(name) if name in registry.names() else None
    state = load_state(dist, name)
    if existing is None:
        if state is not None:
            raise CompatkitError(f"{name} is applied here but its patchset directory is gone")
        return _Target(into / name, None, None)
    if existing.distribution != normalize_name(dist.name):
        raise UsageError(f"{name} targets {existing.distribution}, not {dist.name}")
    if existing.patch(patch_id) is not None:
        raise UsageError(f"{name} already has a patch {patch_id}")
    if state is None and existing.patches:
        raise CompatkitError(
            f"{name} is not applied here: run 'compatkit apply {name}' first, then edit the "
            "installed files and run diff again"
        )
    if state is not None and state.digest != existing.digest:
        raise CompatkitError(f"{name} changed since it was applied; run 'compatkit apply {name}'")
    return _Target(existing.root, existing, state)


def _bases(
    dist: Dist, target: _Target, edits: dict[str, bytes | None], wheels: WheelSource
) -> tuple[dict[str, bytes | None], str]:
    """What each edited file held before the edits: compatkit's bytes, else the wheel's."""
    bases: dict[str, bytes | None] = {}
    state, ps = target.state, target.existing
    record = dist.read_record()
    if state is not None and ps is not None:
        originals = {f.path: read_backup(dist.read, f) for f in state.files}
        ps.bind_names(dist.files.is_file)  # the names apply patched
        applied = [(p.id, p.files) for p in ps.patches if p.id in state.applied]
        written = apply_series(originals, applied).contents
        bases.update({p: written[p] for p in edits if p in written})
    wanted = {p: record.get(p).hash for p in edits if p not in bases and record.get(p)}  # type: ignore[union-attr]
    bases.update({p: None for p in edits if p not in bases and p not in wanted})
    source = "compatkit state"
    if wanted:
        got = pristine(wheels, dist.name, dist.version, sorted(wanted), wanted)
        bases.update(got.files)
        source = got.label
    return bases, source


def _check(
    patch_id: str, text: str, bases: dict[str, bytes | None], edits: dict[str, bytes | None]
) -> None:
    patch = parse_patch(Path(f"{patch_id}.patch"), text.encode("utf-8", "surrogateescape"))
    try:
        forward = apply_series(bases, [(patch_id, patch.files)]).contents
        back = apply_series(forward, [(patch_id, patch.files)], reverse=True).contents
    except SeriesConflict as exc:
        raise CompatkitError(f"the generated patch does not apply: {exc.message} (a bug)") from None
    wrong = [p for p in edits if forward.get(p) != edits[p] or back.get(p) != bases[p]]
    if wrong:
        raise CompatkitError("the generated patch does not reproduce these edits", wrong)


class DiffResult(Value):
    """The new patch: ``files`` (path -> "new file", "deleted" or "edited"), the patchset
    files ``written`` (relative to the patchset), where the pristine bytes came from, and the
    empty new files left out (a patch cannot create an empty file)."""

    __slots__ = (
        "patchset",
        "id",
        "files",
        "written",
        "pristine_from",
        "skipped_empty",
        "recovered",
    )

    def __init__(
        self,
        patchset: str,
        id: str,
        files: dict[str, str],
        written: list[str],
        pristine_from: str,
        skipped_empty: list[str],
        recovered: bool = False,
    ) -> None:
        self.patchset, self.id, self.files, self.written = patchset, id, files, written
        self.pristine_from, self.skipped_empty = pristine_from, skipped_empty
        self.recovered = recovered

    def to_json(self) -> dict[str, object]:
        return {
            "ok": True,
            "patchset": self.patchset,
            "id": self.id,
            "files": sorted(self.files),
            "written": self.written,
            "pristine_from": self.pristine_from,
            "skipped_empty": self.skipped_empty,
        }


def make_dir(path: Path) -> None:
    """The folder ``diff -o`` writes into, made before the registry reads it."""
    path.mkdir(parents=True, exist_ok=True)


def check_id(patch_id: str) -> None:
    if not patch_id or not patch_id.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise UsageError(f"--id {patch_id!r}: use letters, digits, '-', '_' or '.'")


def diff(
    registry: Registry,
    env: Environment,
    dist_name: str,
    name: str,
    patch_id: str,
    title: str | None,
    into: Path,
    wheels: WheelSource,
) -> DiffResult:
    """Write the new patch into the patchset ``name`` (under ``into`` if it is new) and record
    it as applied in one transaction; on any failure the patchset files are restored."""
    check_id(patch_id)
    dist = env.require(dist_name)
    with Session.open(dist) as session:
        target = _target(registry, into, dist, name, patch_id)
        edits = find_edits(dist, wheels.reporter)
        if not edits:
            raise CompatkitError(f"{dist.name} {dist.version}: no edited files (all match RECORD)")
        bases, source = _bases(dist, target, edits, wheels)
        empty = [p for p, d in edits.items() if d == b"" and bases[p] is None]
        pairs = {p: (bases[p], edits[p]) for p in edits if p not in empty}
        body = diff_files(pairs)
        if not body:
            raise CompatkitError("the edits hold no line changes", sorted(edits))
        text = authoring.header(patch_id, title) + body
        _check(patch_id, text, {p: bases[p] for p in pairs}, {p: edits[p] for p in pairs})
        written = _write_patchset(target, dist, name, patch_id, title, text, sorted(pairs))
        try:
            ps = load_patchset(target.root)
            _record_applied(session, ps, target.state, {p: bases[p] for p in pairs}, edits)
        except BaseException:
            _undo(written)
            raise
    rel = [str(p.relative_to(target.root)) for p, _ in written if p.suffix != ".toml"]
    kinds = {
        path: "new file" if bases[path] is None else "deleted" if edits[path] is None else "edited"
        for path in sorted(pairs)
    }
    return DiffResult(name, patch_id, kinds, rel, source, empty, session.recovered)


def _modules(paths: list[str]) -> list[str]:
    mods = []
    for p in paths:
        if p.endswith(".py"):
            parts = p[:-3].split("/")
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            if all(part.isidentifier() for part in parts):
                mods.append(".".join(parts))
    return list(dict.fromkeys(mods))[:3]


def _write_patchset(
    target: _Target,
    dist: Dist,
    name: str,
    patch_id: str,
    title: str | None,
    text: str,
    paths: list[str],
) -> list[tuple[Path, str | None]]:
    """Write the patch, its smoke stub and the toml; return each path with its old text."""
    root = target.root
    stem = authoring.slug(title or Path(paths[0]).stem)
    patch_rel = f"patches/{patch_id}-{stem}.patch"
    smoke_rel = authoring.smoke_name(patch_id)
    toml = root / "patchset.toml"
    written: list[tuple[Path, str | None]] = []
    try:
        if target.existing is None:
            spec = f"=={dist.version}"
            authoring.write_new(
                toml,
                authoring.new_patchset_toml(
                    name,
                    "0.1.0",
                    f"Local fixes for {dist.name} {dist.version}",
                    normalize_name(dist.name),
                    spec,
                    [patch_rel],
                ),
            )
            written.append((toml, None))
        else:
            old = toml.read_text("utf-8")
            written.append((toml, old))
            atomic.write_text(toml, authoring.append_to_series(old, patch_rel))
        authoring.write_new(root / patch_rel, text)
        written.append((root / patch_rel, None))
        existing = target.existing
        # a smoke-from patchset's stub goes to the shared folder, unless it has its own smoke/
        smoke_root = root if existing is None or existing.own_smoke else existing.smoke_root
        known = (existing.smoke_root if existing else root) / smoke_rel
        if not (smoke_root / smoke_rel).exists() and not known.exists():
            stub = authoring.smoke_stub(patch_id, _modules(paths))
            authoring.write_new(smoke_root / smoke_rel, stub)
            written.append((smoke_root / smoke_rel, None))
    except FileExistsError as exc:
        _undo(written)
        raise CompatkitError(f"{exc.filename} already exists; choose another --id") from None
    except BaseException:
        _undo(written)
        raise
    return written


def _undo(written: list[tuple[Path, str | None]]) -> None:
    for path, old in reversed(written):
        if old is None:
            path.unlink(missing_ok=True)
        else:
            atomic.write_text(path, old)


def _record_applied(
    session: Session,
    ps: Patchset,
    state: State | None,
    bases: dict[str, bytes | None],
    edits: dict[str, bytes | None],
) -> None:
    """One transaction leaving state, backups and RECORD as ``apply`` of ``ps`` would."""
    ov = session.overlay()
    now = time.time_ns()
    for path, base in bases.items():
        ov.write(path, base, now if edits[path] is None and base is not None else None)
    if state is not None:
        stale = plan_revert(ov, state, force=False)
        if stale:
            raise CompatkitError(f"cannot re-record {ps.name}", stale)
    plan_apply(ov, ps, state.excluded if state else [], force=False)
    wrong = [p for p in bases if ov.read(p) != edits[p]]
    if wrong:
        raise CompatkitError(f"{ps.name} applied in memory does not give your edits", wrong)
    session.commit(ov.changes())
