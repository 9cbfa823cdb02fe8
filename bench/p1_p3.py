"""P1: start-up of explain / status / verify; P3: verify --pristine over all of vLLM.

Both run in the real speculators 0.3.0 + vLLM 0.16.0 environment with compatkit installed in
it (bytecode compiled, as pip and ``uv pip install --compile-bytecode`` leave it) and the
patchset applied. Output goes to a pipe, as in a CI job or an install hook: compatkit then
prints plain text and never imports rich. The warm-up runs fill compatkit's TOML cache, as any
earlier run does for a user; one extra row shows ``status`` with the cache off.
"""

from __future__ import annotations

import csv
import os
import subprocess
import tempfile
from pathlib import Path

import p1_paths
from common import Figure, Report, interleaved, median_of, timed


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["COLUMNS"] = "100"
    return env


def p1(report: Report, python: Path) -> None:
    runs = 5 if report.quick else 20
    exe = python.parent / "compatkit"
    env = _env()
    subprocess.run(
        [str(exe), "apply", "speculators-vllm016"], check=True, env=env, stdout=subprocess.DEVNULL
    )
    try:

        def bare() -> float:
            return timed([str(python), "-c", "pass"], env=env)

        for args in (["explain", "patch-6"], ["status"], ["verify"]):
            ref, value = interleaved(runs, bare, lambda a=args: timed([str(exe), *a], env=env))
            report.add(
                Figure(
                    "P1",
                    f"compatkit {' '.join(args)} (patchset applied)",
                    value,
                    "python -c pass",
                    ref,
                    4.0,
                )
            )
        p1_paths.run(report, python, env, runs)
        cold = {**env, "COMPATKIT_NO_CACHE": "1"}
        ref, value = interleaved(runs, bare, lambda: timed([str(exe), "status"], env=cold))
        report.add(
            Figure(
                "P1-nocache",
                "compatkit status, TOML cache off (COMPATKIT_NO_CACHE=1)",
                value,
                "python -c pass",
                ref,
            )
        )
    finally:
        subprocess.run(
            [str(exe), "revert", "speculators-vllm016"],
            check=True,
            env=env,
            stdout=subprocess.DEVNULL,
        )


def p3(report: Report, python: Path) -> None:
    runs = 1 if report.quick else 5
    exe = python.parent / "compatkit"
    env = _env()
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    record = next(site.glob("vllm-*.dist-info/RECORD")).read_text().splitlines()
    rows = list(csv.reader(record))
    files = [r[0] for r in rows if len(r) > 1 and r[1] and not r[0].startswith("..")]
    with tempfile.NamedTemporaryFile("w", suffix=".lst", delete=False) as lst:
        lst.write("\0".join(files))
    sha = ["sh", "-c", f"xargs -0 -P {os.cpu_count() or 1} -n 200 sha256sum < {lst.name}"]
    try:
        ref = median_of(runs, lambda: timed(sha, env=env, cwd=site))
        value = median_of(runs, lambda: timed([str(exe), "verify", "--pristine", "vllm"], env=env))
    finally:
        Path(lst.name).unlink()
    report.add(
        Figure(
            "P3",
            f"compatkit verify --pristine vllm ({len(files)} files)",
            value,
            f"sha256sum, {os.cpu_count()} processes",
            ref,
            1.2,
        )
    )
