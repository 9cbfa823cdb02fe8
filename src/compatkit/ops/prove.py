"""Prove a patchset: each smoke test fails without its patch and passes with it.

For every patch three runs are compared: nothing applied, the whole series but this patch
(``apply --exclude``), and the whole series. The expected row is fail / fail / pass. The
environment is pristine before and after.

The series-but-one runs run every smoke test, not only the left-out patch's, and so also
check each patch's ``Smoke-Needs``: a test that fails without another patch (and passes with
the whole series) must name it, or a report on a release where that patch is missing would
blame the wrong patch; a named need whose absence the test passes is reported as unused.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from compatkit import atomic
from compatkit.env.state import load_state
from compatkit.env.target import Environment
from compatkit.errors import CompatkitError
from compatkit.load.registry import Registry
from compatkit.model.results import SmokeState
from compatkit.ops.apply import apply_patchset
from compatkit.ops.revert import revert_patchset
from compatkit.ops.smoke import SmokeResult, require_pytest, run_smoke, smoke_patches
from compatkit.value import Value

EXPECTED = (SmokeState.FAIL, SmokeState.FAIL, SmokeState.PASS)


class Proof(Value):
    """One patch's three runs: unpatched, the series without it, the whole series."""

    __slots__ = ("id", "runs", "needs_missing", "needs_unused")

    def __init__(
        self,
        id: str,
        runs: tuple[SmokeResult | None, ...],
        needs_missing: tuple[str, ...] = (),
        needs_unused: tuple[str, ...] = (),
    ) -> None:
        self.id = id
        self.runs = runs  # None: the series could not be applied without this patch
        self.needs_missing = needs_missing  # its test fails without these; Smoke-Needs omits them
        self.needs_unused = needs_unused  # named in Smoke-Needs; its test passes without them

    @property
    def verdicts(self) -> tuple[str, ...]:
        return tuple(str(r.verdict) if r else "n/a" for r in self.runs)

    @property
    def proven(self) -> bool:
        """fail / fail / pass: the smoke test fails without the patch and passes with it."""
        return self.verdicts == tuple(str(e) for e in EXPECTED)

    @property
    def ok(self) -> bool:
        return self.proven and not self.needs_missing


def prove_patchset(
    registry: Registry, env: Environment, name: str, progress: Callable[[str], None]
) -> list[Proof]:
    """Run the three rounds; ``progress`` is told each step as one line."""
    ps = registry.get(name)
    patches = smoke_patches(ps, [])
    require_pytest(env, ps)
    dist = env.require(ps.distribution)
    if load_state(dist, ps.name) is not None:
        raise CompatkitError(f"{ps.name} is applied; revert it before proving")
    progress(f"[1/3] smoke tests on unpatched {dist.name} {dist.version}")
    _, unpatched = run_smoke(ps, env, patches, show_output=False)
    without: dict[str, dict[str, SmokeResult] | None] = {}
    for i, patch in enumerate(patches, 1):
        progress(f"[2/3] ({i}/{len(patches)}) whole series except {patch.id}")
        try:
            apply_patchset(registry, env, ps.name, [patch.id])
        except CompatkitError as exc:
            progress(f"      cannot apply without {patch.id}: {exc.message}")
            without[patch.id] = None
            continue
        try:
            without[patch.id] = run_smoke(ps, env, patches, show_output=False)[1]
        finally:
            revert_patchset(registry, env, ps.name)
    progress("[3/3] whole series applied")
    apply_patchset(registry, env, ps.name, [])
    try:
        _, patched = run_smoke(ps, env, patches, show_output=False)
    finally:
        revert_patchset(registry, env, ps.name)
    proofs = []
    for p in patches:
        others = {y: runs[p.id] for y, runs in without.items() if runs is not None and y != p.id}
        failed = [y for y, r in others.items() if r.verdict is SmokeState.FAIL]
        # a test that fails with the whole series too fails for its own reason, not a need's
        passes = patched[p.id].verdict is SmokeState.PASS
        missing = tuple(y for y in failed if passes and y not in p.smoke_needs)
        unused = tuple(y for y in p.smoke_needs if y in others and y not in failed)
        own = without[p.id]
        runs = (unpatched[p.id], None if own is None else own[p.id], patched[p.id])
        proofs.append(Proof(p.id, runs, missing, unused))
    return proofs


def _cell(result: SmokeResult | None) -> str:
    if result is None:
        return "n/a"
    return result.verdict + (f" ({result.reason})" if result.verdict is SmokeState.FAIL else "")


class ProveResult(Value):
    """Every patch's :class:`Proof`, with the table's ``rows`` and the Smoke-Needs ``notes``
    as the terminal and the report show them."""

    __slots__ = ("patchset", "proofs", "rows", "notes")

    def __init__(self, patchset: str, proofs: list[Proof]) -> None:
        self.patchset, self.proofs = patchset, proofs
        self.rows = [[p.id, *(_cell(c) for c in p.runs), "ok" if p.ok else "FAIL"] for p in proofs]
        self.notes = _needs_notes(proofs)

    def patches(self) -> list[dict[str, object]]:
        return [
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
            for p in self.proofs
        ]

    def to_json(self) -> dict[str, object]:
        ok = all(p.ok for p in self.proofs)
        return {"ok": ok, "patchset": self.patchset, "patches": self.patches()}


def prove(
    registry: Registry,
    env: Environment,
    name: str,
    output: Path | None,
    progress: Callable[[str], None],
) -> ProveResult:
    """:func:`prove_patchset`, and with ``output`` (``-o``) the table written there as
    ``<name>.json`` and ``<name>.md``."""
    result = ProveResult(name, prove_patchset(registry, env, name, progress))
    if output is not None:
        _write_report(output, result)
    return result


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


def _write_report(folder: Path, result: ProveResult) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    name = result.patchset
    atomic.write_text(folder / f"{name}.json", json.dumps(result.patches(), indent=2) + "\n")
    lines = [
        "| patch | unpatched | all but this patch | patched | verdict |",
        "|---|---|---|---|---|",
    ]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in result.rows]
    lines += ["", *result.notes] if result.notes else []
    atomic.write_text(folder / f"{name}.md", "\n".join(lines) + "\n")
