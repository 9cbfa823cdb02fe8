"""``compatkit status [PATCHSET]...`` (:mod:`compatkit.ops.status`)."""

from __future__ import annotations

from compatkit.cli import options
from compatkit.cli.output import Output
from compatkit.ops import status as ops

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from compatkit.cli.context import Context
    from compatkit.model.patchset import Patchset


def add_arguments(parser: ArgumentParser) -> None:
    options.patchset(
        parser, "*", "the patchsets to show, each patch's state (default: every known patchset)"
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="with no name, a table for every patchset, also those that do not apply",
    )


def status(result: ops.StatusResult, out: Output) -> int:
    """Each patchset's table; one line for a patchset whose result has a reason it does not
    apply here (its target absent or another version), the tables for the rest."""
    out.result(result.to_json())
    for one in result.patchsets:
        found = one.found
        ps, dist = found.patchset, found.dist
        if one.reason:
            out.line(f"{ps.name}: not applicable ({one.reason})", style="dim")
        else:
            where = (
                f"found {dist.name} {dist.version}"
                if dist
                else f"{ps.distribution} is not installed"
            )
            rows = [[s.id, _title(ps, s.id), str(s.status), s.detail] for s in found.statuses]
            summary = str(found.summary)
            if one.runtime:
                summary += f" on disk; served to every process by the runtime hook in {one.runtime}"
            out.table(
                f"{ps.name} {ps.version} → {ps.target} ({where}): {summary}",
                ["patch", "title", "state", "detail"],
                rows,
            )
            for line in one.unmet:  # of a patchset that does not apply: its one line only
                out.line(f"{ps.name}: {line}", style="red")
        if one.next_step:
            out.line(f"  {one.next_step}", style="yellow")
    for line in result.project_mismatches:
        out.line(f"warning: {line}", style="yellow")
    return 0


def _title(ps: Patchset, patch_id: str) -> str:
    patch = ps.patch(patch_id)
    return patch.title if patch else ""


def run(args: Namespace, ctx: Context) -> int:
    config = ctx.config
    pyproject = config.path if config else None  # the upgrade check
    result = ops.status(ctx.registry, ctx.env, args.patchset, pyproject, args.verbose)
    return status(result, ctx.out)
