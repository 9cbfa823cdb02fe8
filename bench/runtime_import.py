"""P7: runtime mode's import overhead against a normal import of the same patched modules.

    python bench/runtime_import.py --python ENV/bin/python [--quick]

ENV: speculators 0.3.0 + vLLM 0.16.0. Prints the ratios in one run. Both sides import the two
modules speculators-vllm016 patches, with their dependencies (vLLM, torch) already imported
and warm bytecode, re-importing them (``del sys.modules[...]``) many times in one process:

- runtime: ``compatkit exec speculators-vllm016`` (the hook: find, hash the installed file,
  read and hash the patched source, load the hook's pyc, register the lines in linecache);
- normal: the patched sources as plain files, in a copy of the ``speculators`` package first
  on ``PYTHONPATH`` (what ``compatkit apply`` leaves, without writing the venv).

P7-startup is the hook's cost to every interpreter start, patched imports or not: the
cumulative ``-X importtime`` of ``sitecustomize`` (the hook module, its table, the finder),
against the whole of ``python -c pass``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from common import Figure, Report, median_of, timed

MODULES = [
    "speculators.data_generation.custom_worker",
    "speculators.data_generation.vllm_hidden_states_generator",
]
CHILD = """
import importlib, json, statistics, sys, time
mods, n = sys.argv[2:], int(sys.argv[1])
for m in mods:
    importlib.import_module(m)  # dependencies imported, bytecode written
times = []
for _ in range(n):
    for m in mods:
        del sys.modules[m]
    t = time.perf_counter()
    for m in mods:
        importlib.import_module(m)
    times.append(time.perf_counter() - t)
loader = type(sys.modules[mods[0]].__loader__).__name__
print(json.dumps({"median": statistics.median(times), "loader": loader}))
"""


def _child(cmd: list[str], env: dict[str, str]) -> dict[str, object]:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:6])}... failed: {proc.stderr[-800:]}")
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _normal_overlay(python: str, runtime: Path, tmp: Path) -> Path:
    """A copy of the installed speculators package with the patched sources in it."""
    code = "import speculators, os; print(os.path.dirname(speculators.__file__))"
    pkg = Path(subprocess.run([python, "-c", code], capture_output=True, text=True).stdout.strip())
    shutil.copytree(pkg, tmp / "speculators", ignore=shutil.ignore_patterns("__pycache__"))
    (patched,) = (runtime / "_compatkit_runtime" / "src").iterdir()  # src/<key>/
    for src in patched.rglob("*.py"):
        shutil.copyfile(src, tmp / src.relative_to(patched))
    return tmp


def run(report: Report, python: Path) -> None:
    n = 5 if report.quick else 200
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory(prefix="compatkit-p5-") as tmp:
        env["COMPATKIT_CACHE_DIR"] = str(Path(tmp) / "cache")
        exec_ = [sys.executable, "-m", "compatkit", "--python", str(python), "exec"]
        hooked = _child(
            [*exec_, "speculators-vllm016", "--", str(python), "-c", CHILD, str(n), *MODULES], env
        )
        assert hooked["loader"] == "PatchedLoader", hooked
        (runtime,) = (Path(tmp) / "cache" / "runtime").iterdir()
        overlay = _normal_overlay(str(python), runtime, Path(tmp) / "overlay")
        plain_env = {**env, "PYTHONPATH": str(overlay)}
        normal = _child([str(python), "-c", CHILD, str(n), *MODULES], plain_env)
        assert normal["loader"] == "SourceFileLoader", normal
        report.add(
            Figure(
                "P7",
                f"re-import of the 2 patched modules, runtime mode (median of {n})",
                float(hooked["median"]),  # type: ignore[arg-type]
                "the same patched files on disk",
                float(normal["median"]),  # type: ignore[arg-type]
            )
        )
        runs = 3 if report.quick else 21
        bare = [str(python), "-c", "pass"]
        hook = median_of(runs, lambda: _hook_start(bare, {**env, "PYTHONPATH": str(runtime)}))
        reference = median_of(runs, lambda: timed(bare, env))
        what = "the hook's start-up: sitecustomize + hook import and table (-X importtime)"
        report.add(Figure("P7-startup", what, hook, "python -c pass", reference))


def _hook_start(bare: list[str], env: dict[str, str]) -> float:
    """Seconds ``sitecustomize`` (the hook, its table, the chained one) took to import."""
    proc = subprocess.run(
        [bare[0], "-X", "importtime", *bare[1:]], capture_output=True, text=True, env=env
    )
    (line,) = [
        ln for ln in proc.stderr.splitlines() if ln.split("|")[-1].strip() == "sitecustomize"
    ]
    return int(line.split("|")[1]) / 1e6


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", type=Path, required=True)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    report = Report(quick=args.quick)
    run(report, args.python)
    for f in report.figures:
        print(f"{f.id}: {f.ratio:.2f}× ({f.value * 1000:.2f} ms vs {f.reference * 1000:.2f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
