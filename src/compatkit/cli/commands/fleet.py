"""``compatkit fleet status|verify|apply|revert PATCHSET... [--address ADDR]``.

One table per node and patchset; a node that failed or died is one line naming it and why.
Exit 0 only if every alive node answered and is as asked. ``apply`` names where it left each
node (rolled back, unchanged, applied, unknown) when it did not succeed everywhere.
"""

from __future__ import annotations

from pathlib import Path

from compatkit.cli.output import Output
from compatkit.errors import UsageError
from compatkit.model.results import NodeEnd
from compatkit.ops.fleet import FleetResult, NodeReport, run_fleet

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import Namespace

    from compatkit.cli.context import Context
    from compatkit.load.registry import Registry


def fleet(
    registry: Registry,
    verb: str,
    names: list[str],
    address: str | None,
    python: str | None,
    dirs: list[Path],
    timeout: float,
    out: Output,
    force: bool = False,
    keep_going: bool = False,
) -> int:
    if verb != "apply" and (force or keep_going):
        option = "--force" if force else "--keep-going"
        raise UsageError(f"{option} is an option of fleet apply only, not fleet {verb}")
    for name in names:
        registry.get(name)  # an unknown name is a usage error here, before any node is asked
    result = run_fleet(verb, names, address, python, dirs, timeout, force, keep_going)
    return render(result, out)


def render(result: FleetResult, out: Output) -> int:
    doc = result.to_json()
    for node in result.nodes:
        _show(node, out)
    if result.dead_before:
        out.line(f"not asked (dead before this run): {', '.join(result.dead_before)}")
    bad = [n for n in result.nodes if not n.ok]
    if not result.nodes:
        return out.fail(doc, f"the Ray cluster at {result.address} has no alive node")
    if bad:
        message = f"fleet {result.verb}: {len(bad)} of {len(result.nodes)} nodes not as asked"
        if result.verb != "apply":
            return out.fail(doc, message, [_problem(n) for n in bad])
        return out.fail(doc, f"{message}; {_outcome(result)}", [_left(n) for n in result.nodes])
    out.result(doc)
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


def _outcome(result: FleetResult) -> str:
    """What apply did about the nodes it reached, in one clause."""
    back = [n for n in result.nodes if n.end is NodeEnd.ROLLED_BACK]
    unsure = [n for n in result.nodes if n.answer is None or n.end is NodeEnd.NOT_ROLLED_BACK]
    if result.rolled_back:
        done = f"rolled back on the {len(back)} node(s) it had applied to"
        return f"{done}; {len(unsure)} node(s) not known to be as before" if unsure else done
    if any(n.end is NodeEnd.KEPT for n in result.nodes):
        return "the nodes it applied to keep it (--keep-going)"
    return "it applied nothing"


def _left(node: NodeReport) -> str:
    """A node's end state, and why it was not as asked if it was not."""
    return f"{_title(node)}: {node.end_text}" + ("" if node.ok else f" ({_why(node)})")


def _why(node: NodeReport) -> str:
    if node.answer is None:
        return str(node.failure)
    return "; ".join(p for ps in node.answer.patchsets for p in ps.problems)


def _problem(node: NodeReport) -> str:
    return f"{_title(node)}: {_why(node)}"


def run(args: Namespace, ctx: Context) -> int:
    """``--python`` names an interpreter on the nodes, not here: no environment is made."""
    where = (args.address, args.python, ctx.patchset_dirs, args.timeout)
    verb, names = args.action, args.patchset
    return fleet(ctx.registry, verb, names, *where, ctx.out, args.force, args.keep_going)
