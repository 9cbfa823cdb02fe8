"""One version-matrix cell: run each patchset the cell's way, compare with its expectations.

A cell works in its own environment (compatkit's, or ``--python``): it starts from a pristine
install, then per mode: ``apply`` (refused: not applicable) or ``force`` applies what applies,
verifies, runs the smoke tests and reverts; ``upstream`` classifies each patch on the
unpatched release (:mod:`compatkit.ops.upstream`). Every entry carries its ``status`` (a
:class:`~compatkit.model.results.MatrixState`) beside the text shown in the report.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from compatkit import atomic
from compatkit.env.checks import requirement_problems, textual_status
from compatkit.env.state import load_state
from compatkit.env.target import Environment
from compatkit.errors import CompatkitError
from compatkit.load.registry import Registry
from compatkit.model.matrix import Cell, find_cell, load_matrix
from compatkit.model.patchset import Patchset
from compatkit.model.progress import NONE, Reporter
from compatkit.model.results import (
    DiffState,
    MatrixState,
    PatchState,
    SmokeState,
    UpstreamState,
    matrix_state,
)
from compatkit.ops import verify
from compatkit.ops.apply import apply_patchset
from compatkit.ops.revert import revert_patchset
from compatkit.ops.smoke import run_smoke, smoke_patches
from compatkit.ops.upstream import classify
from compatkit.value import Value

Entry = dict[str, str]  # id, status, state (as shown), detail, smoke, reason


def fingerprint(env: Environment, ps: Patchset) -> dict[str, str | None]:
    """The hash of every file of the target's RECORD (and RECORD): pristine before = after?"""
    dist = env.find(ps.distribution)
    if dist is None:
        return {}
    rows = dist.read_record().rows
    paths = [r.path for r in rows if not r.path.startswith("..")] + [dist.record_relpath]
    return {p: dist.hash(p) for p in paths}  # streamed: memory does not grow with a file


def _entry(
    pid: str, status: MatrixState, shown: str, detail: str, smoke: SmokeState, why: str
) -> Entry:
    return {
        "id": pid,
        "status": status,
        "state": shown or status,
        "detail": detail,
        "smoke": smoke,
        "reason": why,
    }


def _smoke_entries(
    ps: Patchset, env: Environment, states: Mapping[str, tuple[MatrixState, str, str]]
) -> list[Entry]:
    """``states``: patch id -> (status, text shown for it, detail); in series order."""
    _, smoke = run_smoke(ps, env, smoke_patches(ps, []), show_output=False)
    ordered = sorted(states.items(), key=lambda item: ps.ids.index(item[0]))
    return [
        _entry(pid, status, shown, detail, smoke[pid].verdict, smoke[pid].reason)
        for pid, (status, shown, detail) in ordered
    ]


def _applied_states(env: Environment, ps: Patchset) -> dict[str, tuple[MatrixState, str, str]]:
    state = load_state(env.require(ps.distribution), ps.name)
    assert state is not None
    out: dict[str, tuple[MatrixState, str, str]] = {}
    for p in ps.patches:
        if p.id in state.excluded:
            continue
        moved = [o for offs in state.offsets.get(p.id, {}).values() for o in offs if o]
        shown = f"{PatchState.APPLIED} (offset {moved[0]:+d})" if moved else ""
        out[p.id] = (PatchState.APPLIED, shown, "")
    return out


def _apply_what_applies(
    registry: Registry, env: Environment, ps: Patchset, force: bool
) -> list[Entry]:
    """Apply the patchset (or the part of it that applies); smoke; revert."""
    texts = {s.id: s for s in textual_status(ps, env.require(ps.distribution))}
    skip = [pid for pid, t in texts.items() if t.textual is not DiffState.APPLIES]
    present, port = UpstreamState.UPSTREAM, UpstreamState.NEEDS_PORT
    states: dict[str, tuple[MatrixState, str, str]] = {
        pid: (present if texts[pid].textual is DiffState.PRESENT else port, "", texts[pid].detail)
        for pid in skip
    }
    try:
        apply_patchset(registry, env, ps.name, skip, force=force)
    except CompatkitError as exc:
        rest = [p.id for p in ps.patches if p.id not in skip]
        states.update({pid: (UpstreamState.NEEDS_PORT, "", exc.message) for pid in rest})
        return _smoke_entries(ps, env, states)
    try:
        problems = [] if skip else verify.problems(registry, env, ps.name)
        if problems:
            raise CompatkitError(f"verify failed: {len(problems)} problem(s)", problems)
        states.update(_applied_states(env, ps))
        return _smoke_entries(ps, env, states)
    finally:
        revert_patchset(registry, env, ps.name)


def run_patchset(registry: Registry, env: Environment, ps: Patchset, mode: str) -> list[Entry]:
    dist = env.find(ps.distribution)
    if dist is not None and load_state(dist, ps.name) is not None:
        revert_patchset(registry, env, ps.name)  # start from a pristine install
    if mode == "upstream":
        return [_entry(v.id, v.state, "", v.textual, v.smoke, v.reason) for v in classify(ps, env)]
    problems = requirement_problems(ps, env, dist)
    if dist is None:
        why = "target not installed"
        na = PatchState.NOT_APPLICABLE
        return [_entry(p.id, na, "", problems[0], SmokeState.FAIL, why) for p in ps.patches]
    if problems and mode == "apply":
        states = {p.id: (PatchState.NOT_APPLICABLE, "", problems[0]) for p in ps.patches}
        return _smoke_entries(ps, env, states)
    return _apply_what_applies(registry, env, ps, mode == "force")


def mismatches(cell: Cell, results: dict[str, list[Entry]]) -> list[str]:
    """Every entry whose status or smoke verdict differs from the cell's expectation."""
    found = []
    for ps_name, entries in results.items():
        for e in entries:
            want = cell.expected(ps_name, e["id"])
            if want is None:
                continue
            state, smoke = want
            status = matrix_state(e.get("status") or e["state"].partition(" (")[0])
            if status is not state or smoke not in ("any", e["smoke"]):
                why = e.get("reason") or e.get("detail") or ""
                found.append(
                    f"{ps_name} {e['id']}: expected {state}/{smoke}, got "
                    f"{e['state']}/{e['smoke']}" + (f" ({why})" if why else "")
                )
    return found


class CellRun(Value):
    """One cell's run: the environment it ran in (``python``, ``installed``: each named
    package's version), each patchset's entries, what differs from the cell's expectations
    (``mismatches``) and how long it took."""

    __slots__ = ("cell", "python", "installed", "patchsets", "mismatches", "seconds")

    def __init__(
        self,
        cell: Cell,
        python: str | None,
        installed: dict[str, str | None],
        patchsets: dict[str, list[Entry]],
        mismatches: list[str],
        seconds: float,
    ) -> None:
        self.cell, self.python, self.installed = cell, python, installed
        self.patchsets, self.mismatches, self.seconds = patchsets, mismatches, seconds

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def to_json(self) -> dict[str, Any]:
        """The cell's document, as written to ``<cell>.json`` (the report reads it back)."""
        return {
            "cell": self.cell.id,
            "python": self.python,
            "mode": self.cell.mode,
            "packages": list(self.cell.packages),
            "installed": self.installed,
            "note": self.cell.note,
            "patchsets": self.patchsets,
            "mismatches": self.mismatches,
            "ok": self.ok,
            "seconds": self.seconds,
        }


def run_cell(
    registry: Registry,
    env: Environment,
    matrix: Path,
    cell_id: str,
    out_dir: Path,
    progress: Callable[[str], None] = lambda line: None,
    reporter: Reporter = NONE,
) -> CellRun:
    """Run one cell of ``matrix`` and write its result's document to ``out_dir/<cell>.json``;
    return the result. ``progress`` gets one line per patchset as it starts; ``reporter``
    the patchsets done of the cell's."""
    cell = find_cell(load_matrix(matrix), cell_id)
    started = time.monotonic()
    results: dict[str, list[Entry]] = {}
    pristine: list[str] = []
    with reporter.task(f"cell {cell.id}", total=len(cell.patchsets)) as task:
        for name in cell.patchsets:
            ps = registry.get(name)
            before = fingerprint(env, ps)
            doing = (
                "smoke tests on the unpatched release"
                if cell.mode == "upstream"
                else "applying, smoke tests, reverting"
            )
            progress(f"cell {cell.id}: {name} ({cell.mode}): {doing} ...")
            task.describe(f"cell {cell.id}: {name} ({cell.mode})")
            results[name] = run_patchset(registry, env, ps, cell.mode)
            if fingerprint(env, ps) != before:
                pristine.append(f"{name}: {ps.distribution} is not pristine after the run")
            task.advance()
    bad = mismatches(cell, results) + pristine
    installed = installed_versions(env, cell.packages)
    python = env.markers.get("python_full_version")
    seconds = round(time.monotonic() - started, 1)
    result = CellRun(cell, python, installed, results, bad, seconds)
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic.write_text(out_dir / f"{cell.id}.json", json.dumps(result.to_json(), indent=2) + "\n")
    return result


def installed_versions(env: Environment, packages: Sequence[str]) -> dict[str, str | None]:
    """The installed version of each distribution a cell's ``packages`` name (PEP 508
    requirements: ``pkg~=1.0``, ``pkg[extra]==1``, ``pkg; marker``), None if not installed,
    by name in order. A package that is not a requirement raises :class:`CompatkitError`."""
    from packaging.requirements import InvalidRequirement, Requirement

    names = set()
    for text in packages:
        try:
            names.add(Requirement(text).name)
        except InvalidRequirement as exc:
            raise CompatkitError(f"matrix: package {text!r} is not a requirement: {exc}") from None
    return {n: (d.version if (d := env.find(n)) else None) for n in sorted(names)}


def not_the_cells(packages: list[str], installed: dict[str, str | None]) -> list[str]:
    """How the environment misses the cell's pinned packages (``name==1.0``), one phrase each.

    >>> not_the_cells(["a==1.0", "b==2"], {"a": "1.1", "b": None})
    ['needs a==1.0, found a 1.1', 'needs b==2, not installed']
    """
    from packaging.requirements import InvalidRequirement, Requirement

    found = []
    for pin in packages:
        try:
            req = Requirement(pin)
        except InvalidRequirement:
            continue
        have = installed.get(req.name)
        if have is None:
            found.append(f"needs {pin}, not installed")
        elif not req.specifier.contains(have, prereleases=True):
            found.append(f"needs {pin}, found {req.name} {have}")
    return found


def jobs(matrix: Path) -> dict[str, list[dict[str, str]]]:
    """The GitHub Actions job matrix: {"include": [{"cell": ..., "python": ...}, ...]}."""
    return {"include": [{"cell": c.id, "python": c.python} for c in load_matrix(matrix)]}


def cell_order(matrix: Path) -> list[str]:
    """The cells in the matrix file's order (none when there is no file)."""
    return [c.id for c in load_matrix(matrix)] if matrix.is_file() else []
