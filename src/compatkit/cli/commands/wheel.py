"""``compatkit wheel PATCHSET [-o DIR] [--sha256 HEX] [--overwrite]``: the target's wheel with the
patchset built in."""

from __future__ import annotations

from pathlib import Path

from compatkit.cli import options
from compatkit.cli.destinations import output_dir
from compatkit.cli.output import count
from compatkit.ops.wheel import build_wheel

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from compatkit.cli.context import Context


def add_arguments(parser: ArgumentParser) -> None:
    options.patchset(parser)
    options.output(parser, "DIR", "the folder the wheel goes to (default: dist)", Path("dist"))
    options.offline(parser)
    parser.add_argument(
        "--sha256",
        metavar="HEX",
        help="the source wheel's sha256 (what proves it the release when it is not installed)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an output wheel of the same name that has other bytes",
    )
    options.wheel_dir(parser)


def run(args: Namespace, ctx: Context) -> int:
    out, name = ctx.out, args.patchset
    output_dir(args.output, "-o")
    where = (args.output, ctx.wheels(), args.sha256, args.overwrite)
    result = build_wheel(ctx.registry, ctx.env, name, *where)
    out.result(result.to_json())
    for note in result.notes:
        out.line(note)
    verb = "unchanged" if result.unchanged else "built"
    out.line(
        f"{verb} {result.path} ({result.name} {result.base_version} with {name}: "
        f"{count(len(result.applied), 'patch', 'patches')}, {count(len(result.files), 'file')})",
        style="green",
    )
    out.line(f"from {result.source} (proven by {result.proof})")
    out.line(f"sha256={result.sha256}")
    return 0
