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
the one patched module's checks and source. The modules have the sizes of the real job's
(:data:`REAL_SIZES`, measured by bench/module_sizes.py); P7-hundred-pth is the same with the
``--pth`` form, in a venv of its own, against that venv with the ``.pth`` moved aside;
P7-hundred-tiny is the worst case, 100 modules of 318 bytes, where the hook's fixed cost
weighs most (reported); P7-hundred-hashed is P7-hundred with no stat facts recorded, so the
hook hashes the installed file and the patched source at every start (as on tmpfs, vfat or
FUSE; docs/security.md, "Runtime folders"): the cost the stat facts spare (reported). Warm
bytecode on all sides; the sides run in turn (ABBA), and a figure is the median of each
round's ratio.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from common import ROOT, Figure, Report, median_of, rounds, timed

sys.path.insert(0, str(ROOT / "tests"))
from helpers.wheelkit import build_wheel

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


# The source sizes (bytes) of the modules the real job imports: the 100 quantiles of the 4,300
# .py files that ``import speculators.data_generation.vllm_hidden_states_generator`` loads
# (speculators 0.3.0, vLLM 0.16.0, torch, transformers), as bench/module_sizes.py prints them
# (2026-12-05): median 6,170 bytes, mean 16,748. P7-hundred's modules have these sizes.
# fmt: off
REAL_SIZES = (
    0, 0, 43, 87, 131, 208, 269, 321, 369, 415, 483, 531, 578, 625, 684, 753, 804, 869, 941,
    1021, 1112, 1205, 1279, 1395, 1542, 1624, 1736, 1851, 1928, 2074, 2213, 2361, 2462,
    2645, 2817, 2998, 3171, 3327, 3550, 3732, 3894, 4162, 4366, 4545, 4753, 4991, 5290,
    5500, 5730, 5986, 6328, 6620, 6968, 7272, 7633, 7990, 8351, 8761, 9160, 9662, 10122,
    10372, 10827, 11314, 11675, 12023, 12590, 13201, 13705, 14248, 14918, 15568, 16233,
    17046, 17821, 18599, 19652, 20783, 21752, 22857, 24091, 25423, 27048, 28777, 30461,
    32289, 34433, 36681, 39224, 41981, 44713, 47978, 52480, 58137, 64775, 72337, 82036,
    96712, 120991, 199072,
)
# fmt: on
TINY = 318  # P7-hundred-tiny: every module this small (20 values, a function, a class)


def _tiny(i: int) -> bytes:
    """A module of :data:`TINY` bytes: 20 values, a function, a class."""
    values = "".join(f"value_{j} = {j}\n" for j in range(20))
    return (
        values + f"\n\ndef f{i}(x):\n    return x + value_1\n\n\nclass C{i}:\n    a = 1\n"
    ).encode()


def _block(i: int, k: int) -> str:
    """About 620 bytes of library code: a function, a class with two methods, comments and
    docstrings, as the real stack's modules are made of."""
    return f'''

def scale_{k}(values, factor=1.0, *, name=None):
    """Scale ``values`` by ``factor`` (block {k} of module {i})."""
    # a comment, as real code has
    if name is None:
        name = "scale_{k}"
    total = 0.0
    for item in values:
        total += item * factor
    return {{"name": name, "total": total, "count": len(values)}}


class Config{k}:
    """A configuration object with a default and a description."""

    size: int = {k}
    label: str = "config-{i}-{k}"

    def __init__(self, size: int = {k}) -> None:
        self.size = size

    def describe(self) -> str:
        return f"{{self.label}}: size={{self.size}}"
'''


def _sized(i: int, size: int) -> bytes:
    """A module of about ``size`` bytes (at least its first three lines, which the patch
    changes in module 0): values, then :func:`_block` s."""
    text = "".join(f"value_{j} = {j}\n" for j in range(3))
    k = 0
    while len(text) + len(_block(i, k)) // 2 < size:  # the nearest whole block
        text += _block(i, k)
        k += 1
    return text.encode()


def _hundred_setup(work: Path, sizes: Sequence[int] | None, venvs: int = 1) -> list[str]:
    """``venvs`` venvs with benchpkg (100 modules, ``sizes`` or :func:`_tiny`, bytecode
    compiled), and the patchset for module 0 in ``work/ps``: each venv's python. With
    ``sizes``, module 0 (the patched one) has the median size (6.3 kB: speculators-vllm016
    patches files of 5.4 and 11.5 kB)."""
    mods = {
        f"benchpkg/mod_{i}.py": _tiny(i) if sizes is None else _sized(i, sizes[(i + 50) % 100])
        for i in range(HUNDRED)
    }
    mods["benchpkg/__init__.py"] = b""
    work.mkdir(parents=True)
    wheel = build_wheel(work, "benchpkg", "1.0", mods)
    pythons = []
    for n in range(venvs):
        venv = work / f"venv{n}"
        subprocess.run(["uv", "venv", "-q", "-p", sys.executable, str(venv)], check=True)
        install = ["uv", "pip", "install", "-q", "--python", str(venv / "bin/python")]
        subprocess.run([*install, "--no-deps", "--compile-bytecode", str(wheel)], check=True)
        pythons.append(str(venv / "bin/python"))
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
    return pythons


def run_hundred(report: Report) -> None:
    """P7-hundred: the real stack's module sizes, the PYTHONPATH form and the --pth form;
    P7-hundred-tiny: the worst case, every module tiny (so the hook's fixed cost weighs most)."""
    runs = 5 if report.quick else 101
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    code = "".join(f"import benchpkg.mod_{i}\n" for i in range(HUNDRED))
    check = code + "assert benchpkg.mod_0.value_1 == 100, 'not patched'\n"
    with tempfile.TemporaryDirectory(prefix="compatkit-p7h-") as tmp:
        real, real_pth = _hundred_setup(Path(tmp) / "real", REAL_SIZES, venvs=2)
        (tiny,) = _hundred_setup(Path(tmp) / "tiny", None)
        real_rt = _install(real, Path(tmp) / "real", env)
        hashed_rt = _install(real, Path(tmp) / "real", env, hashed=True)
        _install(real_pth, Path(tmp) / "real", env, pth=True)
        pth_file = next(Path(real_pth).parent.parent.glob("lib/python*/site-packages/*.pth"))
        tiny_rt = _install(tiny, Path(tmp) / "tiny", env)
        sides = {
            "plain": ([real, "-c", code], env),
            "hooked": ([real, "-c", check], {**env, "PYTHONPATH": str(real_rt)}),
            "hashed": ([real, "-c", check], {**env, "PYTHONPATH": str(hashed_rt)}),
            "pth": ([real_pth, "-c", check], env),
            "pth-plain": ([real_pth, "-c", code], env, pth_file),  # that venv, its .pth moved away
            "tiny-plain": ([tiny, "-c", code], env),
            "tiny-hooked": ([tiny, "-c", check], {**env, "PYTHONPATH": str(tiny_rt)}),
        }
        # rounds() runs each side twice first: bytecode written, the hook checked
        got = rounds(runs, *(lambda side=side: _wall_cpu(*side) for side in sides.values()))
        done = [dict(zip(sides, r, strict=True)) for r in got]
        counts = {}  # deterministic instruction counts, where valgrind is installed (full runs)
        if shutil.which("valgrind") and not report.quick:
            counts = {n: _instructions(*side) for n, side in sides.items()}

    def figure(
        fid: str, what: str, side: str, ref: str, target: float | None, cpu: int = 0
    ) -> None:
        mine, theirs = [r[side][cpu] for r in done], [r[ref][cpu] for r in done]
        paired = statistics.median(a / b for a, b in zip(mine, theirs, strict=True))
        median = statistics.median
        without = "without the hook"
        report.add(Figure(fid, what, median(mine), without, median(theirs), target, "", paired))

    what = f"a process importing {HUNDRED} modules (the real stack's sizes), 1 patched, runtime"
    figure("P7-hundred", what, "hooked", "plain", 1.05)
    what = "the same, CPU time (user + system): less swayed by a loaded machine"
    figure("P7-hundred-cpu", what, "hooked", "plain", 1.05, cpu=1)
    what = "the same, no stat facts: the hook hashes the installed and patched file each start"
    figure("P7-hundred-hashed", what, "hashed", "plain", None)
    what = "the same with the --pth form (against that venv with its .pth moved aside)"
    figure("P7-hundred-pth", what, "pth", "pth-plain", 1.05)
    what = f"the worst case: {HUNDRED} modules of {TINY} bytes each, 1 patched (PYTHONPATH form)"
    figure("P7-hundred-tiny", what, "tiny-hooked", "tiny-plain", None)
    if counts:
        for fid, side, ref in (
            ("P7-hundred-instr", "hooked", "plain"),
            ("P7-hundred-hashed-instr", "hashed", "plain"),
            ("P7-hundred-pth-instr", "pth", "pth-plain"),
            ("P7-hundred-tiny-instr", "tiny-hooked", "tiny-plain"),
        ):
            what = f"{fid[: -len('-instr')]}, in instructions (callgrind; no noise)"
            mine, theirs = counts[side], counts[ref]
            report.add(Figure(fid, what, mine, "without the hook", theirs, unit="instr"))


def _instructions(cmd: list[str], env: dict[str, str], away: Path | None = None) -> float:
    """The instructions one run of ``cmd`` executes (valgrind's callgrind, PYTHONHASHSEED=0):
    the same every run, so a small difference shows where wall time on a VM swings more."""
    out = "--callgrind-out-file=/dev/null"
    valgrind = ["valgrind", "--tool=callgrind", out, *cmd]
    with _moved_away(away):
        proc = subprocess.run(
            valgrind, env={**env, "PYTHONHASHSEED": "0"}, capture_output=True, text=True, check=True
        )
    (line,) = [ln for ln in proc.stderr.splitlines() if "Collected :" in ln]
    return float(line.rsplit(":", 1)[1])


# compatkit's CLI with no file system on the allow-list: no stat facts recorded, as on tmpfs
NO_FACTS = (
    "import sys; from compatkit.runtime import statfacts; statfacts.SOUND = frozenset(); "
    "from compatkit.cli.entry import run; sys.exit(run())"
)


def _install(
    python: str, work: Path, env: dict[str, str], pth: bool = False, hashed: bool = False
) -> Path:
    """``runtime install bench`` into a new folder (``pth``: with the --pth form; ``hashed``:
    with no stat facts, so the hook hashes at every start)."""
    root = work / ("rt-pth" if pth else "rt-hashed" if hashed else "rt")
    cmd = [sys.executable, *(["-c", NO_FACTS] if hashed else ["-m", "compatkit"])]
    cmd += ["--python", python, "--patchset-dir"]
    cmd += [str(work / "ps"), "runtime", "install", "bench", "--dir", str(root)]
    subprocess.run(cmd + (["--pth"] if pth else []), check=True, capture_output=True, env=env)
    return root


@contextlib.contextmanager
def _moved_away(path: Path | None) -> Iterator[None]:
    """``path`` renamed aside for the block (the .pth: the same venv without the hook)."""
    if path is None:
        yield
        return
    aside = path.with_name(path.name + ".aside")
    path.rename(aside)
    try:
        yield
    finally:
        aside.rename(path)


def _wall_cpu(cmd: list[str], env: dict[str, str], away: Path | None = None) -> tuple[float, float]:
    """The wall and the user + system CPU seconds of one run of ``cmd`` (``away``: a file
    renamed aside meanwhile, outside the timing)."""
    import resource

    with _moved_away(away):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(cmd, env=env, check=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


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
        row = f.row()
        print(f"{f.id}: {f.ratio:.3f}× ({row[2]} vs {row[4]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
