"""The states results report: one enum per domain, each value the text users see."""

from __future__ import annotations

import json
from enum import Enum

from compatkit.env.target import Environment
from compatkit.load.registry import Registry
from compatkit.model.action import Action
from compatkit.model.results import (
    MATRIX_STATES,
    DiffState,
    PatchsetState,
    PatchState,
    PortState,
    SmokeState,
    UpstreamState,
)
from compatkit.ops.apply import apply_patchset
from compatkit.ops.revert import revert_patchset
from compatkit.ops.status import inspect_patchset
from helpers import Demo


def test_every_domain_keeps_the_texts_users_and_json_see() -> None:
    """Each value is what ``--json``, matrix results files and matrix.toml carry: renaming
    one breaks them, so a change here must be deliberate."""
    texts: dict[type[Enum], list[str]] = {
        PatchState: [
            "applied",
            "built in",
            "not applied",
            "drifted",
            "excluded",
            "outdated",
            "not applicable",
            "applied (runtime)",
        ],
        PatchsetState: [
            "applied",
            "applied (built in)",
            "not applicable",
            "drifted",
            "partly applied",
            "outdated",
            "partly applied (without compatkit)",
            "already present",
            "not applied",
        ],
        DiffState: ["applies", "already present", "conflict"],
        UpstreamState: ["upstream", "still needed", "needs port", "removed upstream"],
        PortState: ["clean", "offset", "merged", "upstream", "conflict"],
        SmokeState: ["pass", "fail", "not run"],
        Action: ["applied", "dry-run", "reverted", "none"],
    }
    for domain, values in texts.items():
        assert [m.value for m in domain] == values, domain
        assert all(str(m) == f"{m}" == json.loads(json.dumps(m)) == m.value for m in domain)
    assert [str(s) for s in MATRIX_STATES] == [
        "applied",
        "upstream",
        "still needed",
        "needs port",
        "removed upstream",
        "not applicable",
    ]


def test_apply_and_status_report_typed_states(demo: Demo) -> None:
    registry, env = Registry([demo.patchsets]), Environment.for_python(demo.venv.python)
    ps = registry.get("demo-fix")
    before = inspect_patchset(ps, env)
    assert before.summary is PatchsetState.NOT_APPLIED
    assert [(s.status, s.textual) for s in before.statuses] == [
        (PatchState.NOT_APPLIED, DiffState.APPLIES)
    ] * len(ps.patches)
    assert apply_patchset(registry, env, ps.name, [], dry_run=True).action is Action.DRY_RUN
    assert apply_patchset(registry, env, ps.name, []).action is Action.APPLIED
    assert apply_patchset(registry, env, ps.name, []).action is Action.NONE
    after = inspect_patchset(ps, env)
    assert after.summary is PatchsetState.APPLIED
    assert {s.status for s in after.statuses} == {PatchState.APPLIED}
    assert revert_patchset(registry, env, ps.name).state is not None
    code, out, _ = demo.run("--json", "apply", ps.name)
    assert code == 0 and json.loads(out)["action"] == "applied"
    code, out, _ = demo.run("--json", "status", ps.name)
    assert code == 0 and json.loads(out)["patchsets"][0]["state"] == "applied"
