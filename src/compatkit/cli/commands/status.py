"""``compatkit status [PATCHSET]`` and ``compatkit list``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from compatkit.cli.output import Output
from compatkit.errors import UsageError
from compatkit.ops.status import inspect_patchset, not_applicable, unmet_constraints, where

if TYPE_CHECKING:
    from argparse import Namespace

    from compatkit.cli.context import Context
    from compatkit.env.target import Dist, Environment
    from compatkit.load.registry import Registry


def status(
    registry: Registry,
    env: Environment,
    names: list[str],
    out: Output | None = None,
    pyproject: Path | None = None,
    verbose: bool = False,
) -> int:
    """Each patchset's table; with no name and not ``verbose``, one line for a patchset that
    does not apply here (its target absent or another version), the tables for the rest."""
    out = out or Output()
    out.doc["patchsets"] = []
    wheels: list[str] = []  # distributions installed as patched wheels
    for name in names or registry.names():
        ps = registry.get(name)
        found_here = inspect_patchset(ps, env)
        dist, state, statuses = found_here.dist, found_here.state, found_here.statuses
        summary = found_here.summary
        found = (
            f"found {dist.name} {dist.version}" if dist else f"{ps.distribution} is not installed"
        )
        out.doc["patchsets"].append(
            {
                "name": ps.name,
                "version": ps.version,
                "target": ps.target,
                "installed": dist.version if dist else None,
                "state": summary,
                "applied_version": state.version if state else None,
                "unmet_constraints": (unmet := unmet_constraints(ps, env)),
                "patches": [
                    {"id": s.id, "status": s.status, "detail": s.detail, "startup_code": s.startup}
                    for s in statuses
                ],
            }
        )
        reason = None if names or verbose else not_applicable(found_here)
        rows = (
            []
            if reason
            else [
                [s.id, ps.patch(s.id).title if ps.patch(s.id) else "", str(s.status), s.detail]  # type: ignore[union-attr]
                for s in statuses
            ]
        )
        if reason:
            out.line(f"{ps.name}: not applicable ({reason})", style="dim")
        else:
            out.table(
                f"{ps.name} {ps.version} → {ps.target} ({found}): {summary}",
                ["patch", "title", "state", "detail"],
                rows,
            )
        for line in unmet:
            out.line(f"{ps.name}: {line}", style="red")
        if dist is not None and "ck." in dist.version:  # a patched wheel?
            wheels.append(ps.distribution)
            _wheel_hint(out, dist, ps.target, state is None and summary == "not applicable")
    if pyproject is not None and wheels:
        from compatkit.delivery.wheelpin import project_mismatches

        moved = project_mismatches(pyproject, env, wheels)
        out.doc["project_mismatches"] = moved
        for line in moved:
            out.line(f"warning: {line}", style="yellow")
    return 0


def _wheel_hint(out: Output, dist: Dist, wanted: str, stale: bool) -> None:
    """A patchset aimed elsewhere than the installed patched wheel: the next step."""
    from compatkit.delivery.wheelpin import stale_wheel

    hint = stale_wheel(dist, wanted) if stale else None
    if hint:
        out.doc["patchsets"][-1]["next_step"] = hint
        out.line(f"  {hint}", style="yellow")


def list_patchsets(registry: Registry, env: Environment, out: Output | None = None) -> int:
    out = out or Output()
    rows, docs = [], []
    clashes = [line for name in registry.names() if (line := registry.conflict(name))]
    for name in registry.names():
        if registry.conflict(name):
            continue
        ps = registry.get(name)
        _, here = where(ps, env)
        docs.append(
            {
                "name": ps.name,
                "version": ps.version,
                "patches": len(ps.patches),
                "target": ps.target,
                "requires": [str(r) for r in ps.requires],
                "state": here,
                "path": str(ps.root),
                "source": registry.source(ps),
                "summary": ps.summary,
            }
        )
        rows.append(
            [
                ps.name,
                ps.version,
                ps.target,
                ", ".join(str(r) for r in ps.requires),
                str(len(ps.patches)),
                str(here),
                registry.source(ps),
            ]
        )
    out.doc["patchsets"] = docs
    out.doc["conflicts"] = clashes
    columns = ["name", "version", "target", "requires", "patches", "here", "source"]
    out.table("patchsets", columns, rows)
    for line in clashes:
        out.line(f"error: {line}", style="red")
    return 2 if clashes else 0


def run(args: Namespace, ctx: Context) -> int:
    """``status [PATCHSET]...`` (``--runtime DIR``: the runtime folder's), and ``list``."""
    if args.command == "list":
        return list_patchsets(ctx.registry, ctx.env, ctx.out)
    if args.runtime is not None:
        _no_names(args)
        return runtime_status(ctx.registry, args.runtime, ctx.out)
    config = ctx.config
    pyproject = config.path if config else None  # the upgrade check
    return status(ctx.registry, ctx.env, args.patchset, ctx.out, pyproject, args.verbose)


def _no_names(args: Namespace) -> None:
    if args.patchset:
        raise UsageError(f"{args.command} --runtime DIR checks the patchsets DIR holds; name none")


def runtime_status(registry: Registry, root: Path, out: Output) -> int:
    from compatkit.ops import runtime

    checks = runtime.check(registry, root)
    out.doc["runtime"] = str(root)
    out.doc["patchsets"] = []
    for c in checks:
        summary = "applied (runtime)" if not c.problems else "drifted: the hook refuses it"
        out.doc["patchsets"].append(
            {
                "name": c.name,
                "version": c.version,
                "state": summary,
                "patches": [
                    {"id": s.id, "status": s.status, "detail": s.detail} for s in c.statuses
                ],
            }
        )
        rows = [[s.id, str(s.status), s.detail] for s in c.statuses]
        out.table(
            f"{c.name} {c.version} (runtime {root}): {summary}", ["patch", "state", "detail"], rows
        )
    return 0
