"""``compatkit apply`` / ``verify`` with no name: bring the environment to the project's
``[tool.compatkit]`` state, or check it is there.

A configured patchset whose target distribution is missing or at another version is an error
under ``on-mismatch = "strict"`` (a warning under ``"warn"``): a stale patchset is never
dropped silently. One whose target matches but whose other requirements do not (a patchset for
another vLLM, say) is skipped with one line.
"""

from __future__ import annotations

from compatkit.checks import requirement_problems
from compatkit.commands.apply import apply
from compatkit.commands.verify import verify
from compatkit.config import ProjectConfig
from compatkit.errors import CompatkitError, UsageError
from compatkit.output import Output
from compatkit.registry import Registry
from compatkit.target import Environment


def select(config: ProjectConfig, registry: Registry, env: Environment, out: Output) -> list[str]:
    """The configured patchsets that fit this environment; raise on strict mismatches."""
    if not config.patchsets:
        raise UsageError(f"{config.path}: [tool.compatkit] lists no patchsets")
    chosen, errors = [], []
    for name in config.patchsets:
        ps = registry.get(name)
        dist = env.find(ps.distribution)
        problems = requirement_problems(ps, env, dist)
        if dist is None or not ps.specifier.contains(dist.version, prereleases=True):
            message = f"{name}: {problems[0]}"
            if config.policy == "strict":
                errors.append(message)
            else:
                out.line(f'warning: {message} (skipped: on-mismatch = "warn")', style="yellow")
            out.doc.setdefault("skipped", []).append({"patchset": name, "why": problems[0]})
            continue
        if problems:
            out.line(f"skipped {name}: {problems[0]}")
            out.doc.setdefault("skipped", []).append({"patchset": name, "why": problems[0]})
            continue
        chosen.append(name)
    if errors:
        raise CompatkitError(
            f"{len(errors)} configured patchset(s) match nothing installed "
            f'({config.path}; on-mismatch = "warn" to allow)',
            errors,
        )
    return chosen


def apply_project(config: ProjectConfig, registry: Registry, env: Environment, out: Output) -> int:
    chosen = select(config, registry, env, out)
    for name in chosen:
        apply(registry, env, name, [], out=out)
    out.doc.update(ok=True, applied=chosen)
    return 0


def verify_project(config: ProjectConfig, registry: Registry, env: Environment, out: Output) -> int:
    chosen = select(config, registry, env, out)
    if not chosen:
        out.doc.update(ok=True, patchsets=[])
        out.line("no configured patchset applies to this environment")
        return 0
    return verify(registry, env, chosen, out)
