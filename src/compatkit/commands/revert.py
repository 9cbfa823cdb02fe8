"""``compatkit revert PATCHSET``: give back the original install, byte for byte."""

from __future__ import annotations

from compatkit.errors import CompatkitError
from compatkit.output import Output
from compatkit.plan import Overlay, plan_revert
from compatkit.registry import Registry
from compatkit.state import find_applied, load_state
from compatkit.target import Dist, Environment
from compatkit.txn import commit, locked, recover


def locate(registry: Registry, env: Environment, name: str) -> Dist | None:
    """The distribution holding ``name``'s state, else the one the patchset targets."""
    dist = find_applied(env, name)
    if dist is None:
        dist = env.find(registry.get(name).distribution)
    return dist


def revert(
    registry: Registry, env: Environment, name: str, force: bool = False, out: Output | None = None
) -> int:
    out = out or Output()
    dist = locate(registry, env, name)
    out.doc.update(patchset=name)
    if dist is None:
        out.doc.update(ok=True, action="none")
        out.line(f"{name} is not applied here (its target is not installed); nothing to revert")
        return 0
    with locked(dist):
        if recover(dist):
            out.line("recovered an interrupted compatkit run: its changes were rolled back")
        state = load_state(dist, name)
        if state is None:
            out.doc.update(ok=True, action="none")
            out.line(f"{name} is not applied to {dist.name} {dist.version}; nothing to revert")
            return 0
        ov = Overlay(dist)
        problems = plan_revert(ov, state, force)
        if problems and not force:
            raise CompatkitError(
                f"refusing to revert {name}: files changed since the apply",
                problems,
            )
        if problems:
            raise CompatkitError(f"cannot revert {name}", problems)
        commit(dist, ov.changes())
    out.doc.update(ok=True, action="reverted", files=[f.path for f in state.files])
    out.line(
        f"{name}: reverted {len(state.files)} files of {dist.name} {dist.version} "
        "to their original bytes",
        style="green",
    )
    return 0
