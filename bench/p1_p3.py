"""P1: start-up of status / verify / explain; P3: pristine over all of vLLM; P3-all: pristine
--all over the whole environment.

P1 times the commands in the same rounds as ``python -c pass`` and, as peers (no target), the
``--version`` of pre-commit, nox and pip installed beside compatkit (``nox -s bench`` installs
them; a missing one is skipped with a note).

Both run in the real speculators 0.3.0 + vLLM 0.16.0 environment with compatkit installed in
it (bytecode compiled, as pip and ``uv pip install --compile-bytecode`` leave it) and the
patchset applied. Output goes to a pipe, as in a CI job or an install hook: compatkit then
prints plain text and never imports rich. The warm-up runs fill compatkit's TOML cache, as any
earlier run does for a user; one extra row shows ``status`` with the cache off.
"""

from __future__ import annotations

import csv
import os
import random
import statistics
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import p1_paths
from common import (
    P1_TARGET,
    Figure,
    Report,
    any_exit,
    cores,
    interleaved,
    listed_files,
    median_of,
    rounds,
    timed,
)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["COLUMNS"] = "100"
    return env


COMMANDS = (["status"], ["verify"], ["explain", "patch-6"])
# other Python command-line tools' start-up, as a user meets it: peers, not targets
PEERS = (("pre-commit", "--version"), ("nox", "--version"), ("pip", "--version"))


def p1(report: Report, python: Path) -> None:
    """Every command and every peer found beside ``python``, timed in the same rounds as
    ``python -c pass`` (each row: the median of its per-round ratios)."""
    runs = 5 if report.quick else 20
    exe = python.parent / "compatkit"
    env = _env()
    subprocess.run(
        [str(exe), "apply", "speculators-vllm016"], check=True, env=env, stdout=subprocess.DEVNULL
    )
    try:
        rows: list[tuple[str, list[str], float | None]] = [
            (f"compatkit {' '.join(args)} (patchset applied)", [str(exe), *args], P1_TARGET)
            for args in COMMANDS
        ]
        for tool, *args in PEERS:
            path = python.parent / tool
            if not path.exists():
                report.notes.append(f"P1-peer: {tool} is not installed beside {python}: skipped.")
                print(f"  P1-peer {tool}: not installed, skipped", flush=True)
                continue
            rows.append((f"{tool} {' '.join(args)} (peer)", [str(path), *args], None))
        _p1_rows(report, python, env, runs, rows)
        p1_paths.run(report, python, env, runs)
        cold = {**env, "COMPATKIT_NO_CACHE": "1"}
        status = [str(exe), "status"]
        ref, value = interleaved(runs, bare(python, env), lambda: timed(status, env=cold))
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


def bare(python: Path, env: dict[str, str]) -> Callable[[], float]:
    return lambda: timed([str(python), "-c", "pass"], env=env)


def _p1_rows(
    report: Report,
    python: Path,
    env: dict[str, str],
    runs: int,
    rows: list[tuple[str, list[str], float | None]],
) -> None:
    """One set of rounds: ``python -c pass`` and every row, so all share one reference."""
    actions = [bare(python, env), *(lambda c=cmd: timed(c, env=env) for _, cmd, _ in rows)]
    done = rounds(runs, *actions)
    ref = statistics.median(r[0] for r in done)
    for i, (what, _, target) in enumerate(rows, start=1):
        report.add(
            Figure(
                "P1" if target is not None else "P1-peer",
                what,
                statistics.median(r[i] for r in done),
                "python -c pass",
                ref,
                target,
                paired=statistics.median(r[i] / r[0] for r in done),
            )
        )


def purelib(python: Path) -> Path:
    """``python``'s site-packages (sysconfig's purelib)."""
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    return Path(done.stdout.strip())


def p3(report: Report, python: Path) -> None:
    runs = 1 if report.quick else 5
    exe = python.parent / "compatkit"
    env = _env()
    site = purelib(python)
    record = next(site.glob("vllm-*.dist-info/RECORD")).read_text().splitlines()
    rows = list(csv.reader(record))
    files = [r[0] for r in rows if len(r) > 1 and r[1] and not r[0].startswith("..")]
    with tempfile.NamedTemporaryFile("w", suffix=".lst", delete=False) as lst:
        lst.write("\0".join(files))
    sha = ["sh", "-c", f"xargs -0 -P {os.cpu_count() or 1} -n 200 sha256sum < {lst.name}"]
    try:
        ref = median_of(runs, lambda: timed(sha, env=env, cwd=site))
        value = median_of(runs, lambda: timed([str(exe), "pristine", "vllm"], env=env))
    finally:
        Path(lst.name).unlink()
    report.add(
        Figure(
            "P3",
            f"compatkit pristine vllm ({len(files)} files)",
            value,
            f"sha256sum, {os.cpu_count()} processes",
            ref,
            1.2,
        )
    )


def p3_all(report: Report, python: Path) -> None:
    """P3-all: ``pristine --all`` over the whole environment against ``sha256sum``
    over the same files (every regular file a RECORD lists, once) with ``xargs -P <cores>``,
    timed in turn in the same rounds."""
    runs = 1 if report.quick else 5
    exe = python.parent / "compatkit"
    env = _env()
    site = purelib(python)
    files = listed_files(site)
    size = sum((site / f).stat().st_size for f in files)
    n = cores()
    # xargs hands out the list 200 files at a time in its order: in path order a namespace's
    # big libraries (nvidia/*/lib) fall into a few batches, which then finish last alone; in
    # a shuffled order (fixed seed) every batch holds a share of them. Both are timed: the
    # target is against the first, the second is the stronger reference.
    shuffled = sorted(files)
    random.Random(36).shuffle(shuffled)
    lists = []
    for order in (sorted(files), shuffled):
        with tempfile.NamedTemporaryFile("w", suffix=".lst", delete=False) as lst:
            lst.write("\0".join(order))
        lists.append(lst.name)
    sha, mixed = (
        ["sh", "-c", f"xargs -0 -P {n} -n 200 sha256sum < {name} > /dev/null"] for name in lists
    )
    verify = [str(exe), "pristine", "--all"]
    try:
        sha_s, mixed_s, ck_s = interleaved(
            runs,
            lambda: timed(sha, env=env, cwd=site),
            lambda: timed(mixed, env=env, cwd=site),
            any_exit(verify, env),
        )
    finally:
        for name in lists:
            Path(name).unlink()
    what = f"compatkit pristine --all ({len(files)} files, {size >> 20} MiB)"
    report.add(Figure("P3-all", what, ck_s, f"sha256sum, xargs -P {n}", sha_s, 1.0))
    report.add(
        Figure(
            "P3-all-shuffled",
            what,
            ck_s,
            f"sha256sum, xargs -P {n}, the list shuffled",
            mixed_s,
        )
    )
