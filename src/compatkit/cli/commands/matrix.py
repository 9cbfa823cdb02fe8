"""``compatkit matrix run|report|jobs``: one version-matrix cell, the report, CI's job list.

``run`` works in the environment of the cell (compatkit's own, or ``--python``): it starts
from a pristine install, applies each patchset, verifies, runs the smoke tests, reverts and
checks the install is pristine again; then compares every patch with the cell's expectation.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from compatkit import atomic
from compatkit.cli.output import Output
from compatkit.cli.outputs import output_dir
from compatkit.env.target import Environment
from compatkit.errors import CompatkitError
from compatkit.load.registry import Registry
from compatkit.model.matrix import find_cell, load_matrix
from compatkit.ops.matrix import Entry, fingerprint, mismatches, run_patchset


def run(
    registry: Registry,
    env: Environment,
    matrix: Path,
    cell_id: str,
    out_dir: Path,
    out: Output | None = None,
) -> int:
    out = out or Output()
    output_dir(out_dir, "--results")
    cell = find_cell(load_matrix(matrix), cell_id)
    started = time.monotonic()
    results: dict[str, list[Entry]] = {}
    pristine: list[str] = []
    for name in cell.patchsets:
        ps = registry.get(name)
        before = fingerprint(env, ps)
        doing = (
            "smoke tests on the unpatched release"
            if cell.mode == "upstream"
            else "applying, smoke tests, reverting"
        )
        out.line(f"cell {cell.id}: {name} ({cell.mode}): {doing} ...")
        results[name] = run_patchset(registry, env, ps, cell.mode)
        if fingerprint(env, ps) != before:
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
