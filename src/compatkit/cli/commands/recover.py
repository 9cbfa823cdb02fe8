"""``compatkit recover [DIST]... [--discard]``: what an interrupted run left behind
(:mod:`compatkit.ops.recover`)."""

from __future__ import annotations

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from compatkit.cli.context import Context


def add_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("distribution", nargs="*", help="default: every one that holds a journal")
    parser.add_argument(
        "--discard", action="store_true", help="delete the journal, restore nothing"
    )


def run(args: Namespace, ctx: Context) -> int:
    from compatkit.ops.recover import recover

    result = recover(ctx.env, args.distribution, args.discard)
    out = ctx.out
    out.result(result.to_json())
    for r in result.recovered:
        if r.action == "discarded":
            out.line(
                f"{r.distribution} {r.version}: deleted the journal, restored nothing; "
                f"'compatkit pristine {r.distribution}' shows which files differ "
                "from RECORD"
            )
        elif r.action == "rolled back":
            out.line(f"{r.distribution} {r.version}: rolled back an interrupted compatkit run")
    if not any(r.action != "none" for r in result.recovered):
        out.line(f"nothing to recover in {result.where}")
    return 0
