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
from compatkit.model import startup_code
from compatkit.model.action import Action
from compatkit.model.patchset import Patchset
from compatkit.value import Value

TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any

    from compatkit.load.config import ProjectConfig


class ApplyResult(Value):
    """What an apply did: ``action`` is NONE (already applied), DRY_RUN or APPLIED.
    ``startup_code``: the declared start-up files it changed (or would), each as
    (patch id, path, kind) (:mod:`compatkit.model.startup_code`), which is never silent."""

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

    @property
    def startup_code(self) -> list[tuple[str, str, str]]:
        if self.action is Action.NONE:
            return []
        chosen = [p for p in self.patchset.patches if p.id in self.state.applied]
        return [(p.id, path, kind) for p in chosen for path, kind in startup_code.files(p)]

    def startup_warning(self) -> str | None:
        """The one line that says start-up code changed (None: none did)."""
        found = self.startup_code
        if not found:
            return None
        what = "; ".join(f"{i} {startup_code.VERBS[k]} {p}" for i, p, k in found)
        verb = "would change" if self.action is Action.DRY_RUN else "changed"
        return (
            f"warning: {self.patchset.name} {verb} start-up code, which runs at every "
            f"interpreter start: {what} (declared in [patchset] {startup_code.KEY})"
        )

    def replacing(self) -> str:
        """Why an applied state was replaced: another version, an edit, or other exclusions."""
        replaced, ps = self.replaced, self.patchset
        if replaced is None:
            return ""
        if replaced.digest == ps.digest:  # the same patchset: only the excluded set changed
            was = ", ".join(replaced.excluded) or "nothing"
            return f" (replacing the applied {replaced.version}, which excluded {was})"
        if replaced.version == ps.version:
            return f" (replacing the applied {replaced.version}: the patchset was edited since)"
        return f" (replacing {replaced.version})"

    def to_json(self) -> dict[str, Any]:
        ps, state, dry_run = self.patchset, self.state, self.action is Action.DRY_RUN
        return {
            "ok": True,
            "patchset": ps.name,
            "version": ps.version,
            "distribution": self.dist.name,
            "dry_run": dry_run,
            "action": self.action,
            "would_apply" if dry_run else "applied": state.applied,
            "startup_code": [
                {"patchset": ps.name, "patch": i, "path": p, "change": k}
                for i, p, k in self.startup_code
            ],
            "files": self.files,  # empty when it was applied already (action none)
            "excluded": state.excluded,
            "replaced_version": self.replaced.version if self.replaced else None,
        }


class ProjectApplyResult(Value):
    """``apply`` with no name: one :class:`ApplyResult` per patchset of the project's set that
    fits here, and the notes on those left out (:meth:`compatkit.ops.project.Selection.notices`)."""

    __slots__ = ("results", "notes", "skipped", "dry_run")

    def __init__(
        self,
        results: list[ApplyResult],
        notes: list[tuple[str, str | None]],
        skipped: list[dict[str, str]],
        dry_run: bool,
    ) -> None:
        self.results, self.notes, self.skipped, self.dry_run = results, notes, skipped, dry_run

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": True,
            "dry_run": self.dry_run,
            "patchsets": [r.to_json() for r in self.results],
            "skipped": self.skipped,
        }


def apply_project(
    config: ProjectConfig, registry: Registry, env: Environment, force: bool, dry_run: bool
) -> ProjectApplyResult:
    """Every patchset of the project's ``[tool.compatkit]`` table that fits this environment."""
    from compatkit.ops.project import select

    selection = select(config, registry, env)
    results = [apply_patchset(registry, env, n, [], force, dry_run) for n in selection.chosen]
    return ProjectApplyResult(results, selection.notices(), selection.skipped_doc(), dry_run)


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
    needy = ps.needing(exclude)
    if needy:
        raise UsageError(
            f"{ps.name}: {', '.join(needy)} cannot go without {', '.join(exclude)} "
            f"(its Needs: field): exclude {', '.join(needy)} too"
        )
    dist = fitting_dist(ps, env, force)
    with Session.open(dist) as s:
        state = s.state(ps.name)
        if state and state.digest == ps.digest and state.excluded == exclude:
            drift = state_problems(dist, state)
            if drift:
                raise CompatkitError(f"{ps.name} is applied but has drifted", drift)
            return ApplyResult(ps, dist, Action.NONE, state, recovered=s.recovered)
        if state and state.built_in:
            why = state.built_in_refusal(dist, "apply")
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
    paths = {path for p in ps.patches for fd in p.files for path in fd.paths}
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
