"""``compatkit smoke PATCHSET``: run the patches' smoke tests with pytest in the target."""

from __future__ import annotations

from typing import TYPE_CHECKING

from compatkit.cli.output import Output
from compatkit.model.results import SmokeState
from compatkit.ops.smoke import applied_state, require_pytest, run_smoke, select

if TYPE_CHECKING:
    from argparse import Namespace

    from compatkit.cli.context import Context
    from compatkit.env.target import Environment
    from compatkit.load.registry import Registry


def smoke(
    registry: Registry, env: Environment, name: str, ids: list[str], out: Output | None = None
) -> int:
    out = out or Output()
    ps = registry.get(name)
    selected = select(ps, ids)
    require_pytest(env)
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
    ok = code == 0 and all(r.verdict is SmokeState.PASS for r in results.values())
    out.doc.update(
        ok=ok,
        patchset=ps.name,
        applied=applied,
        pytest_exit=code,
        patches=[
            {
                "id": pid,
                "applied": pid in applied,
                "result": r.verdict,
                "tests": r.tests,
                "reason": r.reason,
                "blocked_by": list(r.blocked_by),
            }
            for pid, r in results.items()
        ],
    )
    out.table(f"{ps.name} smoke tests", ["patch", "here", "smoke", "detail"], rows)
    return 0 if ok else 1


def run(args: Namespace, ctx: Context) -> int:
    return smoke(ctx.registry, ctx.env, args.patchset, args.patch, ctx.out)
