"""The per-node half of ``compatkit fleet``: what one node's pinned task runs and returns.

:func:`run_on` sends one task per node, pinned there with node-affinity scheduling
(``soft=False``, never retried elsewhere), each running :func:`node_run` against that node's
environment (the Python its workers use, or ``--python``), and gathers a :class:`NodeReport`
per node, with a ``failure`` in words for a node that died, could not be scheduled or did not
answer in time. :mod:`compatkit.ops.fleet` (a whole run) and
:mod:`compatkit.ops.fleet_rollback` (apply's all or nothing) both build on it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compatkit.errors import CompatkitError
from compatkit.model.action import Action
from compatkit.model.results import NodeEnd, PatchsetState, PatchState
from compatkit.value import Value


class PatchRow(Value):
    __slots__ = ("id", "status", "detail")

    def __init__(self, id: str, status: PatchState, detail: str) -> None:
        self.id, self.status, self.detail = id, status, detail


class PatchsetOnNode(Value):
    """One patchset on one node: ``action`` is what apply/revert did (APPLIED, NONE, ...),
    ``summary`` its state there afterwards (None: an error came first)."""

    __slots__ = ("name", "summary", "patches", "problems", "action")

    def __init__(
        self,
        name: str,
        summary: PatchsetState | None,
        patches: list[PatchRow] | None = None,
        problems: list[str] | None = None,
        action: Action | None = None,
    ) -> None:
        self.name, self.summary, self.action = name, summary, action
        self.patches = patches if patches is not None else []
        self.problems = problems if problems is not None else []

    @property
    def ok(self) -> bool:
        return not self.problems


class NodeAnswer(Value):
    """What a node's task returns: the interpreter it targeted and each patchset's result."""

    __slots__ = ("python", "patchsets")

    def __init__(self, python: str, patchsets: list[PatchsetOnNode]) -> None:
        self.python, self.patchsets = python, patchsets


class NodeReport(Value):
    """One node's part of a run: its ``answer`` (None: none came), ``failure`` in words ("died
    during fleet apply (NodeDiedError: ...)"), and for apply ``end``, where the run left the
    node, with ``end_reason`` (which patchsets, why)."""

    __slots__ = ("node_id", "address", "answer", "failure", "end", "end_reason")

    def __init__(
        self,
        node_id: str,
        address: str,
        answer: NodeAnswer | None = None,
        failure: str | None = None,
        end: NodeEnd | None = None,
        end_reason: str = "",
    ) -> None:
        self.node_id, self.address, self.answer = node_id, address, answer
        self.failure, self.end, self.end_reason = failure, end, end_reason

    @property
    def end_text(self) -> str | None:
        """Where the run left the node, in words ("rolled back: one reverted"); None if not
        told (not an apply)."""
        if self.end is None:
            return None
        return f"{self.end}: {self.end_reason}" if self.end_reason else str(self.end)

    @property
    def ok(self) -> bool:
        return (
            self.failure is None
            and self.answer is not None
            and all(p.ok for p in self.answer.patchsets)
        )


class FleetResult(Value):
    """A whole fleet run: ``dead_before`` the nodes already dead (not asked), ``rolled_back``
    whether apply failed somewhere and what it applied was reverted."""

    __slots__ = ("verb", "address", "nodes", "dead_before", "rolled_back")

    def __init__(
        self,
        verb: str,
        address: str,
        nodes: list[NodeReport],
        dead_before: list[str] | None = None,
        rolled_back: bool = False,
    ) -> None:
        self.verb, self.address, self.nodes = verb, address, nodes
        self.dead_before = dead_before if dead_before is not None else []
        self.rolled_back = rolled_back

    @property
    def ok(self) -> bool:
        return bool(self.nodes) and all(n.ok for n in self.nodes)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "action": self.verb,
            "address": self.address,
            "nodes": [_node_doc(n) for n in self.nodes],
            "dead_before": self.dead_before,
            "rolled_back": self.rolled_back,
        }


def _node_doc(node: NodeReport) -> dict[str, Any]:
    answer = node.answer
    return {
        "node_id": node.node_id,
        "address": node.address,
        "ok": node.ok,
        "failure": node.failure,
        "end_state": node.end,
        "end_reason": node.end_reason if node.end is not None else None,
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


def node_run(
    verb: str, names: list[str], dirs: list[str], python: str | None, force: bool = False
) -> NodeAnswer:
    """On one node: ``verb`` for each patchset, against ``python`` (None: this interpreter);
    ``force``: apply's ``--force``."""
    from compatkit.env.target import Environment
    from compatkit.load.registry import Registry

    registry = Registry([Path(d) for d in dirs])
    env = Environment.for_python(python)
    env.tell(_to_worker_log)  # a wait for the lock shows in the node's worker log
    return NodeAnswer(env.executable, [_one(verb, registry, env, name, force) for name in names])


def _to_worker_log(line: str) -> None:
    """A notice of work under way (waiting for a lock), on the Ray worker's stderr: its log
    is what the operator of a node sees while the fleet run waits for it."""
    import sys

    print(f"compatkit: {line}", file=sys.stderr, flush=True)


def _one(verb: str, registry: Any, env: Any, name: str, force: bool) -> PatchsetOnNode:
    from compatkit.ops.status import inspect_patchset

    result = PatchsetOnNode(name, None)
    try:
        if verb == "verify":
            from compatkit.ops.verify import problems

            result.problems = problems(registry, env, name)
        elif verb == "apply":
            from compatkit.ops.apply import apply_patchset

            result.action = apply_patchset(registry, env, name, [], force=force).action
        elif verb == "revert":
            from compatkit.ops.revert import revert_patchset

            reverted = revert_patchset(registry, env, name).state
            result.action = Action.REVERTED if reverted else Action.NONE
        found = inspect_patchset(registry.get(name), env)
    except CompatkitError as exc:
        said = exc.message if exc.message.startswith(f"{name}:") else f"{name}: {exc.message}"
        result.problems += [said, *exc.problems]
        return result
    result.summary = found.summary
    result.patches = [PatchRow(s.id, s.status, s.detail) for s in found.statuses]
    return result


def label(node: dict[str, Any]) -> str:
    return f"{node['NodeID'][:12]} ({node.get('NodeManagerAddress', '?')})"


def run_on(
    ray: Any,
    todo: list[tuple[dict[str, Any], list[str]]],
    verb: str,
    dirs: list[str],
    python: str | None,
    timeout: float,
    force: bool = False,
) -> list[NodeReport]:
    """``verb`` on each node of ``todo`` (a ``ray.nodes()`` entry, its patchsets), one pinned
    task each, all at once; a report per node, in ``todo``'s order."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    task = ray.remote(num_cpus=0, max_retries=0)(node_run)
    pending: dict[Any, NodeReport] = {}
    for node, names in todo:
        report = NodeReport(node["NodeID"], str(node.get("NodeManagerAddress", "?")))
        strategy = NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
        ref = task.options(scheduling_strategy=strategy).remote(verb, names, dirs, python, force)
        pending[ref] = report
    reports = list(pending.values())
    _collect(ray, pending, verb, timeout)
    return reports


def _collect(ray: Any, pending: dict[Any, NodeReport], verb: str, timeout: float) -> None:
    """Every task's answer or the reason it has none, within ``timeout`` seconds in all."""
    import time

    deadline = time.monotonic() + timeout
    while pending:
        left = deadline - time.monotonic()
        done, _ = ray.wait(list(pending), num_returns=1, timeout=max(left, 0))
        if not done:
            break
        ref = done[0]
        report = pending.pop(ref)
        try:
            report.answer = ray.get(ref)
        except Exception as exc:
            report.failure = _failure(ray, exc, verb)
    for ref, report in pending.items():
        ray.cancel(ref, force=True)
        report.failure = f"did not answer within {timeout:g} s (--timeout); its task was cancelled"


def _failure(ray: Any, exc: BaseException, verb: str) -> str:
    """What happened to a node's task, in words, with Ray's exception named."""
    errors = ray.exceptions
    kinds = (
        (errors.NodeDiedError, f"died during fleet {verb}"),
        (errors.WorkerCrashedError, f"its worker crashed during fleet {verb} (node lost?)"),
        (errors.TaskUnschedulableError, "could not be scheduled (the node left the cluster?)"),
        (errors.RuntimeEnvSetupError, "could not start a worker (runtime_env setup failed)"),
        (errors.RayTaskError, f"fleet {verb} failed there"),
    )
    what = next((text for kind, text in kinds if isinstance(exc, kind)), "failed")
    cause = exc.cause if isinstance(exc, errors.RayTaskError) and exc.cause else exc
    lines = [line for line in str(cause).strip().splitlines() if line.strip()]
    detail = lines[-1].strip() if lines else ""
    return f"{what} ({type(cause).__name__}{': ' + detail if detail else ''})"
