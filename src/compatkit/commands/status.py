"""``compatkit status [PATCHSET]`` and ``compatkit list``."""

from __future__ import annotations

from compatkit.checks import PatchStatus, patch_statuses, requirement_problems
from compatkit.output import Output
from compatkit.patchset import Patchset
from compatkit.registry import Registry
from compatkit.state import State, load_state
from compatkit.target import Dist, Environment
from compatkit.txn import locked, recover


def inspect_patchset(
    ps: Patchset, env: Environment
) -> tuple[Dist | None, State | None, list[PatchStatus]]:
    dist = env.find(ps.distribution)
    state = None
    if dist is not None:
        with locked(dist):
            recover(dist)
            state = load_state(dist, ps.name)
    return dist, state, patch_statuses(ps, env, dist, state)


def summarize(statuses: list[PatchStatus]) -> str:
    kinds = [s.status for s in statuses]
    if kinds and all(k == "applied" for k in kinds):
        return "applied"
    if kinds and all(k == "not applicable" for k in kinds):
        return "not applicable"
    if "drifted" in kinds:
        return "drifted"
    if "applied" in kinds or "outdated" in kinds:
        return "partly applied" if "excluded" in kinds else "outdated"
    present = [s for s in statuses if "already present" in s.detail]
    if present and len(present) < len(statuses):
        return "partly applied (without compatkit)"
    return "already present" if present else "not applied"


def status(
    registry: Registry, env: Environment, names: list[str], out: Output | None = None
) -> int:
    out = out or Output()
    out.doc["patchsets"] = []
    for name in names or registry.names():
        ps = registry.get(name)
        dist, state, statuses = inspect_patchset(ps, env)
        summary = summarize(statuses)
        found = f"{dist.name} {dist.version}" if dist else f"{ps.distribution} not installed"
        out.doc["patchsets"].append(
            {
                "name": ps.name,
                "version": ps.version,
                "target": ps.target,
                "installed": dist.version if dist else None,
                "state": summary,
                "applied_version": state.version if state else None,
                "patches": [
                    {"id": s.id, "status": s.status, "detail": s.detail, "startup_code": s.startup}
                    for s in statuses
                ],
            }
        )
        rows = [
            [s.id, ps.patch(s.id).title if ps.patch(s.id) else "", s.status, s.detail]  # type: ignore[union-attr]
            for s in statuses
        ]
        out.table(
            f"{ps.name} {ps.version} → {ps.target} (found {found}): {summary}",
            ["patch", "title", "state", "detail"],
            rows,
        )
    return 0


def list_patchsets(registry: Registry, env: Environment, out: Output | None = None) -> int:
    out = out or Output()
    rows, docs = [], []
    for ps in registry.all():
        dist = env.find(ps.distribution)
        problems = requirement_problems(ps, env, dist)
        state = load_state(dist, ps.name) if dist else None
        where = "applied" if state else ("not applicable" if problems else "not applied")
        docs.append(
            {
                "name": ps.name,
                "version": ps.version,
                "patches": len(ps.patches),
                "target": ps.target,
                "requires": [str(r) for r in ps.requires],
                "state": where,
                "path": str(ps.root),
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
                where,
            ]
        )
    out.doc["patchsets"] = docs
    out.table("patchsets", ["name", "version", "target", "requires", "patches", "here"], rows)
    return 0
