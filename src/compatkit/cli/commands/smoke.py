"""``compatkit smoke PATCHSET``: run the patches' smoke tests with pytest in the target."""

from __future__ import annotations

from compatkit.cli import options
from compatkit.ops.smoke import SmokeRun, applied_state, require_pytest, run_smoke, smoke_patches

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from compatkit.cli.context import Context


def add_arguments(parser: ArgumentParser) -> None:
    options.patchset(parser)
    parser.add_argument(
        "--patch",
        action="append",
        default=[],
        metavar="ID",
        help="only this patch's smoke test (repeatable)",
    )


def run(args: Namespace, ctx: Context) -> int:
    out, env = ctx.out, ctx.env
    ps = ctx.registry.get(args.patchset)
    selected = smoke_patches(ps, args.patch)
    require_pytest(env, ps)
    state = applied_state(ps, env)
    applied, excluded = state if state else ([], [])
    where = (
        f"applied here: {', '.join(applied) or 'none'}"
        + (f"; excluded: {', '.join(excluded)}" if excluded else "")
        if state
        else f"{ps.name} is not applied here"
    )
    out.line(f"{ps.name} smoke tests in {env.executable} ({where})")
    code, results = run_smoke(ps, env, selected, show_output=not out.json_mode)
    result = SmokeRun(ps.name, applied, code, results)
    out.result(result.to_json())
    rows = [
        [
            pid,
            "applied" if pid in applied else "not applied",
            "blocked" if r.blocked_by else str(r.verdict),
            f"{r.tests.count('pass')}/{len(r.tests)} passed"
            + (f": {r.reason}" if r.reason else ""),
        ]
        for pid, r in results.items()
    ]
    out.table(f"{ps.name} smoke tests", ["patch", "here", "smoke", "detail"], rows)
    return 0 if result.ok else 1
