"""``compatkit sbom [--format cyclonedx] [--dir DIR]... [-o FILE]``: the environment's
CycloneDX SBOM (:mod:`compatkit.ops.sbom`), with the patches applied, built in or served by
runtime folders."""

from __future__ import annotations

import sys
from pathlib import Path

from compatkit.cli import options
from compatkit.cli.destinations import output_file

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from compatkit.cli.context import Context


def add_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=["cyclonedx"],
        default="cyclonedx",
        help="the SBOM format: CycloneDX 1.6 JSON (default: cyclonedx, the only one)",
    )
    parser.add_argument(
        "--dir",
        action="append",
        default=[],
        dest="runtimes",
        type=Path,
        metavar="DIR",
        help="include the patches the runtime folder DIR serves (as runtime --dir; repeatable)",
    )
    options.output(parser, "FILE", "the file the SBOM goes to (default: stdout)")


def run(args: Namespace, ctx: Context) -> int:
    from compatkit.ops import sbom

    out = ctx.out
    if args.output is None:  # the document is the output (JSON already): --json changes nothing
        sys.stdout.write(sbom.environment_document(ctx.registry, ctx.env, args.runtimes).document)
        out.json_mode = False
        return 0
    output_file(args.output, "-o", make=False)  # atomic.write makes no folder
    result = sbom.write_sbom(ctx.registry, ctx.env, args.output, args.runtimes)
    out.result(result.to_json())
    out.line(f"wrote {args.output}: {result.components} components, {len(result.patched)} patched")
    for name in result.unknown:
        out.line(f"warning: {name} is not known here as applied: its patches have no diff")
    return 0
