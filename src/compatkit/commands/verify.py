"""``compatkit verify [PATCHSET]`` and ``compatkit verify --pristine DIST``."""

from __future__ import annotations

from compatkit.checks import state_problems
from compatkit.commands.revert import locate
from compatkit.errors import CompatkitError
from compatkit.output import Output
from compatkit.records import Row, hash_bytes
from compatkit.registry import Registry
from compatkit.state import load_state, states_of
from compatkit.target import Dist, Environment
from compatkit.txn import locked, recover


def _problems(registry: Registry, env: Environment, name: str) -> list[str]:
    dist = locate(registry, env, name)
    if dist is None:
        return [f"{name}: its target distribution is not installed"]
    with locked(dist):
        recover(dist)
        state = load_state(dist, name)
        if state is None:
            lost = (
                ""
                if _pristine_problems(dist)
                else (
                    ": the files match their RECORD, so a reinstall removed the patches "
                    "or they were never applied"
                )
            )
            return [f"{name} is not applied to {dist.name} {dist.version}{lost}"]
        problems = [f"{name}: {p}" for p in state_problems(dist, state)]
    if state.excluded:
        problems.append(f"{name}: applied without {', '.join(state.excluded)} (--exclude)")
    if name in registry.names():
        ps = registry.get(name)
        if ps.digest != state.digest:
            problems.append(
                f"{name}: the patchset changed since it was applied "
                f"({state.version} -> {ps.version}); run compatkit apply {name}"
            )
    return problems


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
        problems += _problems(registry, env, name)
    out.doc.update(ok=not problems, patchsets=names, problems=problems)
    if problems:
        raise CompatkitError(f"verify failed: {len(problems)} problem(s)", problems)
    out.line(
        f"verified: {', '.join(names)} fully applied, every patched file intact", style="green"
    )
    return 0


def _hash_row(dist: Dist, row: Row) -> str | None:
    data = dist.read(row.path)
    if data is None:
        return f"{row.path} is missing"
    if hash_bytes(data) != row.hash:
        return f"{row.path} does not match its RECORD hash"
    return None


def _pristine_problems(dist: Dist) -> list[str]:
    rows = [r for r in dist.read_record().rows if r.hash and not r.path.startswith("..")]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=4) as pool:
        found = pool.map(lambda r: _hash_row(dist, r), rows, chunksize=32)
        problems = [p for p in found if p]
    for state in states_of(dist):
        problems += [f"{f.path} is patched by {state.patchset}" for f in state.files]
    return problems


def verify_pristine(env: Environment, name: str, out: Output | None = None) -> int:
    out = out or Output()
    dist = env.require(name)
    with locked(dist, exclusive=False):
        problems = _pristine_problems(dist)
    out.doc.update(ok=not problems, distribution=dist.name, version=dist.version, problems=problems)
    if problems:
        raise CompatkitError(f"{dist.name} {dist.version} is not pristine", problems)
    out.line(f"{dist.name} {dist.version}: every file matches its RECORD", style="green")
    return 0
