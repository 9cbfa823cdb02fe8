"""``compatkit verify [PATCHSET]`` and ``compatkit verify --pristine DIST``.

With no name, the project's ``[tool.compatkit]`` patchsets that fit this environment.
"""

from __future__ import annotations

from compatkit.config import ProjectConfig
from compatkit.errors import CompatkitError
from compatkit.ops import verify as ops
from compatkit.ops.select import select
from compatkit.output import Output
from compatkit.registry import Registry
from compatkit.target import Environment


def verify(
    registry: Registry, env: Environment, names: list[str], out: Output | None = None
) -> int:
    out = out or Output()
    if not names:
        out.doc.update(ok=True, patchsets=[], problems=[])
        out.line("no patchset is applied in this environment; nothing to verify")
        return 0
    problems: list[str] = []
    for name in names:
        problems += ops.problems(registry, env, name)
    out.doc.update(ok=not problems, patchsets=names, problems=problems)
    if problems:
        raise CompatkitError(f"verify failed: {len(problems)} problem(s)", problems)
    out.line(
        f"verified: {', '.join(names)} fully applied, every patched file intact", style="green"
    )
    return 0


def verify_project(config: ProjectConfig, registry: Registry, env: Environment, out: Output) -> int:
    selection = select(config, registry, env)
    out.lines(selection.notices())
    if selection.skipped:
        out.doc["skipped"] = selection.skipped_doc()
    if not selection.chosen:
        out.doc.update(ok=True, patchsets=[])
        out.line("no configured patchset applies to this environment")
        return 0
    return verify(registry, env, selection.chosen, out)


def verify_pristine(env: Environment, name: str, out: Output | None = None) -> int:
    out = out or Output()
    dist, problems = ops.pristine(env, name)
    out.doc.update(ok=not problems, distribution=dist.name, version=dist.version, problems=problems)
    if problems:
        raise CompatkitError(f"{dist.name} {dist.version} is not pristine", problems)
    out.line(f"{dist.name} {dist.version}: every file matches its RECORD", style="green")
    return 0
