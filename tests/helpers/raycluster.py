"""A real Ray cluster on loopback: one ``ray start --block`` per node, each from its own venv.

Every node runs with ``--node-ip-address=127.0.0.2``, never 127.0.0.1 or localhost: Ray
rewrites those two to the machine's network address (``resolve_ip_for_localhost``), and
these tests may only send traffic inside 127.0.0.0/8. :meth:`LocalCluster.wait_alive` checks
that every node and the GCS stayed there (:func:`off_loopback`), and tears the cluster down
with a loud failure if not.

Each node runs in its own process group (``start_new_session``), so :meth:`LocalCluster.kill`
SIGKILLs exactly that node (raylet, agents, workers) and :meth:`LocalCluster.shutdown` ends
only the processes this cluster started. Every port is chosen here, so the cluster never
collides with another one on the machine, and health checks are fast, so a killed node is
declared dead within seconds.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HOST = "127.0.0.2"  # loopback, but not one of the addresses Ray rewrites
LOOPBACK = ipaddress.ip_network("127.0.0.0/8")

OBJECT_STORE = 100 * 1024**2
FAST_HEALTH = {
    "health_check_initial_delay_ms": 1000,
    "health_check_period_ms": 500,
    "health_check_timeout_ms": 500,
    "health_check_failure_threshold": 4,
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _host(address: str) -> str:
    """``host`` of ``host:port`` or ``[v6]:port``; a bare address as it is."""
    host, sep, port = address.rpartition(":")
    if sep and port.isdigit() and (":" not in host or host.startswith("[")):
        return host.strip("[]")
    return address


def _on_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(_host(address)) in LOOPBACK
    except ValueError:  # empty, or a host name ("localhost" too): not provably loopback
        return False


def off_loopback(nodes: list[dict[str, Any]], addresses: dict[str, str]) -> list[str]:
    """Every address of a cluster outside 127.0.0.0/8, in words (empty: all on loopback).

    ``nodes``: what ``ray.nodes()`` returns (each node's ``NodeManagerAddress``, dead nodes
    too); ``addresses``: other ``host:port`` (or bare host) addresses by role ("GCS", ...).

    >>> off_loopback([{"NodeID": "ab", "NodeManagerAddress": "10.0.0.5"}], {"GCS": "127.0.0.2:1"})
    ['node ab at 10.0.0.5']
    """
    found = [(f"node {n.get('NodeID', '?')[:12]}", n.get("NodeManagerAddress", "")) for n in nodes]
    found += list(addresses.items())
    return [
        f"{role} at {address or '(none)'}" for role, address in found if not _on_loopback(address)
    ]


@dataclass
class Node:
    name: str  # also a custom resource of the node: how it is found in ray.nodes()
    python: str
    proc: subprocess.Popen[bytes]
    log: Path
    node_id: str = ""


class LocalCluster:
    def __init__(self, env: dict[str, str] | None = None) -> None:
        # short: Ray's Unix socket paths live below it (108 bytes at most)
        self.temp_dir = Path(tempfile.mkdtemp(prefix="ckray", dir="/tmp"))
        self.port = free_port()
        self.address = f"{HOST}:{self.port}"
        self.env = env or {}
        self.nodes: list[Node] = []

    def _start(self, name: str, python: str, head: bool) -> Node:
        ray = str(Path(python).parent / "ray")
        # each node its own temp dir: nodes on one machine would otherwise share the session
        # dir, and two runtime env agents would build one uv env in one folder at once
        where = [f"--address={self.address}", f"--temp-dir={self.temp_dir / name}"]
        if head:
            where = ["--head", f"--port={self.port}", f"--ray-client-server-port={free_port()}"]
            where += [f"--temp-dir={self.temp_dir / name}", "--include-dashboard=false"]
            where += [f"--system-config={json.dumps(FAST_HEALTH)}"]
        cmd = [ray, "start", "--block", f"--node-ip-address={HOST}", *where]
        cmd += ["--num-cpus=1", f"--object-store-memory={OBJECT_STORE}", "--disable-usage-stats"]
        cmd += [f"--resources={json.dumps({name: 1})}"]
        cmd += [
            f"--dashboard-agent-listen-port={free_port()}",
            f"--metrics-export-port={free_port()}",
        ]
        log = self.temp_dir / f"{name}.log"
        # nox's uv backend exports UV_PYTHON and UV_PROJECT_ENVIRONMENT (its own venv): a node
        # that inherits them has Ray's uv step (`python -m uv pip install`) install the job's
        # packages into the test runner's venv instead of the env it made
        scrub = ("VIRTUAL_ENV", "PYTHON", "UV_PYTHON", "UV_PROJECT_ENVIRONMENT", "CONDA_PREFIX")
        env = {k: v for k, v in os.environ.items() if not k.startswith(scrub)}
        env.update(self.env, RAY_USAGE_STATS_ENABLED="0")
        env["PATH"] = f"{Path(python).parent}:{env.get('PATH', '')}"
        with log.open("wb") as sink:
            proc = subprocess.Popen(
                cmd, stdout=sink, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        node = Node(name, python, proc, log)
        self.nodes.append(node)
        return node

    def start_head(self, name: str, python: str) -> Node:
        node = self._start(name, python, head=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection((HOST, self.port), timeout=1).close()
                return node
            except OSError:
                self._check(node)
                time.sleep(0.3)
        raise RuntimeError(f"the head node did not start: {node.log.read_text()[-2000:]}")

    def add_node(self, name: str, python: str) -> Node:
        return self._start(name, python, head=False)

    def wait_alive(self, ray: Any, timeout: float = 90) -> None:
        """Until every started node is alive in the cluster; sets each ``node_id``. Then the
        loopback guard (:meth:`check_loopback`)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            alive = {r: n["NodeID"] for n in ray.nodes() if n["Alive"] for r in n["Resources"]}
            for node in self.nodes:
                node.node_id = node.node_id or alive.get(node.name, "")
            if all(n.node_id for n in self.nodes):
                self.check_loopback(ray)
                return
            for node in self.nodes:
                self._check(node)
            time.sleep(0.5)
        raise RuntimeError(f"nodes did not join: {[n.name for n in self.nodes if not n.node_id]}")

    def check_loopback(self, ray: Any) -> None:
        """Every node, the GCS and this driver on 127.0.0.0/8, or the cluster is torn down
        and this fails, naming each address outside it."""
        where = {"GCS": ray.get_runtime_context().gcs_address}
        where["this driver"] = ray.util.get_node_ip_address()
        outside = off_loopback(ray.nodes(), where)
        if outside:
            self.shutdown()
            raise RuntimeError(
                f"the Ray test cluster left loopback (127.0.0.0/8), torn down: {'; '.join(outside)}"
            )

    def wait_dead(self, ray: Any, node: Node, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(n["NodeID"] == node.node_id and not n["Alive"] for n in ray.nodes()):
                return
            time.sleep(0.5)
        raise RuntimeError(f"{node.name} was not declared dead within {timeout} s")

    def _check(self, node: Node) -> None:
        if node.proc.poll() is not None:
            raise RuntimeError(f"ray start for {node.name} exited: {node.log.read_text()[-3000:]}")

    def kill(self, node: Node) -> None:
        """SIGKILL the node's whole process group: its raylet, agents and workers."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(node.proc.pid, signal.SIGKILL)
        node.proc.wait()

    def wait_for_log(self, text: str, timeout: float = 60) -> None:
        """Until a worker of this cluster has written ``text`` to its stderr log."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for log in self.temp_dir.glob("*/session_*/logs/worker-*.err"):
                if text in log.read_text(errors="replace"):
                    return
            time.sleep(0.3)
        raise RuntimeError(f"no worker wrote {text!r} within {timeout} s")

    def shutdown(self) -> None:
        """SIGKILL every node's process group, then any process still naming our temp dir
        (one that left its group); then remove the temp dir."""
        for node in reversed(self.nodes):
            self.kill(node)
        mine = str(self.temp_dir)
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                if mine in (proc / "cmdline").read_bytes().decode(errors="replace"):
                    os.kill(int(proc.name), signal.SIGKILL)
            except (OSError, ValueError):
                pass
        shutil.rmtree(self.temp_dir, ignore_errors=True)
