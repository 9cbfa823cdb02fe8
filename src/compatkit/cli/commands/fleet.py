"""``compatkit fleet status|verify|apply|revert PATCHSET... [--address ADDR]``.

One table per node and patchset; a node that failed or died is one line naming it and why.
Exit 0 only if every alive node answered and is as asked. ``apply`` names where it left each
node (rolled back, unchanged, applied, unknown) when it did not succeed everywhere.
"""

from __future__ import annotations

from pathlib import Path

from compatkit.cli import options
from compatkit.cli.output import Output
from compatkit.model.results import NodeEnd
from compatkit.ops.fleet import FleetResult, NodeReport, run_fleet

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

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


VERBS = {
    "status": "show each patch's state on every node",
    "verify": "check that the patchsets are fully applied and intact on every node",
    "apply": "apply the patchsets on every node, all or nothing across the cluster",
    "revert": "restore the original files on every node",
}


def add_arguments(parser: ArgumentParser) -> None:
    verbs = options.sub_verbs(parser)
    for name, summary in VERBS.items():
        sub = options.verb(verbs, name, summary)
        sub.add_argument("patchset", nargs="+")
        sub.add_argument(
            "--address", metavar="ADDR", help="the Ray cluster (default: $RAY_ADDRESS)"
        )
        sub.add_argument(
            "--timeout",
            type=seconds,
            default=600.0,
            metavar="S",
            help="wait at most S seconds for every node, above 0 (default: %(default)g)",
        )
        if name == "apply":
            options.force(
                sub, "as apply --force (a version mismatch, files that differ from RECORD)"
            )
            sub.add_argument(
                "--keep-going",
                action="store_true",
                help="keep it on the nodes it reached when another node fails (default: revert)",
            )
        else:
            sub.set_defaults(force=False, keep_going=False)


def seconds(text: str) -> float:
    """A finite, positive number of seconds (``nan``, ``inf``, ``0`` and ``-5`` are not)."""
    import math
    from argparse import ArgumentTypeError

    try:
        value = float(text)
    except ValueError:
        raise ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ArgumentTypeError(f"must be a finite number of seconds above 0: {text!r}")
    return value


def run(args: Namespace, ctx: Context) -> int:
    """``--python`` names an interpreter on the nodes, not here: no environment is made."""
    where = (args.address, args.python, ctx.patchset_dirs, args.timeout)
    verb, names = args.action, args.patchset
    return fleet(ctx.registry, verb, names, *where, ctx.out, args.force, args.keep_going)
