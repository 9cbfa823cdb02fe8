"""The natural route (issue 27): revert's data goes down the layers and comes back once:
open (lock + recover) → load → plan → write → report, each one step in one place.

tests/route.py traces the calls; docs/architecture.md states the route.
"""

from __future__ import annotations

import os

import pytest

from compatkit.env import state as state_module
from compatkit.env.state import State
from compatkit.env.target import Dist, Environment
from compatkit.load.registry import Registry
from compatkit.ops.apply import apply_patchset
from compatkit.ops.revert import revert_patchset
from helpers import Demo
from route import Route, trace


def _revert_traced(demo: Demo) -> tuple[object, list[str], Route]:
    code, _, err = demo.run("apply", "demo-fix")
    assert code == 0, err
    registry = Registry([demo.patchsets])
    env = Environment.for_python(demo.venv.python)
    result, route = trace(revert_patchset, registry, env, "demo-fix")
    return result, route.entries, route


def test_revert_goes_down_once_and_comes_back(demo: Demo) -> None:
    result, entries, route = _revert_traced(demo)
    assert getattr(result, "state", None) is not None
    shown = route.shown()
    assert len(route.climbs) <= 4, shown
    assert len(route.modules) <= 10, shown
    first = {m: entries.index(m) for m in reversed(entries)}
    steps = ["compatkit.env.lock", "compatkit.env.plan", "compatkit.env.txn"]
    assert [first[m] for m in steps] == sorted(first[m] for m in steps), shown
    last_plan = len(entries) - 1 - entries[::-1].index("compatkit.env.plan")
    writes = [i for i, m in enumerate(entries) if m == "compatkit.env.rollback_check"]
    assert writes and min(writes) > last_plan, f"the write began before the plan ended: {shown}"
    assert entries[-1] == "compatkit.ops.revert", shown  # the report is built on top


def test_revert_reads_each_state_file_once(demo: Demo, monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading is one step: the patchset's own state is not read again to find the others."""
    code, _, err = demo.run("apply", "demo-fix")
    assert code == 0, err
    reads: list[str] = []
    real = state_module.load_state

    def counted(dist: Dist, patchset: str) -> State | None:
        reads.append(patchset)
        return real(dist, patchset)

    monkeypatch.setattr(state_module, "load_state", counted)
    monkeypatch.setattr("compatkit.env.session.load_state", counted)
    registry = Registry([demo.patchsets])
    result = revert_patchset(registry, Environment.for_python(demo.venv.python), "demo-fix")
    assert result.state is not None
    assert sorted(reads) == sorted(set(reads)), reads
    assert not os.path.exists(demo.venv.site / "demo-1.0.dist-info" / "compatkit" / "demo-fix.json")


@pytest.mark.xfail(
    strict=True,
    reason="issue 35: apply enters 17 modules today (loading: load.registry, trust, validate, "
    "cache, cachedir; env.disk, env.rollback_check), the goal is 12",
)
def test_apply_goes_down_once_and_comes_back(demo: Demo) -> None:
    """Issue 35: apply's route, traced as revert's, enters at most 12 modules."""
    registry = Registry([demo.patchsets])
    env = Environment.for_python(demo.venv.python)
    result, route = trace(apply_patchset, registry, env, "demo-fix", [])
    assert getattr(result, "action", None) == "applied"
    shown = route.shown()
    assert len(route.modules) <= 12, shown
    entries = route.entries
    first = {m: entries.index(m) for m in reversed(entries)}
    steps = ["compatkit.env.lock", "compatkit.env.plan", "compatkit.env.txn"]
    assert [first[m] for m in steps] == sorted(first[m] for m in steps), shown
