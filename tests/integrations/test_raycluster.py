"""The loopback guard of the Ray test cluster (tests/helpers/raycluster.py), without Ray."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from helpers.raycluster import HOST, LocalCluster, Node, off_loopback


def nodes(*addresses: str) -> list[dict[str, Any]]:
    return [{"NodeID": f"{i:02d}" * 20, "NodeManagerAddress": a} for i, a in enumerate(addresses)]


def test_a_cluster_on_loopback_passes() -> None:
    assert HOST == "127.0.0.2"
    assert off_loopback(nodes(HOST, "127.1.2.3"), {"GCS": f"{HOST}:6379"}) == []


@pytest.mark.parametrize(
    ("node", "gcs", "outside"),
    [
        ("10.1.2.3", "127.0.0.2:6379", ["node 000000000000 at 10.1.2.3"]),
        ("127.0.0.2", "192.168.1.7:6379", ["GCS at 192.168.1.7:6379"]),
        ("localhost", "127.0.0.2:6379", ["node 000000000000 at localhost"]),  # not an address
        ("::1", "127.0.0.2:6379", ["node 000000000000 at ::1"]),
        ("", "", ["node 000000000000 at (none)", "GCS at (none)"]),
    ],
)
def test_an_address_outside_loopback_is_named(node: str, gcs: str, outside: list[str]) -> None:
    assert off_loopback(nodes(node), {"GCS": gcs}) == outside


def test_a_dead_node_off_loopback_counts_too() -> None:
    found = nodes(HOST, "172.17.0.4")
    found[1]["Alive"] = False
    assert off_loopback(found, {}) == ["node 010101010101 at 172.17.0.4"]


def test_the_guard_tears_the_cluster_down_and_fails_loudly(tmp_path: Path) -> None:
    """A "node" (a process group of ours) in a cluster whose ray.nodes() reports a routable
    address: check_loopback kills that group, removes the temp dir and raises, naming it."""
    cluster = LocalCluster()
    sleeper = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True
    )
    cluster.nodes.append(Node("ck-A", sys.executable, sleeper, tmp_path / "log"))
    fake_ray = SimpleNamespace(
        nodes=lambda: nodes(HOST, "10.20.30.40"),
        get_runtime_context=lambda: SimpleNamespace(gcs_address=cluster.address),
        util=SimpleNamespace(get_node_ip_address=lambda: HOST),
    )
    try:
        with pytest.raises(RuntimeError) as failed:
            cluster.check_loopback(fake_ray)
        assert str(failed.value) == (
            "the Ray test cluster left loopback (127.0.0.0/8), torn down: "
            "node 010101010101 at 10.20.30.40"
        )
        assert sleeper.poll() == -9  # its whole group was SIGKILLed
        assert not cluster.temp_dir.exists()
    finally:
        if sleeper.poll() is None:
            os.killpg(sleeper.pid, 9)
            sleeper.wait()


ROOT = Path(__file__).resolve().parents[2]
# ray start --node-ip-address=..., ray.init(_node_ip_address=...), given 127.0.0.1 or localhost
REWRITTEN = re.compile(r"node[-_]ip[-_]address['\"]?\s*[=:,]?\s*['\"]?(127\.0\.0\.1|localhost)\b")


def test_nothing_in_the_project_starts_ray_on_an_address_ray_rewrites() -> None:
    where = [ROOT / "README.md", ROOT / "noxfile.py"]
    for folder in ("src", "tests", "bench", "docs", ".ci"):
        where += [p for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".md", ".sh", "")]
    found = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in where
        if path.is_file() and path != Path(__file__).resolve()  # this file: the examples below
        for match in REWRITTEN.finditer(path.read_text(errors="replace"))
    ]
    assert found == []
    assert REWRITTEN.search("ray start --head --node-ip-address=127.0.0.1")  # it can fail
    assert REWRITTEN.search('ray.init(_node_ip_address="localhost")')
    assert not REWRITTEN.search("ray start --head --node-ip-address=127.0.0.2")
