"""``compatkit constraints PATCHSET``: the patchset's ``[[constraints]]`` as a file for
``pip/uv install -c`` (:mod:`compatkit.ops.constraints`)."""

from __future__ import annotations

from compatkit.cli import options

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from compatkit.cli.context import Context


def add_arguments(parser: ArgumentParser) -> None:
    options.patchset(parser)


def run(args: Namespace, ctx: Context) -> int:
    from compatkit.ops.constraints import constraints

    result = constraints(ctx.registry, args.patchset)
    ctx.out.result(result.to_json())
    if not ctx.out.json_mode:
        print(result.text(), end="")
    return 0
