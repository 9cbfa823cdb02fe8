"""SIGKILL at every write step of apply and revert; the next command recovers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from conftest import Demo


def _run(demo: Demo, *args: str, crash_at: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COMPATKIT_CRASH_AT"}
    if crash_at is not None:
        env["COMPATKIT_CRASH_AT"] = str(crash_at)
    cmd = [
        sys.executable,
        "-m",
        "compatkit",
        "--python",
        demo.venv.python,
        "--patchset-dir",
        str(demo.patchsets),
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def crash_every_step(
    demo: Demo, command: str, start: dict[str, bytes], done: dict[str, bytes]
) -> tuple[int, int]:
    """Kill ``command`` at step 1, 2, ... until it finishes; check recovery after each kill."""
    tried = recovered = 0
    for step in range(1, 200):
        proc = _run(demo, command, "demo-fix", crash_at=step)
        if proc.returncode != -signal.SIGKILL:
            assert proc.returncode == 0, proc.stderr
            assert demo.venv.snapshot() == done
            return tried, recovered
        tried += 1  # noqa: SIM113 - counts kills, not loop turns
        status = _run(demo, "status", "demo-fix")  # any command recovers
        assert status.returncode == 0, status.stderr
        now = demo.venv.snapshot()
        assert now in (start, done), f"step {step}: neither before nor after"
        verify = _run(demo, "verify", "demo-fix")
        assert (verify.returncode == 0) == (now == (done if command == "apply" else start))
        recovered += 1  # noqa: SIM113
        # put the environment back where this command starts from
        if now != start:
            back = _run(demo, "revert" if command == "apply" else "apply", "demo-fix")
            assert back.returncode == 0, back.stderr
            assert demo.venv.snapshot() == start
    raise AssertionError("never finished")


def test_sigkill_at_every_step_of_apply_and_revert(demo: Demo, tmp_path: Path) -> None:
    pristine = demo.venv.snapshot()
    assert _run(demo, "apply", "demo-fix").returncode == 0
    applied = demo.venv.snapshot()
    assert _run(demo, "revert", "demo-fix").returncode == 0
    assert demo.venv.snapshot() == pristine

    tried, recovered = crash_every_step(demo, "apply", pristine, applied)
    assert tried >= 8 and recovered == tried
    assert _run(demo, "apply", "demo-fix").returncode == 0
    tried_r, recovered_r = crash_every_step(demo, "revert", applied, pristine)
    assert tried_r >= 8 and recovered_r == tried_r
