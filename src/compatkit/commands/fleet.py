"""``compatkit fleet status|verify|apply|revert PATCHSET... [--address ADDR]``.

One table per node and patchset; a node that failed or died is one line naming it and why.
Exit 0 only if every alive node answered and is as asked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compatkit.errors import CompatkitError
from compatkit.ops.fleet import FleetResult, NodeReport, run_fleet
from compatkit.output import Output
from compatkit.registry import Registry


def fleet(
    registry: Registry,
    verb: str,
    names: list[str],
    address: str | None,
    python: str | None,
    dirs: list[Path],
    timeout: float,
    out: Output,
) -> int:
    for name in names:
        registry.get(name)  # an unknown name is a usage error here, before any node is asked
    result = run_fleet(verb, names, address, python, dirs, timeout)
    return render(result, out)


def render(result: FleetResult, out: Output) -> int:
    out.doc.update(
        ok=result.ok,
        command=result.verb,
        address=result.address,
        nodes=[_node_doc(n) for n in result.nodes],
        dead_before=result.dead_before,
    )
    for node in result.nodes:
        _show(node, out)
    if result.dead_before:
        out.line(f"not asked (dead before this run): {', '.join(result.dead_before)}")
    bad = [n for n in result.nodes if not n.ok]
    if not result.nodes:
        raise CompatkitError(f"the Ray cluster at {result.address} has no alive node")
    if bad:
        raise CompatkitError(
            f"fleet {result.verb}: {len(bad)} of {len(result.nodes)} nodes not as asked",
            [_problem(n) for n in bad],
        )
    names = ", ".join(n.node_id[:12] for n in result.nodes)
    out.line(
        f"fleet {result.verb}: all {len(result.nodes)} nodes as asked ({names})", style="green"
    )
    return 0


def _title(node: NodeReport) -> str:
    return f"node {node.node_id[:12]} ({node.address})"


def _show(node: NodeReport, out: Output) -> None:
    if node.answer is None:
        out.line(f"{_title(node)}: {node.failure}", style="red")
        return
    for ps in node.answer.patchsets:
        state = ps.summary or "error"
        action = f", {ps.action}" if ps.action else ""
        rows = [[p.id, str(p.status), p.detail] for p in ps.patches]
        out.table(
            f"{_title(node)} {node.answer.python}: {ps.name}: {state}{action}",
            ["patch", "state", "detail"],
            rows,
        )
        for problem in ps.problems:
            out.line(f"  {problem}", style="red")


def _problem(node: NodeReport) -> str:
    if node.answer is None:
        return f"{_title(node)}: {node.failure}"
    found = [p for ps in node.answer.patchsets for p in ps.problems]
    return f"{_title(node)}: {'; '.join(found)}"


def _node_doc(node: NodeReport) -> dict[str, Any]:
    answer = node.answer
    return {
        "node_id": node.node_id,
        "address": node.address,
        "ok": node.ok,
        "failure": node.failure,
        "python": answer.python if answer else None,
        "patchsets": [
            {
                "name": ps.name,
                "state": ps.summary or None,
                "action": ps.action,
                "ok": ps.ok,
                "problems": ps.problems,
                "patches": [
                    {"id": p.id, "status": p.status, "detail": p.detail} for p in ps.patches
                ],
            }
            for ps in (answer.patchsets if answer else [])
        ],
    }
