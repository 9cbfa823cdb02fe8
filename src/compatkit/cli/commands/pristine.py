"""``compatkit pristine DIST... | --all [-v]``: installed distributions against their RECORD,
file by file (:mod:`compatkit.ops.pristine`)."""

from __future__ import annotations

from compatkit.errors import UsageError

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from compatkit.cli.context import Context


def add_arguments(parser: ArgumentParser) -> None:
    parser.usage = "%(prog)s [-h] [options] (DIST [DIST ...] | --all) [-v]"
    parser.add_argument(
        "distribution", nargs="*", metavar="DIST", help="the distributions to check (or --all)"
    )
    parser.add_argument("--all", action="store_true", help="every distribution of the environment")
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="name every file that is off (default: the first ten of each kind)",
    )


def run(args: Namespace, ctx: Context) -> int:
    if args.all and args.distribution:
        raise UsageError("pristine --all checks every distribution; name none")
    if not args.all and not args.distribution:
        raise UsageError("pristine needs a distribution name (or --all)")
    from compatkit.ops.pristine import check

    out = ctx.out
    result = check(ctx.env, None if args.all else args.distribution, ctx.progress)
    if result.reports:
        problems = result.problems(args.verbose, one_line=out.json_mode)
        return out.fail(result.to_json(), result.failure(), problems)
    out.result(result.to_json())
    for line in result.passed():
        out.line(line, style="green")
    return 0
