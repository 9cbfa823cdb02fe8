"""Is the installed patched wheel still the version the project asks for? (reads only)

A ``[tool.uv.sources]`` path source pins one wheel file, and uv installs it whatever the
requirement says: after ``uv add demo==2.0`` the environment keeps ``demo 1.0+ck.…``. These
checks turn that into a message naming the next step, instead of "not applied" or a blamed
reinstall: port the patchset to the new version (``compatkit upstream`` shows what upstream
fixed, ``compatkit rebase`` ports the rest), build the wheel again, or drop the path source.
"""

from __future__ import annotations

import sys
from pathlib import Path

from compatkit.env.state import states_of
from compatkit.env.target import Dist, Environment


def built_with(dist: Dist) -> list[str]:
    """The patchsets built into ``dist`` by ``compatkit wheel`` (empty: not a patched wheel)."""
    return [s.patchset for s in states_of(dist) if s.built_in]


def next_step(dist: Dist, wanted: str, built: list[str]) -> str:
    """Why a patched wheel is not ``wanted``, and what to do."""
    return (
        f"{dist.name} {dist.version} here is the patched wheel built with {', '.join(built)}, "
        f"not {wanted} (a [tool.uv.sources] path wheel is installed whatever the requirement "
        "says): port the patchset (compatkit upstream, compatkit rebase) and build the wheel "
        "again (compatkit wheel), or drop the path source"
    )


def stale_wheel(dist: Dist | None, wanted: str) -> str | None:
    """:func:`next_step` when ``dist`` is a patched wheel (None: it is not one)."""
    built = built_with(dist) if dist is not None else []
    return next_step(dist, wanted, built) if dist is not None and built else None


def _dependencies(pyproject: Path) -> list[str]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:  # read here, never from a cache: it decides a verdict (docs/security.md)
        data = tomllib.loads(pyproject.read_text("utf-8"))
    except (OSError, ValueError, RecursionError):
        return []  # the config reader reports a broken pyproject.toml
    project = data.get("project")
    deps = project.get("dependencies", []) if isinstance(project, dict) else []
    return [d for d in deps if isinstance(d, str)] if isinstance(deps, list) else []


def project_mismatches(pyproject: Path, env: Environment, names: list[str]) -> list[str]:
    """Every patched wheel among the distributions ``names`` whose version the project's
    ``[project] dependencies`` no longer accept, each with its next step. Reads nothing, and
    imports nothing, unless one of them is a patched wheel (start-up time)."""
    dists = [d for d in map(env.find, dict.fromkeys(names)) if d is not None and built_with(d)]
    if not dists:
        return []
    from packaging.requirements import InvalidRequirement, Requirement

    from compatkit.model.names import normalize_name

    wheels = {normalize_name(d.name): d for d in dists}
    found = []
    for text in _dependencies(pyproject):
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        dist = wheels.get(normalize_name(req.name))
        if dist is None or (req.marker is not None and not req.marker.evaluate(env.markers)):
            continue
        if not req.specifier.contains(dist.version, prereleases=True):
            built = built_with(dist)
            found.append(f"{pyproject} asks for {text}: " + next_step(dist, text, built))
    return found
