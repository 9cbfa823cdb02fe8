"""G-apply on a real image: apply of a 3-file patch to a big distribution against the same
kind of patch on a small one, in the environment of the interpreter that runs this script.

    python bench/gapply_image.py BIG SMALL ROUNDS      (e.g. torch jinja2 11)

Not part of bench/run.py: it patches the environment it runs in (and reverts each time), so
it is meant for a throw-away machine holding a real ML image (docs/benchmarks.md, P3-all and
G-apply on the lent 16-core machine). Each distribution gets a patchset of one patch adding a
line to three of its modules (those in the middle of its RECORD, larger than 200 bytes);
apply is timed (wall, and CPU of the child), revert untimed, the two distributions in
alternation; printed: medians and the median of each round's ratio, big to small.
"""

from __future__ import annotations

import csv
import difflib
import os
import resource
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

PY = sys.executable
CK = str(Path(PY).parent / "compatkit")
SITE = Path(sysconfig.get_paths()["purelib"])
HEADER = (
    "Patch-Id: patch-1\nTitle: bench\nSymptom: s\nCause: c\nFix: f\n"
    "Smoke-Test: smoke/test_x.py\n---\n"
)


def _dist_info(name: str) -> Path:
    for info in SITE.glob("*.dist-info"):
        if info.name.split("-")[0].lower().replace("_", "-") == name:
            return info
    raise SystemExit(f"{name} is not installed in {SITE}")


def _patchset(root: Path, name: str) -> tuple[str, int]:
    """A patchset adding a line to three modules of ``name``: its name, the RECORD's rows."""
    info = _dist_info(name)
    rows = list(csv.reader((info / "RECORD").read_text().splitlines()))
    version = info.name[: -len(".dist-info")].split("-")[1]
    modules = sorted(
        r[0]
        for r in rows
        if r[0].endswith(".py") and r[1] and "/" in r[0] and (SITE / r[0]).stat().st_size > 200
    )
    diff: list[str] = []
    for rel in modules[len(modules) // 2 : len(modules) // 2 + 3]:
        old = (SITE / rel).read_text().splitlines(keepends=True)
        if not old[-1].endswith("\n"):
            raise SystemExit(f"{rel} does not end with a newline")
        diff += difflib.unified_diff(old, [*old, "# compatkit bench\n"], f"a/{rel}", f"b/{rel}")
    ps = root / f"g-{name}"
    (ps / "patches").mkdir(parents=True)
    (ps / "smoke").mkdir()
    (ps / "smoke" / "test_x.py").write_text("def test_x():\n    pass\n")
    (ps / "patches" / "p.patch").write_text(HEADER + "".join(diff))
    (ps / "patchset.toml").write_text(
        f'[patchset]\nname = "g-{name}"\nversion = "1"\nsummary = "bench"\n'
        f'series = ["patches/p.patch"]\n[target]\ndistribution = "{name}"\n'
        f'specifier = "=={version}"\n'
    )
    return ps.name, len(rows)


def _timed(cmd: list[str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    big, small, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        names = {}
        for name in (big, small):
            names[name], rows = _patchset(root, name)
            print(f"{name}: {rows} RECORD rows")
        base = [CK, "--patchset-dir", str(root)]
        times: dict[str, list[tuple[float, float]]] = {big: [], small: []}
        for i in range(runs + 1):  # the first round warms up
            for name in (big, small) if i % 2 else (small, big):
                os.sync()
                took = _timed([*base, "apply", names[name]])
                revert = [*base, "revert", names[name]]
                subprocess.run(revert, check=True, stdout=subprocess.DEVNULL)
                if i:
                    times[name].append(took)
        for name in (big, small):
            wall = statistics.median(w for w, _ in times[name]) * 1000
            cpu = statistics.median(c for _, c in times[name]) * 1000
            print(f"{name}: apply {wall:.1f} ms wall, {cpu:.1f} ms CPU")
        pairs = list(zip(times[big], times[small], strict=True))
        wall_ratio = statistics.median(a[0] / b[0] for a, b in pairs)
        cpu_ratio = statistics.median(a[1] / b[1] for a, b in pairs)
        print(f"G-apply, {big} against {small}: {wall_ratio:.2f}x wall, {cpu_ratio:.2f}x CPU")


if __name__ == "__main__":
    main()
