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

P7-hundred (issue 26 item 7, target ≤ 1.05×; needs no real stack, ``--python`` may be left
out): a whole process, start-up included, that imports the 100 modules of a generated
distribution of which one is patched, with the hook (``runtime install``, PYTHONPATH form)
against the same process without it (the installed, unpatched files): every cost of runtime
mode at once, the hook's start-up checks, its table, the finder consulted on each import, and
the one patched module's hash checks (``hashlib``) and source. Warm bytecode on both sides,
timed interleaved.
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

from common import ROOT, Figure, Report, interleaved, median_of, timed

sys.path.insert(0, str(ROOT / "tests"))
from wheelkit import build_wheel

HUNDRED = 100
PATCH = (
    "Patch-Id: patch-1\nTitle: bench\nSymptom: s\nCause: c\nFix: f\n"
    "Smoke-Test: smoke/test_bench.py\n---\n"
    "--- a/benchpkg/mod_0.py\n+++ b/benchpkg/mod_0.py\n@@ -1,3 +1,3 @@\n"
    " value_0 = 0\n-value_1 = 1\n+value_1 = 100  # patched\n value_2 = 2\n"
)

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
    run_hundred(report)


def _module(i: int) -> bytes:
    """A small module, as most of a big stack's are: values, a function, a class."""
    values = "".join(f"value_{j} = {j}\n" for j in range(20))
    return (
        values + f"\n\ndef f{i}(x):\n    return x + value_1\n\n\nclass C{i}:\n    a = 1\n"
    ).encode()


def _hundred_setup(work: Path) -> tuple[str, Path, Path]:
    """A venv with benchpkg (100 modules, bytecode compiled), a patchset for one of them."""
    mods = {f"benchpkg/mod_{i}.py": _module(i) for i in range(HUNDRED)}
    mods["benchpkg/__init__.py"] = b""
    wheel = build_wheel(work, "benchpkg", "1.0", mods)
    venv = work / "venv"
    subprocess.run(["uv", "venv", "-q", "-p", sys.executable, str(venv)], check=True)
    install = ["uv", "pip", "install", "-q", "--python", str(venv / "bin/python")]
    subprocess.run([*install, "--no-deps", "--compile-bytecode", str(wheel)], check=True)
    ps = work / "ps" / "bench"
    (ps / "patches").mkdir(parents=True)
    (ps / "smoke").mkdir()
    (ps / "smoke" / "test_bench.py").write_text("def test_x():\n    pass\n")
    (ps / "patches" / "bench.patch").write_text(PATCH)
    (ps / "patchset.toml").write_text(
        '[patchset]\nname = "bench"\nversion = "1"\nsummary = "b"\n'
        'series = ["patches/bench.patch"]\n[target]\ndistribution = "benchpkg"\n'
        'specifier = "==1.0"\n'
    )
    return str(venv / "bin/python"), work / "ps", work / "rt"


def run_hundred(report: Report) -> None:
    runs = 5 if report.quick else 41
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    with tempfile.TemporaryDirectory(prefix="compatkit-p7h-") as tmp:
        python, patchsets, root = _hundred_setup(Path(tmp))
        compatkit = [sys.executable, "-m", "compatkit", "--python", python]
        cmd = [*compatkit, "--patchset-dir", str(patchsets), "runtime", "install", "bench"]
        subprocess.run([*cmd, "--dir", str(root)], check=True, capture_output=True, env=env)
        code = "".join(f"import benchpkg.mod_{i}\n" for i in range(HUNDRED))
        check = code + "assert benchpkg.mod_0.value_1 == 100, 'not patched'\n"
        hooked_env = {**env, "PYTHONPATH": str(root)}
        timed([python, "-c", check], hooked_env)  # the hook's own bytecode written
        plain, hooked, plain_cpu, hooked_cpu = interleaved(
            runs,
            lambda: timed([python, "-c", code], env),
            lambda: timed([python, "-c", check], hooked_env),
            lambda: _cpu([python, "-c", code], env),
            lambda: _cpu([python, "-c", check], hooked_env),
        )
    what = f"a process importing {HUNDRED} modules, 1 patched, runtime mode (start-up included)"
    report.add(Figure("P7-hundred", what, hooked, "the same without the hook", plain, 1.05))
    what = "the same, CPU time (user + system): less swayed by a loaded machine"
    report.add(Figure("P7-hundred-cpu", what, hooked_cpu, "without the hook", plain_cpu, 1.05))


def _cpu(cmd: list[str], env: dict[str, str]) -> float:
    """The user + system CPU seconds of one run of ``cmd``."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, env=env, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


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
    parser.add_argument("--python", type=Path, help="the real stack (else: P7-hundred only)")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    report = Report(quick=args.quick)
    if args.python is None:
        run_hundred(report)
    else:
        run(report, args.python)
    for f in report.figures:
        print(f"{f.id}: {f.ratio:.2f}× ({f.value * 1000:.2f} ms vs {f.reference * 1000:.2f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
