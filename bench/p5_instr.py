"""P5 in instructions: compatkit's apply and revert of the three real upgrade diffs, counted by
valgrind's callgrind, for one or more installs of compatkit (say the code before and after a
change), so a comparison holds on a machine too loaded for wall time.

Each install is named ``LABEL=PATH`` (PATH: its ``compatkit`` console script, in a venv where it
is installed as users get it: not editable, bytecode compiled). For each diff of
``p5_real.PAIRS`` and each install: a target venv of its own with the old release (bytecode
compiled), the one-patch patchset of ``p5_real``, a compatkit cache of its own, filled by one
apply + revert outside valgrind; then ``--runs`` rounds of ``apply`` and ``revert``, each under
``valgrind --tool=callgrind --trace-children=yes`` with ``PYTHONHASHSEED=0`` (the count is
every process's: the probe of the target interpreter included). Prints a Markdown table of the
medians, one row per diff and command, and after / before for two installs.

    python bench/p5_instr.py before=/tmp/a/bin/compatkit after=/tmp/b/bin/compatkit
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import p5_real
from p5_real import PAIRS

COMMANDS = ("apply", "revert")


def instructions(cmd: list[str], env: dict[str, str]) -> int:
    """Instructions of one run of ``cmd`` and every process it starts (callgrind)."""
    valgrind = ["valgrind", "--tool=callgrind", "--trace-children=yes"]
    valgrind += ["--callgrind-out-file=/dev/null", *cmd]
    proc = subprocess.run(
        valgrind, env={**env, "PYTHONHASHSEED": "0"}, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.strip()[-500:]}")
    counts = [ln.rsplit(":", 1)[1] for ln in proc.stderr.splitlines() if "Collected :" in ln]
    return sum(int(c) for c in counts)


def _patchset(work: Path, package: str, old: str, new: str, site: Path) -> Path:
    """The one-patch patchset of the upgrade diff, as p5_real builds it."""
    old_src = p5_real._venv(work / "old-src", f"{package}=={old}", compile_bytecode=False)
    new_src = p5_real._venv(work / "new-src", f"{package}=={new}", compile_bytecode=False)
    diff = p5_real._upgrade_diff(work, package, old_src, new_src)
    return p5_real.write_patchset(work, package, old, new, diff, site)


def _one(work: Path, exe: str, package: str, old: str, patchsets: Path, runs: int) -> list[int]:
    """Median instructions of apply and of revert for one install, on its own target venv."""
    p5_real._venv(work, f"{package}=={old}", compile_bytecode=True)
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # compatkit with its bytecode, as users run it
    env["COMPATKIT_CACHE_DIR"] = str(work / "cache")
    base = [exe, "--python", str(work / "bin/python"), "--patchset-dir", str(patchsets)]
    for command in COMMANDS:  # the warm-up: fills the cache, as any earlier run does
        subprocess.run([*base, command, "upgrade"], env=env, check=True, capture_output=True)
    counts: list[list[int]] = [[] for _ in COMMANDS]
    for _ in range(runs):
        for i, command in enumerate(COMMANDS):
            counts[i].append(instructions([*base, command, "upgrade"], env))
    print(f"  {exe} {package}: {counts}", file=sys.stderr, flush=True)
    return [int(statistics.median(c)) for c in counts]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("installs", nargs="+", metavar="LABEL=PATH")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    installs = [tuple(s.split("=", 1)) for s in args.installs]
    p5_real.PYTHON[0] = Path(installs[0][1]).parent / "python"
    labels = [label for label, _ in installs]
    ratio = " | after / before" if len(installs) == 2 else ""
    print(f"| diff | command | {' | '.join(labels)}{ratio} |")
    print("|---|---|" + "---|" * (len(installs) + bool(ratio)))
    for package, old, new in PAIRS:
        with tempfile.TemporaryDirectory(prefix="compatkit-p5i-") as tmp:
            work = Path(tmp)
            site = p5_real._venv(work / "probe", f"{package}=={old}", compile_bytecode=False)
            patchsets = _patchset(work, package, old, new, site)
            with ThreadPoolExecutor(len(installs)) as pool:  # one process each: counts, not time
                jobs = [
                    pool.submit(_one, work / f"t{i}", exe, package, old, patchsets, args.runs)
                    for i, (_, exe) in enumerate(installs)
                ]
                medians = [job.result() for job in jobs]
        for i, command in enumerate(COMMANDS):
            row = [m[i] for m in medians]
            extra = f" | {row[1] / row[0]:.3f}" if ratio else ""
            cells = " | ".join(f"{v / 1e6:,.1f} M" for v in row)
            print(f"| {package} {old} → {new} | {command} | {cells}{extra} |", flush=True)


if __name__ == "__main__":
    main()
