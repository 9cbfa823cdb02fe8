"""``compatkit fleet apply`` is all or nothing across nodes: where each node was left.

When every node is as asked, each keeps what it applied. Otherwise every patchset this run
applied (action ``"applied"``; one that was already applied is not this run's) is reverted on
each node that answered, newest first, one pinned task per node, before the command reports;
a node that failed keeps its own apply's all-or-nothing (nothing written, or a journal the
next compatkit command there rolls back). ``keep_going`` keeps the partial state on purpose.
Each :class:`~compatkit.ops.fleet.NodeReport` gets its ``end`` in words.
"""

from __future__ import annotations

from typing import Any

from compatkit.model.results import Action
from compatkit.ops.fleet_nodes import FleetResult, NodeReport, run_on

UNKNOWN = (
    "end state unknown (no answer): check it with compatkit verify there; an apply cut off "
    "midway is rolled back by the next compatkit command on that node"
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
        kept = " (kept: --keep-going)" if keep_going and not result.ok else ""
        for node in result.nodes:
            node.end = _as_left(node) + (kept if applied_by_run(node) else "")
        return
    nodes = [({"NodeID": n.node_id, "NodeManagerAddress": n.address}, names) for n, names in todo]
    undone = run_on(ray, nodes, "revert", dirs, python, timeout)
    result.rolled_back = True
    for (node, names), revert in zip(todo, undone, strict=True):
        node.end = _rolled_back(names, revert)
    for node in result.nodes:
        node.end = node.end or _as_left(node)


def applied_by_run(node: NodeReport) -> list[str]:
    """The patchsets this run applied on ``node``, newest first (the order to revert them)."""
    if node.answer is None:
        return []
    return [ps.name for ps in reversed(node.answer.patchsets) if ps.action is Action.APPLIED]


def _as_left(node: NodeReport) -> str:
    if node.answer is None:
        return UNKNOWN
    applied = applied_by_run(node)
    return f"applied: {', '.join(reversed(applied))}" if applied else "unchanged"


def _rolled_back(names: list[str], revert: NodeReport) -> str:
    which = ", ".join(names)
    if revert.answer is None:
        return f"NOT rolled back ({revert.failure}): {which} may still be applied"
    problems = [p for ps in revert.answer.patchsets for p in ps.problems]
    if problems:
        return f"NOT rolled back, {which} still applied: {'; '.join(problems)}"
    return f"rolled back: {which} reverted"
