"""``compatkit upstream PATCHSET --target DIST==VERSION``: did upstream absorb the fixes?

``--target DIST`` (or ``DIST==latest``) checks the newest release on the index.

The verdicts and their two oracles: :mod:`compatkit.ops.upstream`.
"""

from __future__ import annotations

from packaging.requirements import InvalidRequirement, Requirement

from compatkit.cli import options
from compatkit.errors import UsageError
from compatkit.model.results import UpstreamState
from compatkit.ops.upstream import target_release, upstream

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from compatkit.cli.context import Context


def add_arguments(parser: ArgumentParser) -> None:
    options.patchset(parser)
    parser.add_argument(
        "--target",
        required=True,
        metavar="DIST==VERSION",
        help=(
            "the release to check, e.g. vllm==0.17.1 (installed in a throw-away venv); "
            "DIST or DIST==latest: the newest release on the index"
        ),
    )
    parser.add_argument(
        "--with",
        action="append",
        default=[],
        dest="with_",
        metavar="REQ",
        help="also install this into the throw-away environment (repeatable; not with --python)",
    )
    options.wheels(parser)


def run(args: Namespace, ctx: Context) -> int:
    if args.python and args.with_:
        raise UsageError("--with adds to the throw-away environment; with --python there is none")
    extra = _parse_with(args.with_)
    out, wheels = ctx.out, ctx.wheels()
    ps = ctx.registry.get(args.patchset)
    req = target_release(ps, args.target, wheels)
    if str(req) != args.target.strip():
        out.line(f"the newest {req.name} on the index: {req}")
    result = upstream(ps, ctx.env if args.python else None, req, extra, wheels, out.line)
    out.result(result.to_json())
    dist, verdicts = result.dist, result.verdicts
    for line in result.unmet:
        out.line(f"{ps.name}'s requirement unmet here (checked, not installed): {line}")
    if result.smoke_not_run:
        files = f"verdicts from {dist.name} {dist.version}'s files only"
        out.line(f"smoke tests not run: {result.smoke_not_run} ({files})")
    out.table(
        f"{ps.name} against unpatched {dist.name} {dist.version}",
        ["patch", "verdict", "smoke (unpatched)", "diff"],
        [
            [v.id, v.state, v.smoke + (f": {v.reason}" if v.reason else ""), v.textual]
            for v in verdicts
        ],
    )
    for state in (UpstreamState.UPSTREAM, UpstreamState.REMOVED_UPSTREAM):
        gone = [v.id for v in verdicts if v.state is state]
        out.line(
            f"{len(gone)}/{len(verdicts)} patches are {state} in {dist.name} {dist.version}"
            + (f": {', '.join(gone)} can retire" if gone else "")
        )
    return 0


def _parse_with(extra: list[str]) -> list[str]:
    for text in extra:
        try:
            Requirement(text)
        except InvalidRequirement as exc:
            raise UsageError(f"--with {text!r}: {exc}") from None
    return list(extra)
