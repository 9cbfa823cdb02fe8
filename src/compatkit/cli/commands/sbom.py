"""``compatkit sbom [--format cyclonedx] [--dir DIR]... [-o FILE]``: the environment's
CycloneDX SBOM (:mod:`compatkit.ops.sbom`), with the patches applied, built in or served by
runtime folders."""

from __future__ import annotations

import sys

from compatkit.cli.destinations import output_file

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import Namespace

    from compatkit.cli.context import Context


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
