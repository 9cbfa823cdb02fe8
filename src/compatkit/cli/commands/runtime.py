"""``compatkit runtime install|uninstall|status|verify --dir DIR`` (:mod:`compatkit.ops.runtime`).

``status`` shows each patch the runtime folder holds: served by its hook, or refused (and why);
``verify`` exits 1 unless the hook serves every one.
"""

from __future__ import annotations

from pathlib import Path

from compatkit.cli import options
from compatkit.cli.output import count

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from compatkit.cli.context import Context
    from compatkit.cli.output import Output
    from compatkit.ops.runtime import RuntimeReport


def add_arguments(parser: ArgumentParser) -> None:
    verbs = options.sub_verbs(parser)
    install = options.verb(
        verbs, "install", "write a runtime hook that applies the patchsets at import time"
    )
    options.patchset(install, "+", "the patchsets to apply at import time")
    _dir(install)
    install.add_argument(
        "--pth",
        action="store_true",
        help="start it from a .pth (and PEP 829 .start) file in site-packages",
    )
    for name, summary in (
        ("uninstall", "remove the runtime hook in --dir"),
        ("status", "show each patch the runtime folder holds: served by its hook, or refused"),
        ("verify", "exit 1 unless the hook serves every patch the runtime folder holds"),
    ):
        _dir(options.verb(verbs, name, summary))


def _dir(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--dir",
        required=True,
        type=Path,
        help="the runtime directory",
    )


def run(args: Namespace, ctx: Context) -> int:
    from compatkit.ops import runtime as ops

    action, out = args.action, ctx.out
    if action == "install":
        done = ops.install(ctx.registry, ctx.env, args.patchset, args.dir, args.pth)
        out.result(done.to_json())
        what = ", ".join(done.patchsets)
        if done.pth is not None:
            out.line(f"{what}: applied at import time by {done.pth} (every start)", style="green")
        else:
            out.line(f"{what}: runtime hook written to {done.root}; put it first on PYTHONPATH:")
            out.line(f'  export PYTHONPATH="{done.root}${{PYTHONPATH:+:$PYTHONPATH}}"')
        return 0
    if action == "uninstall":
        gone = ops.uninstall(args.dir, ctx.env)
        out.result(gone.to_json())
        out.line(f"removed the runtime hook in {args.dir} ({len(gone.removed)} files and folders)")
        return 0
    report = ops.check(ctx.registry, args.dir)
    return _status(report, out) if action == "status" else _verify(report, out)


def _status(report: RuntimeReport, out: Output) -> int:
    out.result(report.status_json())
    for c in report.checks:
        rows = [[s.id, str(s.status), s.detail] for s in c.statuses]
        title = f"{c.name} {c.version} (runtime {report.root}): {c.summary}"
        out.table(title, ["patch", "state", "detail"], rows)
    return 0


def _verify(report: RuntimeReport, out: Output) -> int:
    problems = report.problems
    if problems:
        return out.fail(
            report.verify_json(), f"verify failed: {len(problems)} problem(s)", problems
        )
    out.result(report.verify_json())
    names = ", ".join(c.name for c in report.checks)
    out.line(
        f"verified: {names} applied at import time by {report.root} "
        f"({count(report.served, 'patch', 'patches')}); "
        "every installed file is the one they were prepared for",
        style="green",
    )
    return 0
