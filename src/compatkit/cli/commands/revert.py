"""``compatkit revert PATCHSET``: give back the original install, byte for byte."""

from __future__ import annotations

from compatkit.cli.output import Output
from compatkit.env.target import Environment
from compatkit.load.registry import Registry
from compatkit.model.results import Action
from compatkit.ops.revert import revert_patchset


def revert(
    registry: Registry, env: Environment, name: str, force: bool = False, out: Output | None = None
) -> int:
    out = out or Output()
    out.doc.update(patchset=name)
    result = revert_patchset(registry, env, name, force)
    dist, state = result.dist, result.state
    if result.recovered:
        out.line("recovered an interrupted compatkit run: its changes were rolled back")
    if dist is None:
        out.doc.update(ok=True, action=Action.NONE)
        out.line(f"{name} is not applied here (its target is not installed); nothing to revert")
        return 0
    if state is None:
        out.doc.update(ok=True, action=Action.NONE)
        out.line(f"{name} is not applied to {dist.name} {dist.version}; nothing to revert")
        return 0
    out.doc.update(ok=True, action=Action.REVERTED, files=[f.path for f in state.files])
    out.line(
        f"{name}: reverted {len(state.files)} files of {dist.name} {dist.version} "
        "to their original bytes",
        style="green",
    )
    return 0
