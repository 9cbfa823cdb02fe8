"""P2: apply + revert of a generated patchset vs git apply + git apply -R of the same diff.

A distribution of M modules is built as a real wheel and installed into a venv with its
bytecode compiled (as pip does, and ``uv pip install --compile-bytecode``); the patchset changes
one line in each of N modules. The reference applies the same diff to an identical plain copy
of the package with git. Journal, RECORD and bytecode handling are all on.

Both sides start every timed run from files that are on disk (``sync`` first, untimed), as an
installed package is. Otherwise the comparison is skewed: git never syncs, so after its own run
its files are still only in the page cache and replacing them is cheap, while compatkit ends
every transaction with ``syncfs`` (durability) and each later run pays to free the synced blocks.

compatkit is the one installed in the venv of bench/run.py's ``--python`` (not editable,
bytecode compiled, run by its console script), as in P5. The scaling step (``P2-n*``, issue 48)
times two more pairs on the same plain copy in the same rounds: GNU ``patch -p1`` and
``patch -R -p1`` (a temp file and a rename per file, as compatkit: no journal, no RECORD), and
patch-ng (``python -m patch_ng``, ``--revert``; skipped with one line where it is not installed
in that venv).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from common import ROOT, Figure, Report, rounds, timed_pair

sys.path.insert(0, str(ROOT / "tests"))
from helpers.wheelkit import build_wheel

HEADER = (
    "Patch-Id: patch-1\nTitle: bench\nSymptom: s\nCause: c\nFix: f\n"
    "Smoke-Test: smoke/test_bench.py\n---\n"
)


def _module(i: int, lines: int) -> bytes:
    return "".join(f"value_{i}_{j} = {j}\n" for j in range(lines)).encode()


def _diff(files: int, lines: int) -> str:
    mid = lines // 2
    parts = []
    for i in range(files):
        path = f"benchpkg/mod_{i}.py"
        ctx = [f"value_{i}_{j} = {j}" for j in range(mid - 3, mid + 4)]
        body = [f" {c}" for c in ctx[:3]] + [f"-{ctx[3]}", f"+{ctx[3]}  # patched"]
        body += [f" {c}" for c in ctx[4:]]
        parts.append(
            f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -{mid - 2},7 +{mid - 2},7 @@\n" + "\n".join(body) + "\n"
        )
    return "".join(parts)


def _setup(work: Path, modules: int, files: int, lines: int) -> tuple[Path, Path, Path]:
    mods = {f"benchpkg/mod_{i}.py": _module(i, lines) for i in range(modules)}
    mods["benchpkg/__init__.py"] = b""
    wheel = build_wheel(work, "benchpkg", "1.0", mods)
    venv = work / "venv"
    subprocess.run(["uv", "venv", "-q", "-p", sys.executable, str(venv)], check=True)
    subprocess.run(
        [
            "uv",
            "pip",
            "install",
            "-q",
            "--python",
            str(venv / "bin/python"),
            "--link-mode",
            "copy",
            "--no-deps",
            "--compile-bytecode",
            str(wheel),
        ],
        check=True,
    )
    diff = _diff(files, lines)
    ps = work / "ps" / "bench"
    (ps / "patches").mkdir(parents=True)
    (ps / "smoke").mkdir()
    (ps / "smoke" / "test_bench.py").write_text("def test_x():\n    pass\n")
    (ps / "patches" / "bench.patch").write_text(HEADER + diff)
    (ps / "patchset.toml").write_text(
        '[patchset]\nname = "bench"\nversion = "1"\nsummary = "b"\n'
        'series = ["patches/bench.patch"]\n[target]\ndistribution = "benchpkg"\n'
        'specifier = "==1.0"\n'
    )
    plain = work / "plain"
    site = next(venv.glob("lib/python3*/site-packages"))
    shutil.copytree(site / "benchpkg", plain / "benchpkg")
    (work / "bench.diff").write_text(diff)
    return venv, work / "ps", plain


# What the never-in-place rule alone costs: for each file, its bytes written to a new
# exclusive temp file beside it, then os.replace over it (no parsing, journal, RECORD or sync).
FLOOR = """
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    path = os.path.join(root, f"mod_{i}.py")
    with open(path, "rb") as f:
        data = f.read()
    tmp = path + ".floor-tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, data)
    os.close(fd)
    os.replace(tmp, path)
"""


class Timing:
    """Each side's median wall and CPU time over interleaved rounds, and the median of each
    round's ratio of compatkit's pair (the first side) to that side's."""

    def __init__(self, names: list[str], done: list[list[tuple[float, float]]]) -> None:
        self.names = names
        self.wall = {n: statistics.median(r[i][0] for r in done) for i, n in enumerate(names)}
        self.cpu = {n: statistics.median(r[i][1] for r in done) for i, n in enumerate(names)}
        self.paired = {
            n: statistics.median(r[0][0] / r[i][0] for r in done) for i, n in enumerate(names)
        }
        self.paired_cpu = {
            n: statistics.median(r[0][1] / r[i][1] for r in done) for i, n in enumerate(names)
        }


PYTHON = [Path(sys.executable)]  # bench/run.py's --python: compatkit and patch-ng installed there
_skipped: set[str] = set()


def _gnu_patch() -> bool:
    found = shutil.which("patch") is not None
    if not found and "GNU patch" not in _skipped:
        _skipped.add("GNU patch")
        print("  P2 peer GNU patch: no patch on PATH, skipped", flush=True)
    return found


def _patch_ng() -> bool:
    code = "import patch_ng"
    found = subprocess.run([PYTHON[0], "-c", code], capture_output=True).returncode == 0
    if not found and "patch-ng" not in _skipped:
        _skipped.add("patch-ng")
        print(f"  P2 peer patch-ng: not installed beside {PYTHON[0]}, skipped", flush=True)
    return found


def measure(
    modules: int,
    files: int,
    lines: int,
    runs: int,
    where: str | None = None,
    peers: bool = False,
) -> Timing:
    """``runs`` interleaved rounds (so that the disk's background flushing hits all alike) of
    compatkit's apply + revert, git's pair and the never-in-place floor (two processes of
    :data:`FLOOR`); with ``peers``, GNU patch's pair and patch-ng's too; in a temp dir under
    ``where``."""
    with tempfile.TemporaryDirectory(prefix="compatkit-bench-", dir=where) as tmp:
        work = Path(tmp)
        venv, patchsets, plain = _setup(work, modules, files, lines)
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # compatkit with its bytecode, as users run it
        base = [
            str(PYTHON[0].parent / "compatkit"),
            "--python",
            str(venv / "bin/python"),
            "--patchset-dir",
            str(patchsets),
        ]
        diff = str(work / "bench.diff")
        sides: dict[str, Callable[[], tuple[float, float]]] = {
            "compatkit": lambda: timed_pair(
                [*base, "apply", "bench"], [*base, "revert", "bench"], env=env
            ),
            "git": lambda: timed_pair(
                ["git", "apply", diff], ["git", "apply", "-R", diff], cwd=plain
            ),
            "floor": lambda: timed_pair(
                *[[str(PYTHON[0]), "-c", FLOOR, str(plain / "benchpkg"), str(files)]] * 2, env=env
            ),
        }
        if peers and _gnu_patch():
            patch = ["patch", "-s", "-p1", "-i", diff]
            sides["GNU patch"] = lambda: timed_pair(patch, [*patch, "-R"], cwd=plain)
        if peers and _patch_ng():
            ng = [str(PYTHON[0]), "-m", "patch_ng", "-q", "-d", str(plain), diff]
            sides["patch-ng"] = lambda: timed_pair(ng, [*ng[:-1], "--revert", diff], env=env)
        names = list(sides)
        done = rounds(runs, *sides.values(), warmup=1)
        return Timing(names, done)


def run(report: Report, python: Path) -> None:
    PYTHON[0] = python
    runs = 1 if report.quick else 9
    files = 100 if report.quick else 1000
    t = measure(files, files, 40, runs)
    report.add(
        Figure(
            "P2",
            f"apply + revert, {files} files, one hunk each",
            t.wall["compatkit"],
            "git apply + git apply -R",
            t.wall["git"],
            None if report.quick else 2.0,  # the target is for 1,000 files, not quick's 100
        )
    )
    report.add(
        Figure(
            "P2-floor",
            f"never in place alone: {files} files each copied to an exclusive temp file and "
            "os.replace-d, twice, in two Python processes",
            t.wall["floor"],
            "git apply + git apply -R",
            t.wall["git"],
        )
    )
    if Path("/dev/shm").is_dir():  # the same on tmpfs: no disk, so CPU work alone
        t = measure(files, files, 40, runs, "/dev/shm")
        report.add(
            Figure(
                "P2-tmpfs",
                f"the same {files} files on tmpfs (CPU only; see notes)",
                t.wall["compatkit"],
                "git apply pair",
                t.wall["git"],
            )
        )
    scaling(report)
    runs = 1 if report.quick else 5
    for lines in [40, 400] if report.quick else [40, 400, 4000]:
        t = measure(100, 100, lines, runs)
        report.add(
            Figure(
                f"P2-l{lines}",
                f"100 files of {lines} lines",
                t.wall["compatkit"],
                "git apply pair",
                t.wall["git"],
            )
        )
    for modules in [100, 1000] if report.quick else [100, 1000, 5000]:
        t = measure(modules, 100, 40, runs)
        report.add(
            Figure(
                f"P2-m{modules}",
                f"100 patched files in a {modules}-module dist",
                t.wall["compatkit"],
                "git apply pair",
                t.wall["git"],
            )
        )


# compatkit's pair against GNU patch's and patch-ng's in the scaling step (issue 48):
# {files: {peer: at most this many times its time}}
SCALING_LIMITS = {100: {"GNU patch": 3.0}, 1000: {"GNU patch": 1.0, "patch-ng": 1.0}}


def scaling_only(report: Report, python: Path) -> None:
    """The scaling step alone (``bench/run.py --only P2-n``)."""
    PYTHON[0] = python
    scaling(report)


def scaling(report: Report) -> None:
    """P2-n*: 10 to 5,000 files of 40 lines, against git, GNU patch and patch-ng (wall and
    CPU, paired per round)."""
    runs = 1 if report.quick else 7
    for n in [10, 100] if report.quick else [10, 100, 1000, 5000]:
        t = measure(n, n, 40, runs, peers=True)
        report.add(
            Figure(f"P2-n{n}", f"{n} files of 40 lines", t.wall["compatkit"], "git apply pair",
                   t.wall["git"], paired=t.paired["git"])
        )  # fmt: skip
        for peer in ("GNU patch", "patch-ng"):
            if peer not in t.names:
                continue
            short = peer.replace("GNU ", "")
            limit = None if report.quick else SCALING_LIMITS.get(n, {}).get(peer)
            report.add(
                Figure(f"P2-n{n}-vs-{short}", f"{n} files of 40 lines against {peer}",
                       t.wall["compatkit"], f"{peer}'s pair", t.wall[peer], limit,
                       paired=t.paired[peer])
            )  # fmt: skip
            report.add(
                Figure(f"P2-n{n}-cpu-vs-{short}", "the same, CPU time (user + system)",
                       t.cpu["compatkit"], f"{peer}'s pair, CPU", t.cpu[peer],
                       paired=t.paired_cpu[peer])
            )  # fmt: skip
