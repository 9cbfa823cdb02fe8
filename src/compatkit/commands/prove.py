"""``compatkit prove PATCHSET``: each smoke test fails without its patch and passes with it.

For every patch three runs are compared: nothing applied, the whole series but this patch
(``apply --exclude``), and the whole series. The expected row is fail / fail / pass. The
environment is pristine before and after (checked against RECORD).
"""

from __future__ import annotations

import json
from pathlib import Path

from compatkit import atomic
from compatkit.commands.apply import apply
from compatkit.commands.revert import revert
from compatkit.commands.smoke import SmokeResult, _require_pytest, _select, run_smoke
from compatkit.errors import CompatkitError
from compatkit.output import Output
from compatkit.registry import Registry
from compatkit.state import load_state
from compatkit.target import Environment

EXPECTED = ("fail", "fail", "pass")


def _cell(result: SmokeResult | None) -> str:
    if result is None:
        return "n/a"
    return result.verdict + (f" ({result.reason})" if result.verdict == "fail" else "")


def prove(
    registry: Registry,
    env: Environment,
    name: str,
    report: Path | None = None,
    out: Output | None = None,
) -> int:
    out = out or Output()
    ps = registry.get(name)
    patches = _select(ps, [])
    _require_pytest(env)
    dist = env.require(ps.distribution)
    if load_state(dist, ps.name) is not None:
        raise CompatkitError(f"{ps.name} is applied; revert it before proving")
    quiet = Output(json_mode=True)
    out.line(f"[1/3] smoke tests on unpatched {dist.name} {dist.version}")
    _, unpatched = run_smoke(ps, env, patches, show_output=False)
    without: dict[str, SmokeResult | None] = {}
    for i, patch in enumerate(patches, 1):
        out.line(f"[2/3] ({i}/{len(patches)}) whole series except {patch.id}")
        try:
            apply(registry, env, ps.name, [patch.id], out=quiet)
        except CompatkitError as exc:
            out.line(f"      cannot apply without {patch.id}: {exc.message}")
            without[patch.id] = None
            continue
        try:
            without[patch.id] = run_smoke(ps, env, [patch], show_output=False)[1][patch.id]
        finally:
            revert(registry, env, ps.name, out=quiet)
    out.line("[3/3] whole series applied")
    apply(registry, env, ps.name, [], out=quiet)
    try:
        _, patched = run_smoke(ps, env, patches, show_output=False)
    finally:
        revert(registry, env, ps.name, out=quiet)
    rows, docs, bad = [], [], []
    for p in patches:
        cells = (unpatched[p.id], without[p.id], patched[p.id])
        verdicts = tuple(c.verdict if c else "n/a" for c in cells)
        ok = verdicts == EXPECTED
        if not ok:
            bad.append(p.id)
        rows.append([p.id, *(_cell(c) for c in cells), "ok" if ok else "FAIL"])
        docs.append(
            {
                "id": p.id,
                "unpatched": verdicts[0],
                "without": verdicts[1],
                "patched": verdicts[2],
                "ok": ok,
                "reasons": [c.reason if c else "" for c in cells],
            }
        )
    out.doc.update(ok=not bad, patchset=ps.name, patches=docs)
    out.table(
        f"{ps.name}: smoke test per patch (expected fail / fail / pass)",
        ["patch", "unpatched", "all but this patch", "patched", "verdict"],
        rows,
    )
    if report is not None:
        _write_report(report, ps.name, docs, rows)
    if bad:
        raise CompatkitError(f"{len(bad)} patch(es) not proven both ways: {', '.join(bad)}")
    out.line(f"{len(patches)}/{len(patches)} patches proven: fail / fail / pass", style="green")
    return 0


def _write_report(
    folder: Path, name: str, docs: list[dict[str, object]], rows: list[list[str]]
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    atomic.write_text(folder / f"{name}.json", json.dumps(docs, indent=2) + "\n")
    lines = [
        "| patch | unpatched | all but this patch | patched | verdict |",
        "|---|---|---|---|---|",
    ]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    atomic.write_text(folder / f"{name}.md", "\n".join(lines) + "\n")
