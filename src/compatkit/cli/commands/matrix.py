"""``compatkit matrix run|report|jobs``: one version-matrix cell (:mod:`compatkit.ops.matrix`),
the report (:mod:`compatkit.ops.matrix_report`), CI's job list.

``run`` works in the environment of the cell (compatkit's own, or ``--python``): it starts
from a pristine install, applies each patchset, verifies, runs the smoke tests, reverts and
checks the install is pristine again; then compares every patch with the cell's expectation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from compatkit.cli.outputs import output_dir, output_file
from compatkit.errors import CompatkitError, UsageError

if TYPE_CHECKING:
    from argparse import Namespace

    from compatkit.cli.context import Context


def run(args: Namespace, ctx: Context) -> int:
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
    from compatkit.ops.matrix import run_cell

    output_dir(args.results, "--results")
    out = ctx.out
    where = (args.matrix, args.cell, args.results, out.line, ctx.progress)
    doc = run_cell(ctx.registry, ctx.env, *where)
    out.result(doc)
    cell, mode = doc["cell"], doc["mode"]
    for name, entries in doc["patchsets"].items():
        out.table(
            f"cell {cell}: {name} ({mode})",
            ["patch", "state", "smoke", "detail"],
            [
                [e["id"], e["state"], e["smoke"], e.get("reason") or e.get("detail", "")]
                for e in entries
            ],
        )
    if doc["mismatches"]:
        raise CompatkitError(f"cell {cell} differs from matrix.toml", doc["mismatches"])
    out.line(f"cell {cell}: every patch as expected ({doc['seconds']} s)", style="green")
    return 0


def _report(args: Namespace, ctx: Context) -> int:
    from compatkit.ops.matrix import cell_order
    from compatkit.ops.matrix_report import report

    output_dir(args.results, "--results")
    if args.docs is not None:
        output_file(args.docs, "--docs")
    result = report(args.results, args.docs, cell_order(args.matrix))
    ctx.out.result(result.to_json())
    ctx.out.table(
        "compatibility: patches × cells", result.columns[1:], [r[1:] for r in result.rows]
    )
    return 0
