"""``compatkit revert PATCHSET``: give back the original install, byte for byte
(:mod:`compatkit.ops.revert`)."""

from __future__ import annotations

from compatkit.cli import options

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from compatkit.cli.context import Context


def add_arguments(parser: ArgumentParser) -> None:
    options.patchset(parser)
    options.force(parser, "restore even files edited after apply")


def run(args: Namespace, ctx: Context) -> int:
    from compatkit.ops.revert import revert_patchset

    name, out = args.patchset, ctx.out
    result = revert_patchset(ctx.registry, ctx.env, name, args.force)
    out.result(result.to_json(name))
    dist, state = result.dist, result.state
    if result.recovered:
        out.line("recovered an interrupted compatkit run: its changes were rolled back")
    if dist is None:
        out.line(f"{name} is not applied here (its target is not installed); nothing to revert")
    elif state is None:
        out.line(f"{name} is not applied to {dist.name} {dist.version}; nothing to revert")
    else:
        out.line(
            f"{name}: reverted {len(state.files)} files of {dist.name} {dist.version} "
            "to their original bytes",
            style="green",
        )
    return 0
