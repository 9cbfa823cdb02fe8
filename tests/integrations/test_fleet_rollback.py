"""fleet apply's all-or-nothing decision and its report, without Ray: the revert round is
replaced by a recorder (tests/integrations/test_fleet.py runs the real thing on a real cluster)."""

from __future__ import annotations

import contextlib
import io
import json
import pickle
from typing import Any

import pytest

from compatkit.cli.commands.fleet import render
from compatkit.cli.output import Output
from compatkit.model.action import Action
from compatkit.model.results import NodeEnd, PatchsetState, PatchState
from compatkit.ops import fleet_rollback
from compatkit.ops.fleet import FleetResult, NodeAnswer, NodeReport, PatchsetOnNode
from compatkit.ops.fleet_nodes import PatchRow


def node(node_id: str, *done: tuple[str, Action | None, list[str]]) -> NodeReport:
    """A node that answered: (patchset, its action, its problems) each."""
    patchsets = [PatchsetOnNode(n, PatchsetState.APPLIED, action=a, problems=p) for n, a, p in done]
    return NodeReport(node_id * 12, "10.0.0.1", NodeAnswer("/py", patchsets))


def dead(node_id: str) -> NodeReport:
    return NodeReport(node_id * 12, "10.0.0.2", failure="died during fleet apply (NodeDiedError)")


class Reverts:
    """What settle asks the nodes to revert, and what each revert answers."""

    def __init__(self, refuse: frozenset[str] = frozenset()) -> None:
        self.asked: list[tuple[str, list[str]]] = []
        self.refuse = refuse

    def __call__(
        self, ray: Any, todo: list[tuple[dict[str, Any], list[str]]], verb: str, *_: Any
    ) -> list[NodeReport]:
        assert verb == "revert"
        answers = []
        for info, names in todo:
            self.asked.append((info["NodeID"][:1], names))
            problems = (
                ["demo/greet.py was edited since the apply"]
                if info["NodeID"][:1] in self.refuse
                else []
            )
            answers.append(
                node(info["NodeID"][:1], *((n, Action.REVERTED, problems) for n in names))
            )
        return answers


def settle(
    result: FleetResult,
    monkeypatch: pytest.MonkeyPatch,
    keep_going: bool = False,
    refuse: frozenset[str] = frozenset(),
) -> Reverts:
    reverts = Reverts(refuse)
    monkeypatch.setattr(fleet_rollback, "run_on", reverts)
    fleet_rollback.settle(None, result, [], None, 60.0, keep_going)
    return reverts


def report(result: FleetResult) -> tuple[str, list[str]]:
    """The failure's message and problems, from the --json document (exit 1, the nodes kept)."""
    out, shown = Output(json_mode=True), io.StringIO()
    with contextlib.redirect_stdout(shown), contextlib.redirect_stderr(io.StringIO()):
        code = render(result, out)
        out.emit(code, "fleet")
    doc = json.loads(shown.getvalue())
    assert code == 1 and doc["ok"] is False and len(doc["nodes"]) == len(result.nodes)
    return doc["error"], doc["problems"]


def test_what_this_run_applied_is_reverted_newest_first(monkeypatch: pytest.MonkeyPatch) -> None:
    # one: applied before the run
    a = node("a", ("one", Action.NONE, []), ("two", Action.APPLIED, []))
    b = node("b", ("one", Action.APPLIED, []), ("two", Action.APPLIED, []))
    c = node("c", ("one", Action.APPLIED, []), ("two", None, ["two: refusing to apply"]))
    result = FleetResult("apply", "x", [a, b, c, dead("d")])
    reverts = settle(result, monkeypatch)
    assert reverts.asked == [("a", ["two"]), ("b", ["two", "one"]), ("c", ["one"])]
    assert result.rolled_back
    assert [n.end for n in result.nodes] == [NodeEnd.ROLLED_BACK] * 3 + [NodeEnd.UNKNOWN]
    assert [n.end_text for n in result.nodes] == [
        "rolled back: two reverted",
        "rolled back: two, one reverted",
        "rolled back: one reverted",
        f"end state unknown: {fleet_rollback.UNKNOWN}",
    ]
    message, problems = report(result)
    assert message == (
        "fleet apply: 2 of 4 nodes not as asked; rolled back on the 3 node(s) it had applied "
        "to; 1 node(s) not known to be as before"
    )
    assert (
        problems[2]
        == "node cccccccccccc (10.0.0.1): rolled back: one reverted (two: refusing to apply)"
    )
    assert problems[3].startswith(
        f"node dddddddddddd (10.0.0.2): end state unknown: {fleet_rollback.UNKNOWN} (died"
    )


def test_a_refused_revert_is_named_not_rolled_back(monkeypatch: pytest.MonkeyPatch) -> None:
    result = FleetResult("apply", "x", [node("a", ("one", Action.APPLIED, [])), dead("b")])
    settle(result, monkeypatch, refuse=frozenset("a"))
    assert result.nodes[0].end is NodeEnd.NOT_ROLLED_BACK
    assert result.nodes[0].end_text == (
        "NOT rolled back: one still applied: demo/greet.py was edited since the apply"
    )
    message, _ = report(result)
    assert message.endswith(
        "rolled back on the 0 node(s) it had applied to; 2 node(s) not known to be as before"
    )


def test_keep_going_and_success_revert_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    result = FleetResult("apply", "x", [node("a", ("one", Action.APPLIED, [])), dead("b")])
    assert settle(result, monkeypatch, keep_going=True).asked == []
    assert result.nodes[0].end is NodeEnd.KEPT and not result.rolled_back
    assert result.nodes[0].end_text == "applied, kept (--keep-going): one"
    message, _ = report(result)
    assert message.endswith("the nodes it applied to keep it (--keep-going)")
    result = FleetResult(
        "apply", "x", [node("a", ("one", Action.APPLIED, [])), node("b", ("one", Action.NONE, []))]
    )
    assert settle(result, monkeypatch).asked == []
    assert [n.end for n in result.nodes] == [NodeEnd.APPLIED, NodeEnd.UNCHANGED]
    assert [n.end_text for n in result.nodes] == ["applied: one", "unchanged"]
    assert render(result, Output(json_mode=True)) == 0


@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_a_fleet_result_pickles_whole(protocol: int) -> None:
    """A node's answer travels back through Ray (pickle): the slotted value objects of
    compatkit.ops.fleet_nodes come back equal, every field and default included."""
    answered = node("a", ("one", Action.APPLIED, ["one: drifted"]))
    assert answered.answer is not None
    answered.answer.patchsets[0].patches.append(PatchRow("p1", PatchState.APPLIED, "ok"))
    answered.end, answered.end_reason = NodeEnd.ROLLED_BACK, "one reverted"
    result = FleetResult("apply", "x", [answered, dead("b")], ["cc"], rolled_back=True)
    back = pickle.loads(pickle.dumps(result, protocol=protocol))
    assert back == result and back is not result
    assert back.to_json() == result.to_json()
    assert back.nodes[0].answer.patchsets[0].patches == [PatchRow("p1", PatchState.APPLIED, "ok")]
    assert (back.dead_before, back.rolled_back, back.nodes[1].answer) == (["cc"], True, None)
    assert back != FleetResult("apply", "x", [answered, dead("b")], ["cc"])
