"""``compatkit apply PATCHSET``: all-or-nothing, idempotent, journaled."""

from __future__ import annotations

from compatkit import startup_code
from compatkit.checks import requirement_problems, state_problems
from compatkit.engine import SeriesConflict, apply_series
from compatkit.errors import CompatkitError, UsageError
from compatkit.output import Output
from compatkit.patchset import Patchset
from compatkit.plan import Overlay, plan_apply, plan_revert
from compatkit.registry import Registry
from compatkit.state import load_state
from compatkit.target import Environment
from compatkit.txn import commit, locked, recover

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _exclusion_problem(ov: Overlay, ps: Patchset, exclude: list[str], exc: CompatkitError) -> str:
    """Name the excluded patch a later one needs, when the full series would apply."""
    paths = {fd.path for p in ps.patches for fd in p.files}
    try:
        apply_series({p: ov.read(p) for p in paths}, [(p.id, p.files) for p in ps.patches])
    except SeriesConflict:
        return exc.message
    return f"{exc.message} (it needs the context of excluded {', '.join(exclude)})"


def apply(
    registry: Registry,
    env: Environment,
    name: str,
    exclude: list[str],
    force: bool = False,
    dry_run: bool = False,
    out: Output | None = None,
) -> int:
    out = out or Output()
    ps = registry.get(name)
    unknown = [e for e in exclude if ps.patch(e) is None]
    if unknown:
        raise UsageError(f"{ps.name} has no patch {', '.join(unknown)} (ids: {', '.join(ps.ids)})")
    exclude = sorted(set(exclude))
    dist = env.find(ps.distribution)
    problems = requirement_problems(ps, env, dist)
    if dist is None:
        raise CompatkitError(f"{ps.name}: {problems[0]}")
    if problems and not force:
        raise CompatkitError(
            f"{ps.name} does not fit this environment: {problems[0]}", problems[1:]
        )
    out.doc.update(patchset=ps.name, version=ps.version, distribution=dist.name, dry_run=dry_run)
    with locked(dist):
        if recover(dist):
            out.line("recovered an interrupted compatkit run: its changes were rolled back")
        state = load_state(dist, ps.name)
        if state and state.digest == ps.digest and state.excluded == exclude:
            drift = state_problems(dist, state)
            if drift:
                raise CompatkitError(f"{ps.name} is applied but has drifted", drift)
            out.doc.update(ok=True, action="none", applied=state.applied)
            out.line(f"{ps.name} {ps.version} is already applied to {dist.name} {dist.version}")
            return 0
        ov = Overlay(dist)
        if state:
            stale = plan_revert(ov, state, force=False)
            if stale:
                raise CompatkitError(f"cannot replace the applied {ps.name} {state.version}", stale)
        try:
            plan = plan_apply(ov, ps, exclude, force)
        except CompatkitError as exc:
            if exclude and not exc.problems:
                raise CompatkitError(_exclusion_problem(ov, ps, exclude, exc)) from None
            raise
        changes = ov.changes()
        report = _report(plan.state.offsets, plan.result.touched_by)
        out.doc.update(
            ok=True,
            action="dry-run" if dry_run else "applied",
            files=report,
            applied=plan.state.applied,
            excluded=exclude,
            replaced_version=state.version if state else None,
        )
        _warn_startup(out, ps, plan.state.applied, dry_run)
        verb = "would apply" if dry_run else "applied"
        shown = [(p, i) for p, i in report.items() if len(report) <= 20 or i["offsets"]]
        for path, info in shown:
            out.line(f"  {path}: {', '.join(info['patches'])}{info['note']}")
        if len(shown) < len(report):
            out.line(f"  ... and {len(report) - len(shown)} more files (--json lists them all)")
        if dry_run:
            out.line(
                f"{ps.name}: {verb} {len(plan.state.applied)} patches "
                f"({len(changes)} writes); nothing was changed"
            )
            return 0
        commit(dist, changes)
    again = f" (replacing {state.version})" if state else ""
    left = f", excluded {', '.join(exclude)}" if exclude else ""
    out.line(
        f"{ps.name} {ps.version}: {verb} {len(plan.state.applied)} patches to "
        f"{dist.name} {dist.version}{again}{left}",
        style="green",
    )
    return 0


def _warn_startup(out: Output, ps: Patchset, applied: list[str], dry_run: bool) -> None:
    """Declared start-up code is applied, but never silently (compatkit.startup_code)."""
    chosen = [p for p in ps.patches if p.id in applied]
    found = [(p.id, path, kind) for p in chosen for path, kind in startup_code.files(p)]
    entries = [{"patchset": ps.name, "patch": i, "path": p, "change": k} for i, p, k in found]
    out.doc.setdefault("startup_code", []).extend(entries)  # `apply` without a name: several
    if found:
        what = "; ".join(f"{i} {startup_code.VERBS[k]} {p}" for i, p, k in found)
        verb = "would change" if dry_run else "changed"
        out.line(
            f"warning: {ps.name} {verb} start-up code, which runs at every interpreter start: "
            f"{what} (declared in [patchset] {startup_code.KEY})",
            style="yellow",
        )


def _report(
    offsets: dict[str, dict[str, list[int]]], touched: dict[str, list[str]]
) -> dict[str, dict[str, Any]]:
    report: dict[str, dict[str, Any]] = {}
    for path, patch_ids in touched.items():
        moved = [
            f"{pid} hunk {i + 1} offset {o:+d}"
            for pid in patch_ids
            for i, o in enumerate(offsets.get(pid, {}).get(path, []))
            if o
        ]
        report[path] = {
            "patches": patch_ids,
            "offsets": moved,
            "note": f" ({'; '.join(moved)})" if moved else "",
        }
    return report
