"""F1: ``compatkit fleet verify`` on a local two-node Ray cluster against one plain ``verify``.

Each node is a ``ray start`` from its own venv (Ray, compatkit from this checkout, demo 1.0 with
demo-fix applied), on 127.0.0.2 with the loopback guard of tests/helpers/raycluster.py, as in
tests/integrations/test_fleet.py. Three timings, interleaved:

- plain: ``compatkit --python NODE verify demo-fix`` on one node's venv (the reference);
- F1: ``compatkit fleet verify demo-fix --address ADDR``, the whole command: Ray's import, the
  connection, one pinned task per node, the shutdown;
- F1-connected: :func:`compatkit.ops.fleet.run_fleet` in a process already connected to the
  cluster: the marginal cost of asking every node.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, Figure, Report, interleaved, timed

sys.path.insert(0, str(ROOT / "tests"))
from helpers import DEMO_FILES, write_patchset
from helpers.raycluster import LocalCluster
from helpers.wheelkit import build_wheel


def _node_venv(base: Path, name: str, wheel: Path, ray_version: str) -> str:
    root = base / f"venv-{name}"
    subprocess.run(["uv", "venv", "-q", "-p", sys.executable, str(root)], check=True)
    python = str(root / "bin" / "python")
    pip = ["uv", "pip", "install", "-q", "--python", python]
    subprocess.run([*pip, f"ray[default]=={ray_version}", "-e", str(ROOT)], check=True)
    subprocess.run([*pip, "--no-deps", "--link-mode", "copy", str(wheel)], check=True)
    return python


def run(report: Report) -> None:
    import ray

    from compatkit.ops.fleet import run_fleet

    runs = 1 if report.quick else 7
    with tempfile.TemporaryDirectory(prefix="compatkit-bench-fleet-") as tmp:
        base = Path(tmp)
        wheel = build_wheel(base, "demo", "1.0", DEMO_FILES)
        patchsets = base / "patchsets"
        write_patchset(patchsets)
        pythons = [_node_venv(base, n, wheel, ray.__version__) for n in ("ck-A", "ck-B")]
        cli = [sys.executable, "-m", "compatkit", "--patchset-dir", str(patchsets)]
        for python in pythons:
            subprocess.run([*cli, "--python", python, "apply", "demo-fix"], check=True)
        cluster = LocalCluster()
        try:
            cluster.start_head("ck-A", pythons[0])
            cluster.add_node("ck-B", pythons[1])
            ray.init(address=cluster.address, logging_level=logging.ERROR, log_to_driver=False)
            cluster.wait_alive(ray)

            def connected() -> float:
                start = time.perf_counter()
                result = run_fleet("verify", ["demo-fix"], None, dirs=[patchsets])
                assert result.ok and len(result.nodes) == 2, result
                return time.perf_counter() - start

            plain = [*cli, "--python", pythons[0], "verify", "demo-fix"]
            fleet = [*cli, "fleet", "verify", "demo-fix", "--address", cluster.address]
            # the warm-up round starts the workers
            ref, whole, marginal = interleaved(
                runs, lambda: timed(plain), lambda: timed(fleet), connected, warmup=1
            )
        finally:
            ray.shutdown()
            cluster.shutdown()
    what = "`fleet verify demo-fix`, 2 nodes (local cluster), the whole command"
    report.add(Figure("F1", what, whole, "one plain verify", ref))
    what = "the same, in a process already connected to the cluster (run_fleet)"
    report.add(Figure("F1-connected", what, marginal, "one plain verify", ref))
