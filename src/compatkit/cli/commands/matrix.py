"""``compatkit matrix run|report|jobs``: one version-matrix cell (:mod:`compatkit.ops.matrix`),
the report (:mod:`compatkit.ops.matrix_report`), CI's job list.

``matrix run CELL [--results DIR]`` writes the cell's result to DIR/CELL.json (default
build/matrix); ``matrix report [--results DIR] [-o FILE]`` reads DIR's results, writes report.md
and report.json there, and with ``-o`` the Markdown to FILE too (the docs page): ``-o`` is a
file, ``--results`` a folder, for every sub-verb that takes them.

``run`` works in the environment of the cell (compatkit's own, or ``--python``): it starts
from a pristine install, applies each patchset, verifies, runs the smoke tests, reverts and
checks the install is pristine again; then compares every patch with the cell's expectation.
"""

from __future__ import annotations

from pathlib import Path

from compatkit.cli.destinations import output_dir, output_file
from compatkit.errors import UsageError

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import Namespace

    from compatkit.cli.context import Context


RESULTS = Path("build/matrix")  # where run writes a cell's result and report reads them


def run(args: Namespace, ctx: Context) -> int:
    wrong = {
        "run": [("-o", args.output)],
        "report": [],
        "jobs": [("-o", args.output), ("--results", args.results)],
    }[args.action]
    for option, value in wrong:
        if value is not None:
            raise UsageError(f"{option} is not an option of matrix {args.action}")
    if args.action == "jobs":
        import json

        from compatkit.ops.matrix import jobs

        print(json.dumps(jobs(args.matrix)))
        return 0
    if args.action == "report":
        return _report(args, ctx)
    if not args.cell:
        raise UsageError("matrix run needs a cell id")
    return _run_cell(args, ctx)


def _run_cell(args: Namespace, ctx: Context) -> int:
    from compatkit.ops.matrix import not_the_cells, run_cell

    folder = args.results or RESULTS
    output_dir(folder, "--results")
    out = ctx.out
    where = (args.matrix, args.cell, folder, out.line, ctx.progress)
    result = run_cell(ctx.registry, ctx.env, *where)
    cell, mode = result.cell.id, result.cell.mode
    for name, entries in result.patchsets.items():
        out.table(
            f"cell {cell}: {name} ({mode})",
            ["patch", "state", "smoke", "detail"],
            [
                [e["id"], e["state"], e["smoke"], e.get("reason") or e.get("detail", "")]
                for e in entries
            ],
        )
    if not result.ok:
        what = f"cell {cell} differs from matrix.toml"
        if misses := not_the_cells(list(result.cell.packages), result.installed):
            what += (
                f"; this environment is not the cell's ({'; '.join(misses)}): build it "
                f"(nox -s \"matrix(cell='{cell}')\") or pass --python to one that is"
            )
        return out.fail(result.to_json(), what, result.mismatches)
    out.result(result.to_json())
    out.line(f"cell {cell}: every patch as expected ({result.seconds} s)", style="green")
    return 0


def _report(args: Namespace, ctx: Context) -> int:
    from compatkit.ops.matrix import cell_order
    from compatkit.ops.matrix_report import report

    folder = args.results or RESULTS
    output_dir(folder, "--results")
    if args.output is not None:
        output_file(args.output, "-o")
    result = report(folder, args.output, cell_order(args.matrix))
    ctx.out.result(result.to_json())
    ctx.out.table(
        "compatibility: patches × cells", result.columns[1:], [r[1:] for r in result.rows]
    )
    return 0
