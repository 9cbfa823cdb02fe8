"""``compatkit apply [PATCHSET]``: all-or-nothing, idempotent, journaled
(:mod:`compatkit.ops.apply`).

With no name, every patchset of the project's ``[tool.compatkit]`` table that fits this
environment (:mod:`compatkit.ops.project`).
"""

from __future__ import annotations

from compatkit.cli import options
from compatkit.cli.output import count
from compatkit.errors import UsageError
from compatkit.model.action import Action

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from compatkit.cli.context import Context
    from compatkit.cli.output import Output
    from compatkit.ops.apply import ApplyResult


def add_arguments(parser: ArgumentParser) -> None:
    options.patchset(parser, "?", options.DEFAULT_SET)
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="ID",
        help="leave this patch out of the series (repeatable)",
    )
    options.force(parser, "apply despite a version mismatch or files that differ from RECORD")
    parser.add_argument(
        "--dry-run", action="store_true", help="show what would change; write nothing"
    )


def run(args: Namespace, ctx: Context) -> int:
    from compatkit.ops import apply as ops

    if args.patchset:
        result = ops.apply_patchset(
            ctx.registry, ctx.env, args.patchset, args.exclude, args.force, args.dry_run
        )
        ctx.out.result(result.to_json())
        render(result, ctx.out)
        return 0
    if args.exclude:
        raise UsageError("apply --exclude needs a patchset name")
    config = ctx.config
    if config is None:
        raise UsageError(
            "apply needs a patchset name, or a [tool.compatkit] table in "
            "pyproject.toml (searched upwards from the current directory)"
        )
    project = ops.apply_project(config, ctx.registry, ctx.env, args.force, args.dry_run)
    ctx.out.result(project.to_json())
    ctx.out.lines(project.notes)
    for one in project.results:
        render(one, ctx.out)
    return 0


def render(result: ApplyResult, out: Output) -> None:
    ps, dist, state = result.patchset, result.dist, result.state
    dry_run = result.action is Action.DRY_RUN
    if result.recovered:
        out.line("recovered an interrupted compatkit run: its changes were rolled back")
    if result.action is Action.NONE:
        out.line(f"{ps.name} {ps.version} is already applied to {dist.name} {dist.version}")
        return
    warning = result.startup_warning()
    if warning:
        out.line(warning, style="yellow")
    verb = "would apply" if dry_run else "applied"
    report = result.files
    shown = [(p, i) for p, i in report.items() if len(report) <= 20 or i["offsets"]]
    for path, info in shown:
        out.line(f"  {path}: {', '.join(info['patches'])}{info['note']}")
    if len(shown) < len(report):
        more = count(len(report) - len(shown), "more file")
        out.line(f"  ... and {more} (--json lists them all)")
    if dry_run:
        out.line(
            f"{ps.name}: {verb} {count(len(state.applied), 'patch', 'patches')}: "
            f"{count(result.writes, 'file change')} "
            "(patched files, RECORD, compatkit's state and backups, moved bytecode); nothing "
            "was changed"
        )
        return
    left = f", excluded {', '.join(state.excluded)}" if state.excluded else ""
    out.line(
        f"{ps.name} {ps.version}: {verb} {count(len(state.applied), 'patch', 'patches')} to "
        f"{dist.name} {dist.version}{result.replacing()}{left}",
        style="green",
    )
