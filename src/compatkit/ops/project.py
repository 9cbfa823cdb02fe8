"""Which of the project's ``[tool.compatkit]`` patchsets fit this environment.

A configured patchset whose target distribution is missing or at another version is an error
under ``on-mismatch = "strict"`` (a warning under ``"warn"``): a stale patchset is never
dropped silently. One whose target matches but whose other requirements do not (a patchset for
another vLLM, say) is skipped, with its reason.
"""

from __future__ import annotations

from compatkit.env.checks import requirement_problems
from compatkit.env.target import Dist, Environment
from compatkit.errors import CompatkitError, UsageError
from compatkit.load.config import ProjectConfig
from compatkit.load.registry import Registry
from compatkit.value import Value


class Skipped(Value):
    __slots__ = ("patchset", "why", "mismatch")

    def __init__(self, patchset: str, why: str, mismatch: bool) -> None:
        self.patchset = patchset
        self.why = why
        self.mismatch = mismatch  # the target itself does not fit (warned under "warn")


class Selection(Value):
    __slots__ = ("chosen", "skipped")

    def __init__(self, chosen: list[str], skipped: list[Skipped]) -> None:
        self.chosen = chosen
        self.skipped = skipped

    def notices(self) -> list[tuple[str, str | None]]:
        """One line (and its style) per skipped patchset, for a command to print."""
        lines: list[tuple[str, str | None]] = []
        for skip in self.skipped:
            if skip.mismatch:
                why = f"{skip.patchset}: {skip.why}"
                lines.append((f'warning: {why} (skipped: on-mismatch = "warn")', "yellow"))
            else:
                lines.append((f"skipped {skip.patchset}: {skip.why}", None))
        return lines

    def skipped_doc(self) -> list[dict[str, str]]:
        return [{"patchset": s.patchset, "why": s.why} for s in self.skipped]


def _with_wheel_hint(problem: str, wanted: str, dist: Dist | None) -> str:
    from compatkit.delivery.wheelpin import stale_wheel

    hint = stale_wheel(dist, wanted)
    return f"{problem}; {hint}" if hint else problem


def select(config: ProjectConfig, registry: Registry, env: Environment) -> Selection:
    """The configured patchsets that fit; raise on mismatches under the strict policy."""
    if not config.patchsets:
        raise UsageError(f"{config.path}: [tool.compatkit] lists no patchsets")
    chosen: list[str] = []
    skipped: list[Skipped] = []
    errors: list[str] = []
    for name in config.patchsets:
        ps = registry.get(name)
        dist = env.find(ps.distribution)
        problems = requirement_problems(ps, env, dist)
        if dist is None or not ps.specifier.contains(dist.version, prereleases=True):
            if config.policy == "strict":
                errors.append(f"{name}: {_with_wheel_hint(problems[0], ps.target, dist)}")
            skipped.append(Skipped(name, problems[0], mismatch=True))
        elif problems:
            skipped.append(Skipped(name, problems[0], mismatch=False))
        else:
            chosen.append(name)
    if errors:
        raise CompatkitError(
            f"{len(errors)} configured patchset(s) match nothing installed "
            f'({config.path}; on-mismatch = "warn" to allow)',
            errors,
        )
    return Selection(chosen, skipped)
