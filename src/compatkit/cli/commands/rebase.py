"""``compatkit rebase PATCHSET --target DIST==VERSION``: a new patchset for a new upstream version
(:mod:`compatkit.ops.rebase`), shown as a table of each patch's port."""

from __future__ import annotations

from compatkit.cli import options
from compatkit.cli.destinations import output_dir

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from compatkit.cli.context import Context


def add_arguments(parser: ArgumentParser) -> None:
    options.patchset(parser)
    parser.add_argument(
        "--target", required=True, metavar="DIST==VERSION", help="the new target release"
    )
    parser.add_argument(
        "--name", metavar="NAME", help="the new patchset's name (default: NAME-VERSION)"
    )
    options.output(
        parser,
        "DIR",
        "the folder to write it in (default: beside the old patchset; patchsets for a bundled one)",
    )
    options.wheels(parser)


def run(args: Namespace, ctx: Context) -> int:
    from compatkit.ops.rebase import rebase

    if args.output is not None:
        output_dir(args.output, "-o")
    where = (args.target, args.name, args.output, ctx.wheels())
    result = rebase(ctx.registry, args.patchset, *where)
    out, ports = ctx.out, result.ports
    dist = result.distribution
    out.table(
        f"{result.patchset}: {dist} {result.old_version} → {result.new_version}, "
        f"written to {result.path}",
        ["patch", "result", "detail"],
        [[p.id, str(p.status), p.detail] for p in ports],
    )
    out.line(", ".join(f"{n} {s}" for s, n in result.counts().items()))
    if result.conflicts:
        fix = [
            f"{pid}: resolve {result.path / p}" for pid, ps in result.conflicts.items() for p in ps
        ]
        what = f"{len(result.conflicts)} patch(es) conflict with {dist} {result.new_version}"
        return out.fail(result.to_json(), what, fix)
    out.result(result.to_json())
    return 0
