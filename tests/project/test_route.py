"""The natural route (issue 27): revert's data goes down the layers and comes back once:
open (lock + recover) → load → plan → write → report, each one step in one place.

tests/project/route.py traces the calls; docs/architecture.md states the route.
"""

from __future__ import annotations

import os

import pytest
from route import Route, trace

from compatkit.env import state as state_module
from compatkit.env.state import State
from compatkit.env.target import Dist, Environment
from compatkit.load.registry import Registry
from compatkit.ops.apply import apply_patchset
from compatkit.ops.revert import revert_patchset
from helpers import Demo


def _revert_traced(demo: Demo) -> tuple[object, list[str], Route]:
    code, _, err = demo.run("apply", "demo-fix")
    assert code == 0, err
    registry = Registry([demo.patchsets])
    env = Environment.for_python(demo.venv.python)
    result, route = trace(revert_patchset, registry, env, "demo-fix")
    return result, route.entries, route


def _down_once_and_back(route: Route, top: str, modules: int) -> None:
    """The route of issue 27: the lock (Session.open) before the plan before the journal, the
    write only after the last planning call, at most 4 climbs (no back-and-forth between the
    layers), and the report built on top (``top``). ``modules``: a ceiling on the concerns
    entered, a module split off another for one concern counting with it
    (route.ONE_CONCERN): it keeps a command from wandering through unrelated modules, never
    from splitting one along its concerns."""
    shown = route.shown()
    entries = route.entries
    assert len(route.climbs) <= 4, shown
    assert len(route.modules) <= modules, shown
    first = {m: entries.index(m) for m in reversed(entries)}
    steps = ["compatkit.env.session", "compatkit.env.plan", "compatkit.env.txn"]
    assert [first[m] for m in steps] == sorted(first[m] for m in steps), shown
    last_plan = len(entries) - 1 - entries[::-1].index("compatkit.env.plan")
    commit = entries.index("compatkit.env.session", last_plan)  # Session.commit
    assert "compatkit.env.txn" in entries[commit:], f"no write after the plan: {shown}"
    assert entries[-1] == top, shown


def test_revert_goes_down_once_and_comes_back(demo: Demo) -> None:
    result, _, route = _revert_traced(demo)
    assert getattr(result, "state", None) is not None
    # 12: issue 46 added two leaves of env (entered from session and txn, no climb): the owner
    # check before the lock (env.owners) and the descriptor walk of every write (env.beneath)
    _down_once_and_back(route, "compatkit.ops.revert", modules=12)


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


def test_apply_goes_down_once_and_comes_back(demo: Demo) -> None:
    """Issue 35: apply's route, traced as revert's (loading the patchset included), enters at
    most 12 modules; 14 since issue 46 (env.owners and env.beneath, see the revert test)."""
    registry = Registry([demo.patchsets])
    env = Environment.for_python(demo.venv.python)
    result, route = trace(apply_patchset, registry, env, "demo-fix", [])
    assert getattr(result, "action", None) == "applied"
    _down_once_and_back(route, "compatkit.ops.apply", modules=14)
