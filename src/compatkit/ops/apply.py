"""Apply a patchset: check the target, plan in memory, commit in one transaction (or not)."""

from __future__ import annotations

from compatkit.engine.hunks import SeriesConflict, apply_series
from compatkit.env.checks import requirement_problems, state_problems
from compatkit.env.plan import Overlay, plan_apply, plan_revert
from compatkit.env.session import Session
from compatkit.env.state import State
from compatkit.env.target import Dist, Environment
from compatkit.errors import CompatkitError, UsageError
from compatkit.load.registry import Registry
from compatkit.model.patchset import Patchset
from compatkit.model.results import Action
from compatkit.ops.revert import built_in_refusal
from compatkit.value import Value

TYPE_CHECKING = False  # not typing's: `import typing` moves bench P1 explain 3.95× → 4.24×
if TYPE_CHECKING:
    from typing import Any


class ApplyResult(Value):
    """What an apply did: ``action`` is NONE (already applied), DRY_RUN or APPLIED.

    A slotted class, not a dataclass: ``dataclasses`` imports ``inspect`` (≈ 18 ms of the fixed
    cost of every apply, benchmark P5)."""

    __slots__ = ("patchset", "dist", "action", "state", "replaced", "files", "writes", "recovered")

    def __init__(
        self,
        patchset: Patchset,
        dist: Dist,
        action: Action,
        state: State,
        replaced: State | None = None,  # the applied version this one replaced
        files: dict[str, dict[str, Any]] | None = None,  # path -> patches, offsets
        writes: int = 0,
        recovered: bool = False,
    ) -> None:
        self.patchset, self.dist, self.action, self.state = patchset, dist, action, state
        self.replaced = replaced
        self.files = {} if files is None else files
        self.writes = writes
        self.recovered = recovered


def fitting_dist(ps: Patchset, env: Environment, force: bool) -> Dist:
    """The installed target of ``ps``; raise if it or a requirement does not fit (unless forced)."""
    dist = env.find(ps.distribution)
    problems = requirement_problems(ps, env, dist)
    if dist is None:  # which environment was looked at, and how to target another
        raise CompatkitError(f"{ps.name}: {problems[0]} in {env.describe()}{env.hint()}")
    if problems and not force:  # one line: what does not fit, and the way past it
        raise CompatkitError(
            f"{ps.name} does not fit this environment: {'; '.join(problems)} "
            "(--force applies it anyway)"
        )
    return dist


def apply_patchset(
    registry: Registry,
    env: Environment,
    name: str,
    exclude: list[str],
    force: bool = False,
    dry_run: bool = False,
) -> ApplyResult:
    ps = registry.get(name)
    unknown = [e for e in exclude if ps.patch(e) is None]
    if unknown:
        raise UsageError(f"{ps.name} has no patch {', '.join(unknown)} (ids: {', '.join(ps.ids)})")
    exclude = sorted(set(exclude))
    dist = fitting_dist(ps, env, force)
    with Session.open(dist) as s:
        state = s.state(ps.name)
        if state and state.digest == ps.digest and state.excluded == exclude:
            drift = state_problems(dist, state)
            if drift:
                raise CompatkitError(f"{ps.name} is applied but has drifted", drift)
            return ApplyResult(ps, dist, Action.NONE, state, recovered=s.recovered)
        if state and state.built_in:
            why = built_in_refusal(ps.name, dist, "apply")
            raise CompatkitError(f"{why}, or build the wheel again with compatkit wheel")
        ov = s.overlay()
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
        files = _report(plan.state.offsets, plan.result.touched_by)
        action = Action.DRY_RUN if dry_run else Action.APPLIED
        if not dry_run:
            s.commit(changes)
    return ApplyResult(ps, dist, action, plan.state, state, files, len(changes), s.recovered)


def _exclusion_problem(ov: Overlay, ps: Patchset, exclude: list[str], exc: CompatkitError) -> str:
    """Name the excluded patch a later one needs, when the full series would apply."""
    paths = {fd.path for p in ps.patches for fd in p.files}
    try:
        apply_series({p: ov.read(p) for p in paths}, [(p.id, p.files) for p in ps.patches])
    except SeriesConflict:
        return exc.message
    return f"{exc.message} (it needs the context of excluded {', '.join(exclude)})"


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
