"""Rounds of 8 compatkit processes (apply, revert, verify, status) on one environment at once.

CI runs one round in tests/cli/test_cli.py::test_eight_concurrent_runs_serialise; with
COMPATKIT_FULL=1 this runs 25 rounds with shuffled verbs. After each round the tree is byte-exact
pristine or byte-exact applied, and verify agrees.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import Demo
from helpers.reliability import FULL, report, run_inprocess, snapshot

ROUNDS = 25


@pytest.mark.skipif(not FULL, reason="full mode only (COMPATKIT_FULL=1)")
def test_rounds_of_eight_concurrent_runs(demo: Demo, tmp_path: Path) -> None:
    base = ["--python", demo.venv.python, "--patchset-dir", str(demo.patchsets)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path / "pycache")
    pristine = snapshot(demo.venv.site)
    assert run_inprocess(*base, "apply", "demo-fix").code == 0
    applied = snapshot(demo.venv.site)
    assert run_inprocess(*base, "revert", "demo-fix").code == 0
    rng = random.Random(5)
    runs = ends_applied = 0
    for _ in range(ROUNDS):
        verbs = [rng.choice(["apply", "revert", "verify", "status"]) for _ in range(8)]
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "compatkit", *base, verb, "demo-fix"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for verb in verbs
        ]
        for verb, proc in zip(verbs, procs, strict=True):
            err = proc.communicate()[1]
            assert "Traceback" not in err
            assert proc.returncode in ((0, 1) if verb == "verify" else (0,)), (verb, err)
            runs += 1
        now = snapshot(demo.venv.site)
        assert now in (pristine, applied)
        assert (run_inprocess(*base, "verify", "demo-fix").code == 0) == (now == applied)
        assert not [p for p in demo.venv.site.rglob("*") if "compatkit-" in p.name]
        ends_applied += now == applied
    assert run_inprocess(*base, "revert", "demo-fix").code == 0
    assert snapshot(demo.venv.site) == pristine
    report("concurrency", rounds=ROUNDS, processes=runs, rounds_ending_applied=ends_applied)
