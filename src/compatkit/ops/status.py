"""Where each patch of a patchset stands in an environment (``status``, ``explain``, ``list``)."""

from __future__ import annotations

from compatkit.env.checks import (
    PatchStatus,
    constraint_problems,
    patch_statuses,
    requirement_problems,
)
from compatkit.env.session import Session
from compatkit.env.state import State, load_state
from compatkit.env.target import Dist, Environment
from compatkit.model.patchset import Patchset
from compatkit.model.results import DiffState, PatchsetState, PatchState
from compatkit.value import Value


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
        return f"needs {ps.distribution}{ps.specifier_text}, not installed"
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


def fits(ps: Patchset, env: Environment, dist: Dist) -> bool:
    """Whether ``ps``'s target and requirements are met by ``dist`` in ``env``."""
    return not requirement_problems(ps, env, dist)
