"""``compatkit prove PATCHSET``: each smoke test fails without its patch and passes with it
(the three runs per patch: :mod:`compatkit.ops.prove`)."""

from __future__ import annotations

import json
from pathlib import Path

from compatkit import atomic
from compatkit.cli.output import Output
from compatkit.cli.outputs import output_dir
from compatkit.env.target import Environment
from compatkit.errors import CompatkitError
from compatkit.load.registry import Registry
from compatkit.model.results import SmokeState
from compatkit.ops.prove import Proof, prove_patchset
from compatkit.ops.smoke import SmokeResult


def _cell(result: SmokeResult | None) -> str:
    if result is None:
        return "n/a"
    return result.verdict + (f" ({result.reason})" if result.verdict is SmokeState.FAIL else "")


def prove(
    registry: Registry,
    env: Environment,
    name: str,
    report: Path | None = None,
    out: Output | None = None,
) -> int:
    out = out or Output()
    if report is not None:
        output_dir(report, "--report")
    proofs = prove_patchset(registry, env, name, out.line)
    rows = [[p.id, *(_cell(c) for c in p.runs), "ok" if p.ok else "FAIL"] for p in proofs]
    docs: list[dict[str, object]] = [
        {
            "id": p.id,
            "unpatched": p.verdicts[0],
            "without": p.verdicts[1],
            "patched": p.verdicts[2],
            "ok": p.ok,
            "reasons": [c.reason if c else "" for c in p.runs],
            "needs_missing": list(p.needs_missing),
            "needs_unused": list(p.needs_unused),
        }
        for p in proofs
    ]
    bad = [p.id for p in proofs if not p.proven]
    out.doc.update(ok=all(p.ok for p in proofs), patchset=name, patches=docs)
    out.table(
        f"{name}: smoke test per patch (expected fail / fail / pass)",
        ["patch", "unpatched", "all but this patch", "patched", "verdict"],
        rows,
    )
    notes = _needs_notes(proofs)
    for note in notes:
        out.line(note)
    if report is not None:
        _write_report(report, name, docs, rows, notes)
    if bad:
        raise CompatkitError(f"{len(bad)} patch(es) not proven both ways: {', '.join(bad)}")
    missing = [f"{p.id} ({', '.join(p.needs_missing)})" for p in proofs if p.needs_missing]
    if missing:
        raise CompatkitError(
            f"smoke tests that fail without a patch their Smoke-Needs does not name: "
            f"{'; '.join(missing)}"
        )
    out.line(f"{len(proofs)}/{len(proofs)} patches proven: fail / fail / pass", style="green")
    return 0


def _needs_notes(proofs: list[Proof]) -> list[str]:
    """One line per Smoke-Needs finding of the series-but-one runs."""
    notes = []
    for p in proofs:
        for y in p.needs_missing:
            notes.append(
                f"{p.id}: its smoke test also fails without {y} (and passes with the whole "
                f"series): add {y} to its Smoke-Needs"
            )
        for y in p.needs_unused:
            notes.append(f"note: {p.id}: Smoke-Needs names {y}, but its test passes without it")
    return notes


def _write_report(
    folder: Path,
    name: str,
    docs: list[dict[str, object]],
    rows: list[list[str]],
    notes: list[str],
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    atomic.write_text(folder / f"{name}.json", json.dumps(docs, indent=2) + "\n")
    lines = [
        "| patch | unpatched | all but this patch | patched | verdict |",
        "|---|---|---|---|---|",
    ]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    lines += ["", *notes] if notes else []
    atomic.write_text(folder / f"{name}.md", "\n".join(lines) + "\n")
