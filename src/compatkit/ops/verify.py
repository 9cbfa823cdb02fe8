"""Verify: is a patchset fully applied and intact; is a distribution pristine?"""

from __future__ import annotations

from compatkit.checks import constraint_problems, state_problems
from compatkit.records import Row, hash_bytes
from compatkit.registry import Registry
from compatkit.session import Session
from compatkit.state import find_applied, states_of
from compatkit.target import Dist, Environment


def locate(registry: Registry, env: Environment, name: str) -> Dist | None:
    """The distribution holding ``name``'s state, else the one the patchset targets."""
    dist = find_applied(env, name)
    if dist is None:
        dist = env.find(registry.get(name).distribution)
    return dist


def problems(registry: Registry, env: Environment, name: str) -> list[str]:
    """Every way ``name`` is not fully applied and intact here (empty: verified)."""
    dist = locate(registry, env, name)
    if dist is None:
        return [f"{name}: its target distribution is not installed"]
    with Session.open(dist) as s:
        state = s.state(name)
        if state is None:
            lost = (
                ""
                if pristine_problems(dist)
                else (
                    ": the files match their RECORD, so a reinstall removed the patches "
                    "or they were never applied"
                )
            )
            return [f"{name} is not applied to {dist.name} {dist.version}{lost}"]
        found = [f"{name}: {p}" for p in state_problems(dist, state)]
    if state.excluded:
        found.append(f"{name}: applied without {', '.join(state.excluded)} (--exclude)")
    if name in registry.names():
        ps = registry.get(name)
        if ps.digest != state.digest:
            found.append(
                f"{name}: the patchset changed since it was applied "
                f"({state.version} -> {ps.version}); run compatkit apply {name}"
            )
        found += [f"{name}: {p}" for p in constraint_problems(ps, env)]
    return found


def _hash_row(dist: Dist, row: Row) -> str | None:
    data = dist.read(row.path)
    if data is None:
        return f"{row.path} is missing"
    if hash_bytes(data, threads=True) != row.hash:
        return f"{row.path} does not match its RECORD hash"
    return None


def pristine_problems(dist: Dist) -> list[str]:
    """Every file that differs from RECORD, and every file a patchset patched."""
    rows = [r for r in dist.read_record().rows if r.hash and not r.path.startswith("..")]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=4) as pool:
        found = pool.map(lambda r: _hash_row(dist, r), rows, chunksize=32)
        out = [p for p in found if p]
    for state in states_of(dist):
        out += [f"{f.path} is patched by {state.patchset}" for f in state.files]
    return out


def pristine(env: Environment, name: str) -> tuple[Dist, list[str]]:
    """``name``'s distribution and its :func:`pristine_problems`, under a shared lock."""
    dist = env.require(name)
    with Session.open(dist, exclusive=False):
        return dist, pristine_problems(dist)
