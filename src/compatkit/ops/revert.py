"""Revert a patchset: every original byte back, or a refusal that changes nothing."""

from __future__ import annotations

from compatkit.env.plan import plan_revert
from compatkit.env.session import Session, locate
from compatkit.env.state import State, stacked_on
from compatkit.env.target import Dist, Environment
from compatkit.errors import CompatkitError
from compatkit.load.registry import Registry
from compatkit.model.action import Action
from compatkit.value import Value

TYPE_CHECKING = False

if TYPE_CHECKING:
    from compatkit.env.txn import Change


class RevertResult(Value):
    """``state`` is what was reverted (None: nothing was applied; ``dist`` None: no target)."""

    __slots__ = ("dist", "state", "recovered")

    def __init__(self, dist: Dist | None, state: State | None, recovered: bool = False) -> None:
        self.dist = dist
        self.state = state
        self.recovered = recovered

    def to_json(self, name: str) -> dict[str, object]:
        if self.dist is None or self.state is None:
            return {"ok": True, "patchset": name, "action": Action.NONE, "files": []}
        files = [f.path for f in self.state.files]
        return {"ok": True, "patchset": name, "action": Action.REVERTED, "files": files}


def revert_patchset(
    registry: Registry, env: Environment, name: str, force: bool = False
) -> RevertResult:
    """Open, load, plan, write, report: each one step (compatkit.env.session)."""
    dist = locate(registry, env, name)
    if dist is None:
        return RevertResult(None, None)
    with Session.open(dist) as s:
        state = s.state(name)
        if state is None:
            return RevertResult(dist, None, s.recovered)
        s.commit(_plan(s, state, force))
    return RevertResult(dist, state, s.recovered)


def _plan(s: Session, state: State, force: bool) -> list[Change]:
    """Every original byte back, or the refusal that says why not (nothing written)."""
    name, dist = state.patchset, s.dist
    if state.built_in:
        raise CompatkitError(state.built_in_refusal(dist, "revert"))
    above = stacked_on(state, s.others(name))
    if above:
        raise CompatkitError(
            f"cannot revert {name}: {', '.join(above)} patched the same files on top of it; "
            f"revert {', '.join(above)} first"
        )
    ov = s.overlay()
    problems = plan_revert(ov, state, force)
    if problems and not force:
        raise CompatkitError(
            f"refusing to revert {name}: files changed since the apply (revert --force "
            "restores the originals anyway, losing those changes)",
            problems,
        )
    if problems:
        raise CompatkitError(f"cannot revert {name}", problems)
    return ov.changes()
