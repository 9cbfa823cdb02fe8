"""Shared helpers for the benchmarks: timing, the machine, the results table."""

from __future__ import annotations

import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
ROOT = Path(__file__).resolve().parent.parent
P1_TARGET = 6.0  # start-up: at most this many times `python -c pass` (CONTRIBUTING.md)


def timed(cmd: Sequence[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> float:
    return timed_cpu(cmd, env, cwd)[0]


def timed_cpu(
    cmd: Sequence[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> tuple[float, float]:
    """The wall time of ``cmd`` and the CPU time (user + system) it and its children used:
    on a machine shared with other jobs, CPU time moves less with the load than wall."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        list(cmd), env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.strip()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def timed_pair(
    first: Sequence[str],
    second: Sequence[str],
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> tuple[float, float]:
    """Wall and CPU time of two commands in turn (an apply and its revert), each starting
    from files on disk."""
    os.sync()
    wall, cpu = timed_cpu(first, env=env, cwd=cwd)
    os.sync()
    wall2, cpu2 = timed_cpu(second, env=env, cwd=cwd)
    return wall + wall2, cpu + cpu2


def rounds(runs: int, *actions: Callable[[], T], warmup: int = 2) -> list[list[T]]:
    """Each action's result in each of ``runs`` rounds (one of each per round, in ABBA order:
    no action always runs first or right after the same other), so a machine that gets slower
    or faster during the run moves them all alike (a VM's page faults and a shared disk swing
    single figures)."""
    for _ in range(warmup):
        for action in actions:
            action()
    done = []
    for i in range(runs):
        turn = range(len(actions)) if i % 2 == 0 else range(len(actions) - 1, -1, -1)
        got = {j: actions[j]() for j in turn}
        done.append([got[j] for j in range(len(actions))])
    return done


def interleaved(runs: int, *actions: Callable[[], float], warmup: int = 2) -> tuple[float, ...]:
    """The median of each action over :func:`rounds`."""
    done = rounds(runs, *actions, warmup=warmup)
    return tuple(statistics.median(r[i] for r in done) for i in range(len(actions)))


def median_of(runs: int, action: Callable[[], float], warmup: int = 1) -> float:
    for _ in range(warmup):
        action()
    return statistics.median(action() for _ in range(runs))


@dataclass
class Figure:
    id: str
    what: str
    value: float
    reference_name: str
    reference: float
    target: float | None = None
    note: str = ""
    paired: float | None = None  # the median of the per-round ratios, where set (see ratio)
    unit: str = "s"  # "s": value and reference are seconds; else counts of this unit

    @property
    def ratio(self) -> float:
        """``value / reference``; or, for sides timed in turn, the median of each round's
        ratio (``paired``): a round's two runs see the same machine, so a slow spell (a VM's
        page reclaim slows some starts) moves both and cancels out."""
        if self.paired is not None:
            return self.paired
        return self.value / self.reference if self.reference else float("inf")

    def row(self) -> list[str]:
        verdict = "" if self.target is None else ("met" if self.ratio <= self.target else "MISSED")
        target = "" if self.target is None else f"≤ {self.target:g}×"
        return [
            self.id,
            self.what,
            self._show(self.value),
            self.reference_name,
            self._show(self.reference),
            f"{self.ratio:.2f}×",
            target,
            verdict,
        ]

    def _show(self, amount: float) -> str:
        return _ms(amount) if self.unit == "s" else f"{amount / 1e6:.2f} M {self.unit}"


def _ms(seconds: float) -> str:
    """Milliseconds, with two decimals below 10 ms (P7 measures fractions of one)."""
    return f"{seconds * 1000:.2f} ms" if seconds < 0.01 else f"{seconds * 1000:.0f} ms"


@dataclass
class Report:
    quick: bool
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, figure: Figure) -> None:
        self.figures.append(figure)
        print("  " + " | ".join(figure.row()), flush=True)

    def markdown(self) -> str:
        head = [
            "id",
            "what",
            "compatkit",
            "reference",
            "reference time",
            "ratio",
            "target",
            "verdict",
        ]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(f.row()) + " |" for f in self.figures]
        return "\n".join(lines)


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB RAM, {platform.system()} "
        f"{platform.release()}, Python {sys.version.split()[0]}; load average at start: "
        f"{load}"
    )


def cores() -> int:
    """The CPUs this process may run on (its affinity), as compatkit's hashing counts them."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def listed_files(site: Path) -> list[str]:
    """Every regular file a RECORD below ``site`` lists, once (as the pristine check reads)."""
    import csv

    files: set[str] = set()
    for record in site.glob("*.dist-info/RECORD"):
        for row in csv.reader(record.read_text().splitlines()):
            listed = len(row) > 1 and row[1] and not row[0].startswith(("..", "/"))
            if listed and (site / row[0]).is_file():
                files.add(row[0])
    return sorted(files)


def any_exit(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> Callable[[], float]:
    """A timed run of ``cmd`` whatever its exit code (a real environment is rarely pristine)."""

    def run() -> float:
        start = time.perf_counter()
        subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - start

    return run
