"""``compatkit diff DIST --patchset NAME --id ID``: turn hand edits of an installed
distribution into a new patch (:mod:`compatkit.ops.diff`), then show what was written."""

from __future__ import annotations

from pathlib import Path

from compatkit.cli import options
from compatkit.cli.destinations import output_dir

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from compatkit.cli.context import Context


def add_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("distribution")
    parser.add_argument("--patchset", required=True, metavar="NAME", help="patchset to add it to")
    parser.add_argument("--id", required=True, metavar="ID", help="the new patch's id (patch-11)")
    parser.add_argument("--title", metavar="TEXT", help="the new patch's one-line title")
    options.output(
        parser,
        "DIR",
        "the folder a new patchset is written in, also searched (default: patchsets; an "
        "existing patchset stays where it is)",
    )
    options.wheels(parser)


def run(args: Namespace, ctx: Context) -> int:
    from compatkit.ops import diff as ops

    ops.check_id(args.id)
    into = args.output or Path("patchsets")
    searched = ctx.patchset_dirs  # what a later command searches without options
    if args.output is not None:
        output_dir(args.output, "-o")
        ops.make_dir(args.output)
    if into.is_dir():  # searched too: a second patch goes beside the first
        args.patchset_dir.append(into)
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
    lint = _lint_command(ctx, args.patchset, into, searched)
    out.line(f"{args.id} is recorded as applied; fill in the TODO fields, then '{lint}'")
    return 0


def _lint_command(ctx: Context, name: str, into: Path, searched: list[Path]) -> str:
    """``compatkit lint NAME``, with ``--patchset-dir DIR`` where a plain run from here
    would not find the patchset (a new one in ``-o DIR`` or ``./patchsets``)."""
    registry = ctx.registry
    root = registry.location(name) if name in registry.names() else None
    if root is not None and (
        registry.source(root) == "bundled" or any(root.parent == d.resolve() for d in searched)
    ):
        return f"compatkit lint {name}"
    import shlex  # only here

    return f"compatkit lint --patchset-dir {shlex.quote(str(into))} {name}"
