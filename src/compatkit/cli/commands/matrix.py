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

from compatkit.cli import options
from compatkit.cli.destinations import output_dir, output_file

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from compatkit.cli.context import Context


RESULTS = Path("build/matrix")  # where run writes a cell's result and report reads them


def add_arguments(parser: ArgumentParser) -> None:
    verbs = options.sub_verbs(parser)
    cell = options.verb(verbs, "run", "run one cell of the matrix and compare it with matrix.toml")
    cell.add_argument("cell", help="the cell id")
    _matrix(cell)
    cell.add_argument(
        "--smoke-not-run",
        metavar="REASON",
        help=(
            "run: the cell's packages are installed without their dependencies; REASON is the "
            "installer's output (its first reason is kept). Classify from the files, run no "
            "smoke test"
        ),
    )
    _results(cell)
    report = options.verb(verbs, "report", "build the compatibility report from the cells' results")
    _matrix(report)
    options.output(
        report, "FILE", "report: also write the Markdown to the file FILE (the docs page)"
    )
    _results(report)
    _matrix(options.verb(verbs, "jobs", "print CI's job list as JSON"))


def _matrix(parser: ArgumentParser) -> None:
    parser.add_argument("--matrix", type=Path, default=Path("matrix.toml"), help="the matrix file")


def _results(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--results",
        type=Path,
        metavar="DIR",
        help=(
            "the folder of cell results (default: build/matrix): run writes the cell's "
            "CELL.json there, report reads them and writes report.md and report.json there"
        ),
    )


def run(args: Namespace, ctx: Context) -> int:
    if args.action == "jobs":
        import json

        from compatkit.ops.matrix import jobs

        print(json.dumps(jobs(args.matrix)))
        return 0
    if args.action == "report":
        return _report(args, ctx)
    return _run_cell(args, ctx)


def _run_cell(args: Namespace, ctx: Context) -> int:
    from compatkit.ops.matrix import not_the_cells, run_cell

    folder = args.results or RESULTS
    output_dir(folder, "--results")
    out = ctx.out
    where = (args.matrix, args.cell, folder, out.line, ctx.progress)
    why = ""
    if args.smoke_not_run:  # the installer's output: its first reason, on one line
        from compatkit.ops.upstream import first_reason, install_error

        why = (
            f"cannot install the cell's packages: {first_reason(install_error(args.smoke_not_run))}"
        )
    result = run_cell(ctx.registry, ctx.env, *where, smoke_not_run=why)
    cell, mode = result.cell.id, result.cell.mode
    if why:
        out.line(f"cell {cell}: smoke tests not run: {why} (files only)")
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
