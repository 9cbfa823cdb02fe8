"""``compatkit pristine DIST... | --all [-v]``: installed distributions against their RECORD,
file by file (:mod:`compatkit.ops.pristine`)."""

from __future__ import annotations

from compatkit.errors import UsageError

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import Namespace

    from compatkit.cli.context import Context


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
