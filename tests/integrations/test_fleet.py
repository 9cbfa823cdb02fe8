"""``compatkit fleet`` and the runtime_env plugin on a real Ray cluster on this machine.

Each node is a ``ray start`` from its own venv (demo 1.0, Ray, compatkit), so each node's
workers run a different interpreter with a different environment: node A is patched, node B
is not, node C (started in one test) is killed in the middle of ``fleet apply``.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import ray

import compatkit
from compatkit.env.session import locked
from compatkit.env.target import Environment
from compatkit.load.registry import Registry
from compatkit.ops.verify import problems
from helpers import DEMO_FILES, UV, build_wheel, run_cli, write_patchset
from helpers.raycluster import HOST, LocalCluster, Node

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

ROOT = Path(compatkit.__file__).resolve().parents[2]
COMPATKIT = [sys.executable, "-m", "compatkit"]
PLUGINS = json.dumps([{"class": "compatkit.integrations.ray_plugin.CompatkitPlugin"}])


@dataclass
class Fleet:
    cluster: LocalCluster
    patchsets: Path
    wheel: Path
    pythons: dict[str, str]  # node name -> its venv's python
    base: Path

    def node(self, name: str) -> Node:
        return next(n for n in self.cluster.nodes if n.name == name)

    def local(self, capsys: pytest.CaptureFixture[str], python: str, *args: str) -> int:
        """Plain (not fleet) compatkit against one node's venv."""
        ps = str(self.patchsets)
        return run_cli(capsys, "--python", python, "--patchset-dir", ps, *args)[0]

    def fleet(self, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
        return run_cli(capsys, "--patchset-dir", str(self.patchsets), "fleet", *args)

    def verified(self, name: str) -> bool:
        """Is demo-fix applied and intact on that node (no output: safe beside a CLI run)?"""
        env = Environment.for_python(self.pythons[name])
        return not problems(Registry([self.patchsets]), env, "demo-fix")

    def by_node(self, doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """The --json document's nodes, keyed by our node names."""
        names = {n.node_id: n.name for n in self.cluster.nodes}
        return {names[n["node_id"]]: n for n in doc["nodes"]}


def node_venv(base: Path, name: str, wheel: Path) -> str:
    """A venv with Ray (the version running these tests), compatkit from here and demo 1.0."""
    root = base / f"venv-{name}"
    subprocess.run([UV or "uv", "venv", "-q", "-p", sys.executable, str(root)], check=True)
    python = str(root / "bin" / "python")
    pip = [UV or "uv", "pip", "install", "-q", "--python", python]
    # uv: what the runtime_env "uv" step runs (python -m uv) in its clone of this venv
    subprocess.run([*pip, f"ray[default]=={ray.__version__}", "uv", "-e", str(ROOT)], check=True)
    subprocess.run([*pip, "--no-deps", "--link-mode", "copy", str(wheel)], check=True)
    return python


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    base = tmp_path_factory.mktemp("fleet")
    wheel = build_wheel(base, "demo", "1.0", DEMO_FILES)
    patchsets = base / "patchsets"
    write_patchset(patchsets)
    pythons = {name: node_venv(base, name, wheel) for name in ("ck-A", "ck-B", "ck-C")}
    cluster = LocalCluster({"RAY_RUNTIME_ENV_PLUGINS": PLUGINS})
    try:
        cluster.start_head("ck-A", pythons["ck-A"])
        cluster.add_node("ck-B", pythons["ck-B"])
        ray.init(address=cluster.address, logging_level=logging.ERROR, log_to_driver=False)
        cluster.wait_alive(ray)
        yield Fleet(cluster, patchsets, wheel, pythons, base)
    finally:
        ray.shutdown()
        cluster.shutdown()


@pytest.fixture
def a_patched(fleet: Fleet, capsys: pytest.CaptureFixture[str]) -> Fleet:
    """Node A's environment patched, node B's (and C's) not."""
    for name, python in fleet.pythons.items():
        assert fleet.local(capsys, python, "revert", "demo-fix") == 0, name
    assert fleet.local(capsys, fleet.pythons["ck-A"], "apply", "demo-fix") == 0
    return fleet


def test_status_and_verify_per_node_on_two_different_environments(
    a_patched: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = a_patched
    b_python = fleet.pythons["ck-B"]
    code, out, _ = fleet.fleet(capsys, "status", "demo-fix", "--json")
    assert code == 0, out
    nodes = fleet.by_node(json.loads(out))
    assert set(nodes) == {"ck-A", "ck-B"}
    for name, state in (("ck-A", "applied"), ("ck-B", "not applied")):
        (ps,) = nodes[name]["patchsets"]
        assert nodes[name]["python"] == fleet.pythons[name]  # the interpreter its workers use
        assert ps["state"] == state
        assert [p["status"] for p in ps["patches"]] == [state, state]
    # --python: that interpreter on every node (here the same path on one machine)
    code, out, _ = fleet.fleet(capsys, "status", "demo-fix", "--json", "--python", b_python)
    assert code == 0, out
    for node in json.loads(out)["nodes"]:
        assert node["python"] == b_python and node["patchsets"][0]["state"] == "not applied"
    code, out, err = fleet.fleet(capsys, "verify", "demo-fix")
    assert code == 1
    b = fleet.node("ck-B").node_id[:12]
    assert f"node {b}" in err and "demo-fix is not applied to demo 1.0" in err, err
    assert "1 of 2 nodes not as asked" in err and fleet.node("ck-A").node_id[:12] not in err
    flat = " ".join(out.split())  # a node's title wraps at the width in a pipe
    assert f"node {fleet.node('ck-A').node_id[:12]}" in flat and "demo-fix: applied" in flat


def test_apply_verify_revert_on_every_node(
    a_patched: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = a_patched
    code, out, _ = fleet.fleet(capsys, "apply", "demo-fix", "--json")
    assert code == 0, out
    actions = {n: d["patchsets"][0]["action"] for n, d in fleet.by_node(json.loads(out)).items()}
    assert actions == {"ck-A": "none", "ck-B": "applied"}
    assert fleet.fleet(capsys, "verify", "demo-fix")[0] == 0
    assert fleet.local(capsys, fleet.pythons["ck-B"], "verify", "demo-fix") == 0
    code, out, _ = fleet.fleet(capsys, "revert", "demo-fix")
    flat = " ".join(out.split())  # a node's title wraps at the width in a pipe
    assert code == 0 and flat.count("demo-fix: not applied, reverted") == 2, out
    for name in ("ck-A", "ck-B"):
        assert fleet.local(capsys, fleet.pythons[name], "verify", "demo-fix") == 1


def test_a_node_that_does_not_answer_in_time_is_named(
    a_patched: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = a_patched
    dist = Environment.for_python(fleet.pythons["ck-B"]).require("demo")
    with locked(dist):  # node B's verify waits for this lock
        code, _, err = fleet.fleet(capsys, "verify", "demo-fix", "--timeout", "3")
    assert code == 1
    b = fleet.node("ck-B").node_id[:12]
    assert f"node {b} (" in err and "did not answer within 3 s (--timeout)" in err, err
    assert "1 of 2 nodes not as asked" in err  # node A answered, and is as asked


def test_an_unreachable_address_is_one_line_with_the_reason(fleet: Fleet) -> None:
    port = 1  # nothing listens there
    where = ["--address", f"{HOST}:{port}"]
    proc = subprocess.run(
        [*COMPATKIT, "--patchset-dir", str(fleet.patchsets), "fleet", "verify", "demo-fix", *where],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"compatkit: error: cannot reach the Ray cluster at {HOST}:{port}: "
        "[Errno 111] Connection refused"
    ]


@pytest.fixture
def b_edited(fleet: Fleet, capsys: pytest.CaptureFixture[str]) -> Iterator[Fleet]:
    """Nothing applied anywhere; node B's demo/greet.py edited after install (a line added at
    its end: the patch still fits, the RECORD hash does not), restored afterwards."""
    for name, python in fleet.pythons.items():
        assert fleet.local(capsys, python, "revert", "demo-fix") == 0, name
    greet = Path(Environment.for_python(fleet.pythons["ck-B"]).require("demo").root) / "demo"
    greet /= "greet.py"
    original = greet.read_bytes()
    _replace(greet, original + b"# edited here\n")
    try:
        yield fleet
    finally:
        fleet.local(capsys, fleet.pythons["ck-B"], "revert", "demo-fix")
        _replace(greet, original)


def _replace(path: Path, data: bytes) -> None:
    """New bytes under ``path`` through a new file (never through a hardlink uv made)."""
    tmp = path.with_name(path.name + ".new")
    tmp.write_bytes(data)
    tmp.replace(path)


def test_apply_failing_on_one_node_reverts_it_on_the_others(
    b_edited: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = b_edited
    code, out, err = fleet.fleet(capsys, "apply", "demo-fix")
    assert code == 1
    a, b = (f"node {fleet.node(n).node_id[:12]} ({HOST})" for n in ("ck-A", "ck-B"))
    lines = err.splitlines()
    assert lines[0] == (
        "compatkit: error: fleet apply: 1 of 2 nodes not as asked; "
        "rolled back on the 1 node(s) it had applied to"
    ), err
    assert sorted(lines[1:3]) == sorted(  # ray.nodes() order: either node first
        [
            f"  - {a}: rolled back: demo-fix reverted",
            f"  - {b}: unchanged (demo-fix: refusing to apply; "
            "demo/greet.py does not match its RECORD hash (edited after install?))",
        ]
    ), err
    assert fleet.local(capsys, fleet.pythons["ck-A"], "pristine", "demo") == 0
    code, out, _ = fleet.fleet(capsys, "apply", "demo-fix", "--json")
    ends = {n: (d["end_state"], d["end_reason"]) for n, d in fleet.by_node(json.loads(out)).items()}
    assert code == 1 and json.loads(out)["rolled_back"] is True
    assert ends == {"ck-A": ("rolled back", "demo-fix reverted"), "ck-B": ("unchanged", "")}


def test_keep_going_keeps_the_partial_state(
    b_edited: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = b_edited
    code, _, err = fleet.fleet(capsys, "apply", "demo-fix", "--keep-going")
    assert code == 1
    a = f"node {fleet.node('ck-A').node_id[:12]} ({HOST})"
    assert "1 of 2 nodes not as asked; the nodes it applied to keep it (--keep-going)" in err
    assert f"  - {a}: applied, kept (--keep-going): demo-fix" in err, err
    assert fleet.verified("ck-A") and not fleet.verified("ck-B")


def test_force_applies_as_apply_force_does(
    b_edited: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = b_edited
    code, _, err = fleet.fleet(capsys, "apply", "demo-fix", "--force")
    assert code == 0, err
    assert fleet.verified("ck-A") and fleet.verified("ck-B")
    with pytest.raises(SystemExit) as exc:  # argparse's: verify has no --force (issue 47)
        fleet.fleet(capsys, "verify", "demo-fix", "--force")
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert err.strip() == (
        "compatkit: error: unrecognized arguments: --force (see 'compatkit fleet verify --help')"
    )


JOB = """
import json, sys
import ray

ray.init(address=sys.argv[1], runtime_env=json.loads(sys.argv[2]), logging_level="ERROR")


@ray.remote(resources={"ck-B": 0.01})
def greet():
    import demo.greet

    return demo.greet.hello("x"), sys.executable


print(json.dumps(ray.get(greet.remote())))
"""


def _greet() -> tuple[str, str]:
    import demo.greet  # type: ignore[import-not-found]

    return str(demo.greet.hello("x")), sys.executable


greet = ray.remote(_greet)
del _greet  # so that cloudpickle ships it by value: the workers cannot import this test module


def on(node: str, fleet: Fleet, compatkit: dict[str, Any]) -> Any:
    """greet() pinned to ``node`` in a runtime_env asking for ``compatkit``."""
    config = {"patchsets": ["demo-fix"], "patchset_dirs": [str(fleet.patchsets)], **compatkit}
    env = {"compatkit": config}
    return ray.get(greet.options(resources={node: 0.01}, runtime_env=env).remote(), timeout=180)


def test_a_job_with_the_plugin_runs_on_the_uv_env_it_patched(
    a_patched: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = a_patched
    config = {"patchsets": ["demo-fix"], "patchset_dirs": [str(fleet.patchsets)], "mode": "apply"}
    runtime_env = {"uv": {"packages": [str(fleet.wheel)]}, "compatkit": config}
    proc = subprocess.run(
        [sys.executable, "-c", JOB, fleet.cluster.address, json.dumps(runtime_env)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[:6000]
    hello, python = json.loads(proc.stdout.strip().splitlines()[-1])
    assert hello == "hi x"  # the fix, seen by the task
    assert "/runtime_resources/uv/" in python  # ... in the env the uv step made
    from importlib.metadata import PackageNotFoundError, distribution

    with pytest.raises(PackageNotFoundError):  # never into the test runner's venv (UV_PYTHON)
        distribution("demo")
    assert not fleet.verified("ck-B")  # node B's own environment was not written
    assert fleet.local(capsys, fleet.pythons["ck-B"], "pristine", "demo") == 0


def test_verify_mode_fails_the_worker_start_naming_the_patches(a_patched: Fleet) -> None:
    assert on("ck-A", a_patched, {"mode": "verify"}) == ("hi x", a_patched.pythons["ck-A"])
    with pytest.raises(ray.exceptions.RuntimeEnvSetupError) as failed:
        on("ck-B", a_patched, {"mode": "verify"})
    first, line, problem = str(failed.value).splitlines()[:3]
    assert first == "Failed to set up runtime environment."  # Ray's own, always
    # then compatkit's one line, not the runtime env agent's traceback; the agent's label
    # of the node comes first (Ray's guess of the machine's address: a label, no traffic)
    node, _, line = line.partition("] ")
    assert node.startswith("[Node ") and line == (
        f"compatkit: demo-fix is not applied in {a_patched.pythons['ck-B']}: "
        "patch-1 (not applied), patch-2 (not applied)"
    ), str(failed.value)
    assert problem.startswith("  - demo-fix is not applied to demo 1.0"), str(failed.value)


def test_apply_mode_writes_only_where_it_is_told_to(
    a_patched: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = a_patched
    with pytest.raises(ray.exceptions.RuntimeEnvSetupError) as refused:
        on("ck-B", fleet, {"mode": "apply"})
    line = str(refused.value).splitlines()[1].partition("] ")[2]
    assert line.startswith("compatkit: refusing to apply demo-fix to demo 1.0"), line
    assert '"allow_write": true' in str(refused.value)
    assert fleet.local(capsys, fleet.pythons["ck-B"], "pristine", "demo") == 0
    assert on("ck-B", fleet, {"mode": "apply", "allow_write": True})[0] == "hi x"
    assert fleet.verified("ck-B")


def test_runtime_mode_serves_the_fix_and_writes_nothing(
    a_patched: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    """Node B's environment is unpatched and stays so: the task imports the patched module
    through compatkit's runtime hook on its PYTHONPATH."""
    fleet = a_patched
    assert on("ck-B", fleet, {"mode": "runtime"}) == ("hi x", fleet.pythons["ck-B"])
    assert not fleet.verified("ck-B")
    assert fleet.local(capsys, fleet.pythons["ck-B"], "pristine", "demo") == 0


def test_a_node_killed_during_apply_is_named_and_the_run_rolled_back(
    a_patched: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    """A applied before the run, B applied by it, C killed while its apply waits: B is
    reverted (A keeps what it had), and each node's end state is named."""
    fleet = a_patched
    c = fleet.cluster.add_node("ck-C", fleet.pythons["ck-C"])
    fleet.cluster.wait_alive(ray)
    dist = Environment.for_python(fleet.pythons["ck-C"]).require("demo")
    result: list[tuple[int, str, str]] = []
    with locked(dist):  # node C's apply waits for this lock: it is running when killed
        run = threading.Thread(
            target=lambda: result.append(fleet.fleet(capsys, "apply", "demo-fix"))
        )
        run.start()
        # C's task is running: its worker says it waits for the lock we hold
        fleet.cluster.wait_for_log(f"holds the lock on {dist.root}")
        fleet.cluster.kill(c)
        run.join(timeout=180)
    assert not run.is_alive() and result
    code, out, err = result[0]
    assert code == 1
    a, b = (f"node {fleet.node(n).node_id[:12]} ({HOST})" for n in ("ck-A", "ck-B"))
    assert (
        "fleet apply: 1 of 3 nodes not as asked; rolled back on the 1 node(s) it had applied "
        "to; 1 node(s) not known to be as before" in err
    ), err
    assert f"{a}: unchanged\n" in err and f"{b}: rolled back: demo-fix reverted\n" in err, err
    assert f"node {c.node_id[:12]} ({HOST}): end state unknown: no answer" in err
    assert "(died during fleet apply (" in err
    assert fleet.verified("ck-A")  # applied before this run: kept
    for name in ("ck-B", "ck-C"):
        assert fleet.local(capsys, fleet.pythons[name], "pristine", "demo") == 0
    fleet.cluster.wait_dead(ray, c)
    code, out, _ = fleet.fleet(capsys, "apply", "demo-fix")
    assert code == 0 and f"not asked (dead before this run): {c.node_id[:12]}" in out, out
