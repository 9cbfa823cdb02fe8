"""Where each patch of a patchset stands in an environment (``status``, ``explain``, ``list``)."""

from __future__ import annotations

import os
from pathlib import Path

from compatkit import bounded
from compatkit.env.checks import (
    PatchStatus,
    constraint_problems,
    patch_statuses,
    requirement_problems,
)
from compatkit.env.session import Session
from compatkit.env.state import State, load_state
from compatkit.env.target import Dist, Environment
from compatkit.errors import CompatkitError
from compatkit.model.patchset import Patchset
from compatkit.model.results import DiffState, PatchsetState, PatchState
from compatkit.value import Value

TYPE_CHECKING = False

if TYPE_CHECKING:
    from compatkit.load.registry import Registry


class Inspection(Value):
    __slots__ = ("patchset", "dist", "state", "statuses")

    def __init__(
        self,
        patchset: Patchset,
        dist: Dist | None,
        state: State | None,
        statuses: list[PatchStatus],
    ) -> None:
        self.patchset, self.dist, self.state, self.statuses = patchset, dist, state, statuses

    @property
    def summary(self) -> PatchsetState:
        return summarize(self.statuses)


def inspect_patchset(ps: Patchset, env: Environment) -> Inspection:
    dist = env.find(ps.distribution)
    state = None
    if dist is not None:
        with Session.open(dist) as s:
            state = s.state(ps.name)
    return Inspection(ps, dist, state, patch_statuses(ps, env, dist, state))


def not_applicable(found: Inspection) -> str | None:
    """Why the patchset does not apply here, one phrase (``needs vllm>=0.17,<0.18, found vllm
    0.16.0``); None when it applies, or when a record says it was applied (then its patches'
    states matter)."""
    if found.state is not None or found.summary is not PatchsetState.NOT_APPLICABLE:
        return None
    ps = found.patchset
    if found.dist is None:
        return f"needs {ps.target}, not installed"
    return found.statuses[0].detail


def summarize(statuses: list[PatchStatus]) -> PatchsetState:
    """One phrase for the whole patchset, from its patches' statuses."""
    kinds = [s.status for s in statuses]
    if kinds and all(k is PatchState.BUILT_IN for k in kinds):
        return PatchsetState.BUILT_IN
    if kinds and all(k is PatchState.APPLIED for k in kinds):
        return PatchsetState.APPLIED
    if kinds and all(k is PatchState.NOT_APPLICABLE for k in kinds):
        return PatchsetState.NOT_APPLICABLE
    if PatchState.DRIFTED in kinds:
        return PatchsetState.DRIFTED
    if PatchState.APPLIED in kinds or PatchState.BUILT_IN in kinds or PatchState.OUTDATED in kinds:
        excluded = PatchState.EXCLUDED in kinds
        return PatchsetState.PARTLY_APPLIED if excluded else PatchsetState.OUTDATED
    present = [s for s in statuses if s.textual is DiffState.PRESENT]
    if present and len(present) < len(statuses):
        return PatchsetState.PARTLY_PRESENT
    return PatchsetState.PRESENT if present else PatchsetState.NOT_APPLIED


def where(ps: Patchset, env: Environment) -> tuple[Dist | None, PatchState]:
    """For ``list``: APPLIED, BUILT_IN, NOT_APPLIED or NOT_APPLICABLE, without the lock."""
    dist = env.find(ps.distribution)
    state = load_state(dist, ps.name) if dist is not None else None
    if state is not None:
        return dist, PatchState.BUILT_IN if state.built_in else PatchState.APPLIED
    problems = requirement_problems(ps, env, dist)
    return dist, PatchState.NOT_APPLICABLE if problems else PatchState.NOT_APPLIED


def unmet_constraints(ps: Patchset, env: Environment) -> list[str]:
    """The patchset's ``[[constraints]]`` that the environment does not meet, one line each."""
    return constraint_problems(ps, env)


def runtime_served(ps: Patchset, env: Environment) -> str | None:
    """The runtime folder whose ``.pth`` start (``runtime install --pth``) serves ``ps`` to
    every process of ``env``, else None; without such a start, one ``stat`` per site folder."""
    from compatkit.runtime.startfiles import PTH_NAME  # names only

    for base in env.paths:
        pth = os.path.join(base, f"{PTH_NAME}.pth")
        if not os.path.isfile(pth):
            continue
        from compatkit.runtime.install import read_manifest

        try:
            root = bounded.read(pth, bounded.SMALL, head=True).decode().splitlines()[1].strip()
            served = read_manifest(Path(root)).get("patchsets", [])
        except (OSError, UnicodeDecodeError, IndexError, bounded.Refused, CompatkitError):
            continue  # not a start of ours, or a folder runtime status reports on
        if any(isinstance(s, dict) and s.get("name") == ps.name for s in served):
            return root
    return None


def fits(ps: Patchset, env: Environment, dist: Dist) -> bool:
    """Whether ``ps``'s target and requirements are met by ``dist`` in ``env``."""
    return not requirement_problems(ps, env, dist)


class PatchsetStatus(Value):
    """One patchset in ``status``: where its patches stand (``found``), the constraints the
    environment does not meet, why it does not apply here when that is all there is to show
    (``reason``: one line instead of a table), and the next step for a stale patched wheel."""

    __slots__ = ("found", "unmet", "reason", "next_step", "runtime")

    def __init__(
        self,
        found: Inspection,
        unmet: list[str],
        reason: str | None,
        next_step: str | None,
        runtime: str | None = None,  # the runtime folder serving it, when not applied on disk
    ) -> None:
        self.found, self.unmet, self.reason, self.next_step = found, unmet, reason, next_step
        self.runtime = runtime

    def to_json(self) -> dict[str, object]:
        ps, dist, state = self.found.patchset, self.found.dist, self.found.state
        return {
            "name": ps.name,
            "version": ps.version,
            "target": ps.target,
            "installed": dist.version if dist else None,
            "state": self.found.summary,
            "applied_version": state.version if state else None,
            "unmet_constraints": self.unmet,
            "next_step": self.next_step,
            "runtime": self.runtime,
            "patches": [
                {"id": s.id, "status": s.status, "detail": s.detail, "startup_code": s.startup}
                for s in self.found.statuses
            ],
        }


class StatusResult(Value):
    """``status``: each patchset's :class:`PatchsetStatus`, and the installed patched wheels
    the project's dependencies no longer accept (one line each, with the next step)."""

    __slots__ = ("patchsets", "project_mismatches")

    def __init__(self, patchsets: list[PatchsetStatus], project_mismatches: list[str]) -> None:
        self.patchsets, self.project_mismatches = patchsets, project_mismatches

    def to_json(self) -> dict[str, object]:
        return {
            "patchsets": [p.to_json() for p in self.patchsets],
            "project_mismatches": self.project_mismatches,
        }


def status(
    registry: Registry,
    env: Environment,
    names: list[str],
    pyproject: Path | None = None,
    verbose: bool = False,
) -> StatusResult:
    """The patchsets ``names`` (none: every known one); with no name and not ``verbose``, a
    patchset that does not apply here gets its reason instead of its patches' table.
    ``pyproject``: the project whose dependencies an installed patched wheel must still meet."""
    found: list[PatchsetStatus] = []
    wheels: list[str] = []  # distributions installed as patched wheels
    for name in names or registry.names():
        ps = registry.get(name)
        here = inspect_patchset(ps, env)
        reason = None if names or verbose else not_applicable(here)
        hint = None
        if here.dist is not None and "ck." in here.dist.version:  # a patched wheel?
            wheels.append(ps.distribution)
            if here.state is None and here.summary is PatchsetState.NOT_APPLICABLE:
                from compatkit.delivery.wheelpin import stale_wheel

                hint = stale_wheel(here.dist, ps.target)
        served = runtime_served(ps, env) if here.state is None and reason is None else None
        found.append(PatchsetStatus(here, unmet_constraints(ps, env), reason, hint, served))
    moved: list[str] = []
    if pyproject is not None and wheels:
        from compatkit.delivery.wheelpin import project_mismatches

        moved = project_mismatches(pyproject, env, wheels)
    return StatusResult(found, moved)


class Listed(Value):
    """``list``: each known patchset with where it stands here and its source (the project,
    a folder, an installed package), and the name clashes between patchset folders."""

    __slots__ = ("patchsets", "conflicts")

    def __init__(
        self, patchsets: list[tuple[Patchset, PatchState, str]], conflicts: list[str]
    ) -> None:
        self.patchsets, self.conflicts = patchsets, conflicts

    def to_json(self) -> dict[str, object]:
        docs = [
            {
                "name": ps.name,
                "version": ps.version,
                "patches": len(ps.patches),
                "target": ps.target,
                "requires": ps.shown_requires,
                "state": here,
                "path": str(ps.root),
                "source": source,
                "summary": ps.summary,
            }
            for ps, here, source in self.patchsets
        ]
        return {"patchsets": docs, "conflicts": self.conflicts}


def listing(registry: Registry, env: Environment) -> Listed:
    """Every patchset the registry knows, but those whose name two folders claim."""
    clashes = [line for name in registry.names() if (line := registry.conflict(name))]
    found: list[tuple[Patchset, PatchState, str]] = []
    for name in registry.names():
        if registry.conflict(name):
            continue
        ps = registry.get(name)
        found.append((ps, where(ps, env)[1], registry.source(ps)))
    return Listed(found, clashes)
