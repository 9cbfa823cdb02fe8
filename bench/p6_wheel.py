"""P6: ``compatkit wheel speculators-vllm016`` (the patched speculators 0.3.0 wheel) vs a plain
re-zip of the same wheel.

compatkit takes the pristine wheel from uv's warm cache (every file checked against its RECORD
and against the installed release's), applies the ten patches, writes the built-in state and
the CycloneDX SBOM, regenerates RECORD
and zips at deflate level 9. The reference is the part no tool can skip: the same interpreter
reading every member of the built wheel and writing them again, deflate level 9.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from common import Figure, Report, median_of, timed

REZIP = """
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as src, zipfile.ZipFile(sys.argv[2], "w") as dst:
    for info in src.infolist():
        dst.writestr(info, src.read(info.filename), zipfile.ZIP_DEFLATED, 9)
"""


def run(report: Report, python: Path) -> None:
    runs = 1 if report.quick else 5
    ck = str(python.parent / "compatkit")
    with tempfile.TemporaryDirectory(prefix="ck-bench-wheel-") as tmp:
        out = Path(tmp) / "dist"
        cmd = [ck, "wheel", "speculators-vllm016", "-o", str(out), "--python", str(python)]

        def build() -> float:
            for old in out.glob("*.whl"):
                old.unlink()
            return timed(cmd)

        value = median_of(runs, build)
        (wheel,) = out.glob("*.whl")
        copy = Path(tmp) / "copy.whl"
        ref = median_of(runs, lambda: timed([str(python), "-c", REZIP, str(wheel), str(copy)]))
        sbom = subprocess.run(
            [str(python), "-m", "zipfile", "-l", str(wheel)], capture_output=True, text=True
        ).stdout.count("/sboms/")
        size = wheel.stat().st_size // 1024
    inside = "with" if sbom else "without"
    what = f"compatkit wheel speculators-vllm016 ({size} KiB wheel, {inside} SBOM)"
    report.add(Figure("P6", what, value, "re-zip of the same wheel (zipfile, deflate 9)", ref))
    report.notes.append(
        "P6: the pristine speculators 0.3.0 wheel comes from uv's warm cache; both sides pay one "
        "interpreter start-up. The difference is compatkit's start-up, the RECORD check of every "
        "pristine file and the proof against the installed RECORD, planning the ten patches and "
        "writing the SBOM (compatkit's own JSON)."
    )
