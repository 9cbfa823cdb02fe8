"""``compatkit fleet apply`` is all or nothing across nodes: where each node was left.

When every node is as asked, each keeps what it applied. Otherwise every patchset this run
applied (action ``"applied"``; one that was already applied is not this run's) is reverted on
each node that answered, newest first, one pinned task per node, before the command reports;
a node that failed keeps its own apply's all-or-nothing (nothing written, or a journal the
next compatkit command there rolls back). ``keep_going`` keeps the partial state on purpose.
Each :class:`~compatkit.ops.fleet.NodeReport` gets its ``end`` (a :class:`NodeEnd`) and
the reason for it.
"""

from __future__ import annotations

from typing import Any

from compatkit.model.action import Action
from compatkit.model.results import NodeEnd
from compatkit.ops.fleet_nodes import FleetResult, NodeReport, run_on

UNKNOWN = (
    "no answer: check it with compatkit verify there; an apply cut off midway is rolled back "
    "by the next compatkit command on that node"
)


def settle(
    ray: Any,
    result: FleetResult,
    dirs: list[str],
    python: str | None,
    timeout: float,
    keep_going: bool,
) -> None:
    """Set every node's ``end``, reverting this run's applies first unless it all went well
    or ``keep_going``."""
    todo = [(node, applied_by_run(node)) for node in result.nodes]
    todo = [(node, names) for node, names in todo if names]
    if result.ok or keep_going or not todo:
        kept = keep_going and not result.ok
        for node in result.nodes:
            node.end, node.end_reason = _as_left(node)
            if kept and node.end is NodeEnd.APPLIED:
                node.end = NodeEnd.KEPT
        return
    nodes = [({"NodeID": n.node_id, "NodeManagerAddress": n.address}, names) for n, names in todo]
    undone = run_on(ray, nodes, "revert", dirs, python, timeout)
    result.rolled_back = True
    for (node, names), revert in zip(todo, undone, strict=True):
        node.end, node.end_reason = _rolled_back(names, revert)
    for node in result.nodes:
        if node.end is None:
            node.end, node.end_reason = _as_left(node)


def applied_by_run(node: NodeReport) -> list[str]:
    """The patchsets this run applied on ``node``, newest first (the order to revert them)."""
    if node.answer is None:
        return []
    return [ps.name for ps in reversed(node.answer.patchsets) if ps.action is Action.APPLIED]


def _as_left(node: NodeReport) -> tuple[NodeEnd, str]:
    if node.answer is None:
        return NodeEnd.UNKNOWN, UNKNOWN
    applied = applied_by_run(node)
    if applied:
        return NodeEnd.APPLIED, ", ".join(reversed(applied))
    return NodeEnd.UNCHANGED, ""


def _rolled_back(names: list[str], revert: NodeReport) -> tuple[NodeEnd, str]:
    which = ", ".join(names)
    if revert.answer is None:
        return NodeEnd.NOT_ROLLED_BACK, f"{which} may still be applied ({revert.failure})"
    problems = [p for ps in revert.answer.patchsets for p in ps.problems]
    if problems:
        return NodeEnd.NOT_ROLLED_BACK, f"{which} still applied: {'; '.join(problems)}"
    return NodeEnd.ROLLED_BACK, f"{which} reverted"
