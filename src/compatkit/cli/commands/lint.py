"""``compatkit lint [PATCHSET]...``: every problem of every patchset (:mod:`compatkit.ops.lint`)."""

from __future__ import annotations

from compatkit.cli import options

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from compatkit.cli.context import Context


def add_arguments(parser: ArgumentParser) -> None:
    options.patchset(parser, "*", "names or directories (default: all)")
    options.offline(parser, "skip the checks that need wheels")
    options.wheel_dir(parser)


def run(args: Namespace, ctx: Context) -> int:
    from compatkit.ops.lint import lint

    result = lint(ctx.registry, args.patchset, args.patchset_dir, ctx.wheels())
    out = ctx.out
    for r in result.lints:
        verdict = f"{len(r.problems)} problem(s)" if r.problems else "ok"
        out.line(f"{r.root.name}: {verdict}", style="red" if r.problems else "green")
        for n in r.notes:
            out.line(f"  note: {n}")
    if result.problems:
        what = f"lint failed: {len(result.problems)} problem(s)"
        return out.fail(result.to_json(), what, result.problems)
    out.result(result.to_json())
    return 0
