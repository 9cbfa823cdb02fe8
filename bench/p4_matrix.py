"""P4: a warm re-run of the speculators 0.3.0 + vLLM 0.16.0 matrix cell vs its smoke tests alone.

The first run (not timed) fills uv's cache and builds the cell's environment; the timed re-run
must not pay the install again. The reference is ``compatkit smoke`` in the same environment
with the patchset applied: the part of the cell that is the smoke tests' own time.
"""

from __future__ import annotations

import os
import subprocess

import tomllib
from common import ROOT, Figure, Report, median_of, timed
from stacks import stack_name

CELL = "spec030-vllm0160"


def run(report: Report) -> None:
    runs = 1 if report.quick else 5
    env = dict(os.environ)
    nox = ["nox", "-f", str(ROOT / "noxfile.py"), "-s", f"matrix(cell='{CELL}')"]
    subprocess.run(nox, check=True, env=env, stdout=subprocess.DEVNULL, cwd=ROOT)  # warm up
    spec = next(
        c for c in tomllib.loads((ROOT / "matrix.toml").read_text())["cell"] if c["id"] == CELL
    )
    name = stack_name([*spec["packages"], "pytest"], str(spec["python"]))  # as the session
    cell_env = ROOT / ".nox" / "_envs" / name / "bin"
    ck = str(cell_env / "compatkit")

    def smoke_alone() -> float:
        subprocess.run([ck, "apply", "speculators-vllm016"], check=True, stdout=subprocess.DEVNULL)
        try:
            return timed([ck, "smoke", "speculators-vllm016"])
        finally:
            subprocess.run(
                [ck, "revert", "speculators-vllm016"], check=True, stdout=subprocess.DEVNULL
            )

    ref = median_of(runs, smoke_alone, warmup=0)
    value = median_of(runs, lambda: timed(nox, env=env, cwd=ROOT), warmup=0)
    report.add(
        Figure(
            "P4",
            f"warm re-run of nox -s \"matrix(cell='{CELL}')\"",
            value,
            "the cell's smoke tests alone",
            ref,
            1.3,
        )
    )
