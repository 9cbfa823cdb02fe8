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
from compatkit.model.results import Status
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
    def summary(self) -> str:
        return summarize(self.statuses)


def inspect_patchset(ps: Patchset, env: Environment) -> Inspection:
    dist = env.find(ps.distribution)
    state = None
    if dist is not None:
        with Session.open(dist) as s:
            state = s.state(ps.name)
    return Inspection(ps, dist, state, patch_statuses(ps, env, dist, state))


def summarize(statuses: list[PatchStatus]) -> str:
    """One phrase for the whole patchset, from its patches' statuses."""
    kinds = [s.status for s in statuses]
    if kinds and all(k is Status.BUILT_IN for k in kinds):
        return "applied (built in)"
    if kinds and all(k is Status.APPLIED for k in kinds):
        return "applied"
    if kinds and all(k is Status.NOT_APPLICABLE for k in kinds):
        return "not applicable"
    if Status.DRIFTED in kinds:
        return "drifted"
    if Status.APPLIED in kinds or Status.BUILT_IN in kinds or Status.OUTDATED in kinds:
        return "partly applied" if Status.EXCLUDED in kinds else "outdated"
    present = [s for s in statuses if s.textual is Status.PRESENT]
    if present and len(present) < len(statuses):
        return "partly applied (without compatkit)"
    return "already present" if present else "not applied"


def where(ps: Patchset, env: Environment) -> tuple[Dist | None, Status]:
    """For ``list``: APPLIED, BUILT_IN, NOT_APPLIED or NOT_APPLICABLE, without the lock."""
    dist = env.find(ps.distribution)
    state = load_state(dist, ps.name) if dist is not None else None
    if state is not None:
        return dist, Status.BUILT_IN if state.built_in else Status.APPLIED
    problems = requirement_problems(ps, env, dist)
    return dist, Status.NOT_APPLICABLE if problems else Status.NOT_APPLIED


def unmet_constraints(ps: Patchset, env: Environment) -> list[str]:
    """The patchset's ``[[constraints]]`` that the environment does not meet, one line each."""
    return constraint_problems(ps, env)


def fits(ps: Patchset, env: Environment, dist: Dist) -> bool:
    """Whether ``ps``'s target and requirements are met by ``dist`` in ``env``."""
    return not requirement_problems(ps, env, dist)
