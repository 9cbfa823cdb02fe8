"""``compatkit matrix run|report|jobs``: one version-matrix cell, the report, CI's job list.

``run`` works in the environment of the cell (compatkit's own, or ``--python``): it starts
from a pristine install, applies each patchset, verifies, runs the smoke tests, reverts and
checks the install is pristine again; then compares every patch with the cell's expectation.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from compatkit import atomic
from compatkit.checks import requirement_problems, textual_status
from compatkit.commands.apply import apply
from compatkit.commands.revert import revert
from compatkit.commands.smoke import _select, run_smoke
from compatkit.commands.upstream import classify
from compatkit.commands.verify import verify
from compatkit.errors import CompatkitError
from compatkit.matrix import Cell, find_cell, load_matrix
from compatkit.output import Output
from compatkit.patchset import Patchset
from compatkit.records import hash_bytes
from compatkit.registry import Registry
from compatkit.state import load_state
from compatkit.target import Environment

Entry = dict[str, str]


def _fingerprint(env: Environment, ps: Patchset) -> dict[str, str | None]:
    dist = env.find(ps.distribution)
    if dist is None:
        return {}
    rows = dist.read_record().rows
    paths = [r.path for r in rows if not r.path.startswith("..")] + [dist.record_relpath]
    return {p: (hash_bytes(d) if (d := dist.read(p)) is not None else None) for p in paths}


def _smoke_entries(
    ps: Patchset, env: Environment, states: dict[str, tuple[str, str]]
) -> list[Entry]:
    _, smoke = run_smoke(ps, env, _select(ps, []), show_output=False)
    return [
        {
            "id": pid,
            "state": state,
            "detail": detail,
            "smoke": smoke[pid].verdict,
            "reason": smoke[pid].reason,
        }
        for pid, (state, detail) in states.items()
    ]


def _applied_states(env: Environment, ps: Patchset) -> dict[str, tuple[str, str]]:
    dist = env.require(ps.distribution)
    state = load_state(dist, ps.name)
    assert state is not None
    out = {}
    for p in ps.patches:
        if p.id in state.excluded:
            continue
        moved = [o for offs in state.offsets.get(p.id, {}).values() for o in offs if o]
        out[p.id] = (f"applied (offset {moved[0]:+d})" if moved else "applied", "")
    return out


def _apply_what_applies(
    registry: Registry, env: Environment, ps: Patchset, force: bool, quiet: Output
) -> list[Entry]:
    """Apply the patchset (or the part of it that applies); smoke; revert."""
    texts = {s.id: s.detail for s in textual_status(ps, env.require(ps.distribution))}
    skip = [pid for pid, t in texts.items() if not t.startswith("applies")]
    states = {
        pid: ("upstream" if "present" in texts[pid] else "needs port", texts[pid]) for pid in skip
    }
    try:
        apply(registry, env, ps.name, skip, force=force, out=quiet)
    except CompatkitError as exc:
        states.update({p.id: ("needs port", exc.message) for p in ps.patches if p.id not in skip})
        return _smoke_entries(ps, env, dict(sorted(states.items(), key=_order(ps))))
    try:
        if not skip:
            verify(registry, env, [ps.name], out=quiet)
        states.update(_applied_states(env, ps))
        return _smoke_entries(ps, env, dict(sorted(states.items(), key=_order(ps))))
    finally:
        revert(registry, env, ps.name, out=quiet)


def _order(ps: Patchset) -> Any:
    ids = ps.ids
    return lambda item: ids.index(item[0])


def run_patchset(registry: Registry, env: Environment, ps: Patchset, mode: str) -> list[Entry]:
    quiet = Output(json_mode=True)
    dist = env.find(ps.distribution)
    if dist is not None and load_state(dist, ps.name) is not None:
        revert(registry, env, ps.name, out=quiet)  # start from a pristine install
    if mode == "upstream":
        return [
            {
                "id": v.id,
                "state": v.state,
                "smoke": v.smoke,
                "detail": v.textual,
                "reason": v.reason,
            }
            for v in classify(ps, env)
        ]
    problems = requirement_problems(ps, env, dist)
    if dist is None:
        return [
            {
                "id": p.id,
                "state": "not applicable",
                "smoke": "fail",
                "detail": problems[0],
                "reason": "target not installed",
            }
            for p in ps.patches
        ]
    if problems and mode == "apply":
        return _smoke_entries(ps, env, {p.id: ("not applicable", problems[0]) for p in ps.patches})
    return _apply_what_applies(registry, env, ps, mode == "force", quiet)


def mismatches(cell: Cell, results: dict[str, list[Entry]]) -> list[str]:
    found = []
    for ps_name, entries in results.items():
        for e in entries:
            want = cell.expected(ps_name, e["id"])
            if want is None:
                continue
            state, smoke = want
            if not e["state"].startswith(state) or smoke not in ("any", e["smoke"]):
                why = e.get("reason") or e.get("detail") or ""
                found.append(
                    f"{ps_name} {e['id']}: expected {state}/{smoke}, got "
                    f"{e['state']}/{e['smoke']}" + (f" ({why})" if why else "")
                )
    return found


def run(
    registry: Registry,
    env: Environment,
    matrix: Path,
    cell_id: str,
    out_dir: Path,
    out: Output | None = None,
) -> int:
    out = out or Output()
    cell = find_cell(load_matrix(matrix), cell_id)
    started = time.monotonic()
    results: dict[str, list[Entry]] = {}
    pristine: list[str] = []
    for name in cell.patchsets:
        ps = registry.get(name)
        before = _fingerprint(env, ps)
        results[name] = run_patchset(registry, env, ps, cell.mode)
        if _fingerprint(env, ps) != before:
            pristine.append(f"{name}: {ps.distribution} is not pristine after the run")
    bad = mismatches(cell, results) + pristine
    installed = {
        n: (d.version if (d := env.find(n)) else None)
        for n in sorted({p.split("=")[0].split("<")[0].split(">")[0] for p in cell.packages})
    }
    doc = {
        "cell": cell.id,
        "python": env.markers.get("python_full_version"),
        "mode": cell.mode,
        "packages": list(cell.packages),
        "installed": installed,
        "note": cell.note,
        "patchsets": results,
        "mismatches": bad,
        "ok": not bad,
        "seconds": round(time.monotonic() - started, 1),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic.write_text(out_dir / f"{cell.id}.json", json.dumps(doc, indent=2) + "\n")
    out.doc.update(doc)
    for name, entries in results.items():
        out.table(
            f"cell {cell.id}: {name} ({cell.mode})",
            ["patch", "state", "smoke", "detail"],
            [
                [e["id"], e["state"], e["smoke"], e.get("reason") or e.get("detail", "")]
                for e in entries
            ],
        )
    if bad:
        raise CompatkitError(f"cell {cell.id} differs from matrix.toml", bad)
    out.line(f"cell {cell.id}: every patch as expected ({doc['seconds']} s)", style="green")
    return 0


def jobs(matrix: Path, out: Output | None = None) -> int:
    """The GitHub Actions job matrix: {"include": [{"cell": ..., "python": ...}, ...]}."""
    out = out or Output()
    include = [{"cell": c.id, "python": c.python} for c in load_matrix(matrix)]
    print(json.dumps({"include": include}))
    return 0
