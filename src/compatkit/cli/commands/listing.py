"""``compatkit list``: the known patchsets, where each comes from and whether it applies here
(:mod:`compatkit.ops.status`)."""

from __future__ import annotations

from compatkit.cli.output import Output
from compatkit.ops import status as ops

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from compatkit.cli.context import Context


def add_arguments(parser: ArgumentParser) -> None:
    """``list`` takes only the global options."""


def list_patchsets(listed: ops.Listed, out: Output) -> int:
    out.result(listed.to_json())
    rows = [
        [
            ps.name,
            ps.version,
            ps.target,
            ", ".join(ps.shown_requires),
            str(len(ps.patches)),
            str(here),
            source,
        ]
        for ps, here, source in listed.patchsets
    ]
    columns = ["name", "version", "target", "requires", "patches", "here", "source"]
    out.table("patchsets", columns, rows)
    for line in listed.conflicts:
        out.line(f"error: {line}", style="red")
    return 2 if listed.conflicts else 0


def run(args: Namespace, ctx: Context) -> int:
    return list_patchsets(ops.listing(ctx.registry, ctx.env), ctx.out)
