"""``compatkit runtime install|uninstall`` and ``status --runtime`` / ``verify --runtime``."""

from __future__ import annotations

from pathlib import Path

from compatkit.cli.output import Output
from compatkit.env.target import Environment
from compatkit.errors import CompatkitError, UsageError
from compatkit.load.registry import Registry
from compatkit.model.results import PatchState
from compatkit.ops import runtime as ops


def install(
    registry: Registry, env: Environment, names: list[str], root: Path, pth: bool, out: Output
) -> int:
    if not names:
        raise UsageError("runtime install needs at least one patchset name")
    done = ops.install(registry, env, names, root, pth)
    out.doc.update(ok=True, dir=str(done.root), patchsets=done.patchsets, pth=done.pth)
    what = ", ".join(done.patchsets)
    if done.pth is not None:
        out.line(f"{what}: applied at import time by {done.pth} (every start)", style="green")
    else:
        out.line(f"{what}: runtime hook written to {done.root}; put it first on PYTHONPATH:")
        out.line(f'  export PYTHONPATH="{done.root}${{PYTHONPATH:+:$PYTHONPATH}}"')
    return 0


def uninstall(root: Path, out: Output, env: Environment | None = None) -> int:
    removed = ops.uninstall(root, env)
    out.doc.update(ok=True, removed=removed)
    out.line(f"removed the runtime hook in {root} ({len(removed)} files and folders)")
    return 0


def status(registry: Registry, root: Path, out: Output) -> int:
    checks = ops.check(registry, root)
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


def verify(registry: Registry, root: Path, out: Output) -> int:
    checks = ops.check(registry, root)
    problems = [p for c in checks for p in c.problems]
    names = [c.name for c in checks]
    out.doc.update(ok=not problems, runtime=str(root), patchsets=names, problems=problems)
    if problems:
        raise CompatkitError(f"verify failed: {len(problems)} problem(s)", problems)
    served = sum(s.status is PatchState.RUNTIME for c in checks for s in c.statuses)
    out.line(
        f"verified: {', '.join(names)} applied at import time by {root} ({served} patches); "
        "every installed file is the one they were prepared for",
        style="green",
    )
    return 0
