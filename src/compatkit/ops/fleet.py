"""One operation on every alive node of a Ray cluster (``compatkit fleet``).

Ray is the distributed engine: one task per alive node (:mod:`compatkit.ops.fleet_nodes`)
runs the same operation as the plain command against that node's environment and returns
typed results. A node whose task fails, dies, cannot be scheduled or does not answer in time
is a :class:`NodeReport` with a ``failure``: never skipped.

``apply`` is all or nothing across the nodes: when any node is not as asked, every patchset
this run applied is reverted on the nodes that answered (:mod:`compatkit.ops.fleet_rollback`),
unless ``keep_going``. Each node's ``end`` says where it was left.

Ray is imported only inside :func:`run_fleet` (``compatkit[ray]``), so nothing else pays for it.
"""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path
from typing import Any

from compatkit.errors import CompatkitError
from compatkit.ops.fleet_nodes import (
    FleetResult,
    NodeAnswer,
    NodeReport,
    PatchRow,
    PatchsetOnNode,
    label,
    node_run,
    run_on,
)

__all__ = [
    "VERBS",
    "FleetResult",
    "NodeAnswer",
    "NodeReport",
    "PatchRow",
    "PatchsetOnNode",
    "node_run",
    "run_fleet",
    "run_on",
]

VERBS = ("status", "verify", "apply", "revert")


def run_fleet(
    verb: str,
    names: list[str],
    address: str | None,
    python: str | None = None,
    dirs: list[Path] | None = None,
    timeout: float = 600.0,
    force: bool = False,
    keep_going: bool = False,
) -> FleetResult:
    """``verb`` on every alive node of the cluster at ``address`` (None: $RAY_ADDRESS, or the
    cluster this machine belongs to). Connects unless this process already has. ``apply``:
    ``force`` as apply's ``--force``; all or nothing across nodes unless ``keep_going``."""
    from compatkit.ops.fleet_rollback import settle

    ray = _import_ray()
    where = address or os.environ.get("RAY_ADDRESS") or "auto"
    started = not ray.is_initialized()
    if started:
        _connect(ray, where)
    try:
        nodes = ray.nodes()
        alive = [n for n in nodes if n.get("Alive")]
        dead = [label(n) for n in nodes if not n.get("Alive")]
        todo = [(n, names) for n in alive]
        paths = [str(d.resolve()) for d in dirs or []]
        reports = run_on(ray, todo, verb, paths, python, timeout, force)
        result = FleetResult(verb, where, reports, dead)
        if verb == "apply":
            settle(ray, result, paths, python, timeout, keep_going)
        return result
    finally:
        if started:
            ray.shutdown()


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise CompatkitError(
            "compatkit fleet needs Ray beside compatkit: pip install 'ray[default]>=2.49'"
        ) from None
    return ray


def _connect(ray: Any, address: str) -> None:
    """ray.init, with one clear line (the address and Ray's reason) when it cannot."""
    host, _, port = address.rpartition(":")
    if address != "auto" and not address.startswith("ray://") and port.isdigit():
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
        except OSError as exc:
            raise CompatkitError(f"cannot reach the Ray cluster at {address}: {exc}") from None
    try:
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
    except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError ...
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CompatkitError(f"cannot reach the Ray cluster at {address}: {reason}") from None
