"""``compatkit diff DIST --patchset NAME --id ID``: turn hand edits of an installed
distribution into a new patch (:mod:`compatkit.ops.diff`), then show what was written."""

from __future__ import annotations

from pathlib import Path

from compatkit.cli.destinations import output_dir

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import Namespace

    from compatkit.cli.context import Context


def run(args: Namespace, ctx: Context) -> int:
    from compatkit.ops import diff as ops

    ops.check_id(args.id)
    into = args.output or Path("patchsets")
    if args.output is not None:
        output_dir(args.output, "-o")
        ops.make_dir(args.output)
        args.patchset_dir.append(args.output)  # searched too: a second patch goes beside the first
    where = (args.distribution, args.patchset, args.id, args.title, into, ctx.wheels())
    result = ops.diff(ctx.registry, ctx.env, *where)
    out = ctx.out
    out.result(result.to_json())
    if result.recovered:
        out.line("recovered an interrupted compatkit run: its changes were rolled back")
    for path, kind in result.files.items():
        out.line(f"  {path} ({kind})")
    for path in result.skipped_empty:
        out.line(f"  {path}: empty new file, left out (a patch cannot create an empty file)")
    written = ", ".join(result.written)
    out.line(
        f"{args.patchset}: wrote {written} (pristine bytes from {result.pristine_from})", "green"
    )
    out.line(
        f"{args.id} is recorded as applied; fill in the TODO fields, then "
        f"'compatkit lint {args.patchset}'"
    )
    return 0
