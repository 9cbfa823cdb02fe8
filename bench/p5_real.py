"""P5: apply + revert of a real upgrade diff vs git apply + git apply -R of the same diff.

For each pair of releases (requests 2.31.0 → 2.32.3, click 8.1.3 → 8.1.7, jinja2 3.1.2 →
3.1.4), both wheels are installed from the package index (uv, no dependencies) and the patch is
``git diff --no-index`` of the two installed packages: the real upgrade, as a patchset of one
patch targeting the old release. The target venv has the old release with its bytecode
compiled (as pip leaves it); the reference applies the same diff with git to a plain copy of
the old package. Journal, RECORD and bytecode handling are all on. Runs are interleaved and
start from files on disk (``sync``, untimed), as in P2. These patchsets are small, so what is
measured is mostly compatkit's fixed cost per run: two interpreter start-ups, the imports, the
lock, the journal and two ``syncfs``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from common import Figure, Report, interleaved, timed

PAIRS = [
    ("requests", "2.31.0", "2.32.3"),
    ("click", "8.1.3", "8.1.7"),
    ("jinja2", "3.1.2", "3.1.4"),
]
HEADER = (
    "Patch-Id: patch-1\nTitle: upgrade\nSymptom: s\nCause: c\nFix: f\n"
    "Smoke-Test: smoke/test_x.py\n---\n"
)


def _venv(path: Path, requirement: str, compile_bytecode: bool) -> Path:
    subprocess.run(["uv", "venv", "-q", "-p", sys.executable, str(path)], check=True)
    cmd = ["uv", "pip", "install", "-q", "--python", str(path / "bin/python"), "--no-deps"]
    cmd += ["--link-mode", "copy", *(["--compile-bytecode"] if compile_bytecode else [])]
    subprocess.run([*cmd, requirement], check=True)
    return next(path.glob("lib/python3*/site-packages"))


def _upgrade_diff(work: Path, package: str, old: Path, new: Path) -> str:
    """``git diff --no-index`` of the two installed packages, as paths below site-packages."""
    (work / "old").mkdir()
    (work / "new").mkdir()
    shutil.copytree(old / package, work / "old" / package)
    shutil.copytree(new / package, work / "new" / package)
    proc = subprocess.run(
        ["git", "diff", "--no-index", "--no-color", "--src-prefix=a/", "--dst-prefix=b/",
         f"old/{package}", f"new/{package}"],
        cwd=work, capture_output=True, text=True,
    )  # fmt: skip
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"git diff --no-index failed: {proc.stderr.strip()}")
    out = []
    for line in proc.stdout.splitlines(keepends=True):
        if line.startswith("diff --git "):
            line = line.replace(" a/old/", " a/", 1).replace(" b/new/", " b/", 1)
        elif line.startswith("--- a/old/"):
            line = "--- a/" + line[len("--- a/old/") :]
        elif line.startswith("+++ b/new/"):
            line = "+++ b/" + line[len("+++ b/new/") :]
        out.append(line)
    return "".join(out)


def measure(package: str, old: str, new: str, runs: int) -> tuple[float, float, float, int, int]:
    """Medians of ``runs`` interleaved apply+revert pairs, git pairs and two ``python -c pass``
    (the interpreter start-ups alone: a floor no Python command goes below); files and hunks
    in the diff."""
    with tempfile.TemporaryDirectory(prefix="compatkit-p5-") as tmp:
        work = Path(tmp)
        target = _venv(work / "target", f"{package}=={old}", compile_bytecode=True)
        old_src = _venv(work / "old-src", f"{package}=={old}", compile_bytecode=False)
        new_src = _venv(work / "new-src", f"{package}=={new}", compile_bytecode=False)
        diff = _upgrade_diff(work, package, old_src, new_src)
        files = diff.count("\ndiff --git ") + diff.startswith("diff --git ")
        hunks = sum(1 for line in diff.splitlines() if line.startswith("@@ "))
        ps = work / "ps" / "upgrade"
        (ps / "patches").mkdir(parents=True)
        (ps / "smoke").mkdir()
        (ps / "smoke" / "test_x.py").write_text("def test_x():\n    pass\n")
        (ps / "patches" / "upgrade.patch").write_text(HEADER + diff)
        dist = next(target.glob("*.dist-info")).name.split("-")[0]
        (ps / "patchset.toml").write_text(
            f'[patchset]\nname = "upgrade"\nversion = "1"\nsummary = "{package} {new}"\n'
            f'series = ["patches/upgrade.patch"]\n[target]\ndistribution = "{dist}"\n'
            f'specifier = "=={old}"\n'
        )
        plain = work / "plain"
        shutil.copytree(old_src / package, plain / package)
        (work / "upgrade.diff").write_text(diff)
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # compatkit with its bytecode, as users run it
        # the console script, as users run it (``python -m`` would add runpy)
        exe = Path(sys.executable).parent / "compatkit"
        base = [
            str(exe), "--python", str(work / "target/bin/python"),
            "--patchset-dir", str(work / "ps"),
        ]  # fmt: skip

        def ours() -> float:
            os.sync()
            elapsed = timed([*base, "apply", "upgrade"], env=env)
            os.sync()
            return elapsed + timed([*base, "revert", "upgrade"], env=env)

        def git() -> float:
            patch = str(work / "upgrade.diff")
            os.sync()
            elapsed = timed(["git", "apply", patch], cwd=plain)
            os.sync()
            return elapsed + timed(["git", "apply", "-R", patch], cwd=plain)

        def starts() -> float:
            return sum(timed([sys.executable, "-c", "pass"], env=env) for _ in range(2))

        # the warm-up round fills compatkit's caches, as any earlier run does
        value, ref, floor = interleaved(runs, ours, git, starts, warmup=1)
        return value, ref, floor, files, hunks


def run(report: Report) -> None:
    runs = 1 if report.quick else 11
    for package, old, new in PAIRS:
        value, ref, floor, files, hunks = measure(package, old, new, runs)
        report.add(
            Figure(
                "P5" if package == "requests" else f"P5-{package}",
                f"apply + revert, {package} {old} → {new} ({files} files, {hunks} hunks)",
                value,
                "git apply + git apply -R",
                ref,
                4.0 if package == "requests" and not report.quick else None,
            )
        )
        if package == "requests":
            report.add(
                Figure(
                    "P5-floor",
                    "two `python -c pass` of the interpreter that runs compatkit (its two "
                    "start-ups alone, no import, no work)",
                    floor,
                    "git apply + git apply -R",
                    ref,
                )
            )
