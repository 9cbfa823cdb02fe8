"""G: growth with the environment (issue 36, item 4).

Synthetic environments of 10, 100 and 400 distributions (real wheels built by
tests/helpers/wheelkit.py, installed with uv into real venvs, compatkit installed in each as
users install it: a real wheel, its bytecode compiled) and one distribution of 15,000 files.
Built once under ``build/bench-growth/`` (ignored by git) and reused while their layout is
unchanged; compatkit itself is reinstalled into them on every run.

- ``G-status`` / ``G-verify``: ``status NAME`` and ``verify NAME`` of a one-file patchset
  targeting one distribution, in each environment, each in the same rounds as its venv's
  ``python -c pass``; ``G-status-400/10`` and ``G-verify-400/10``: compatkit's CPU time
  beyond the interpreter's start-up at 400 distributions against 10 (rounds paired): the
  cost must not grow with the environment. ``-tool`` rows: the same run from a tool venv
  with ``--python``.
- ``G-apply``: ``apply`` of a 3-file patch to a 15,000-file distribution against the same patch
  on a 100-file one (each round: apply timed, revert untimed).
- ``G-pristine`` / ``G-sbom``: ``pristine --all`` and ``sbom`` in each environment,
  with the physical floor timed in the same rounds (``sha256sum`` with ``xargs -P <cores>``
  over the same files for the pristine check; ``cat > /dev/null`` of every ``METADATA`` and
  ``RECORD`` for the SBOM, which reads metadata and hashes no file). Each row gives time per
  MiB (per distribution for the SBOM) for compatkit and for its floor; ``-slope`` rows: the
  time each added MiB (distribution) costs, which a fixed start-up cost does not blur.

``--quick`` (CI's ``nox -s bench_quick``): the same rows at 10, 20 and 40 distributions and a
2,000-file distribution, 1 round each, no targets, no plot. Full mode: 15 rounds, and
docs/growth.svg when matplotlib is importable (``nox -s bench`` installs it).
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from common import ROOT, Figure, Report, any_exit, cores, listed_files, rounds, timed

sys.path.insert(0, str(ROOT / "tests"))
from helpers.wheelkit import build_wheel

# The pristine check's command line (helper A moves it to `compatkit pristine`: change it here).
PRISTINE_ALL = ["pristine", "--all"]

CACHE = ROOT / "build" / "bench-growth"
LAYOUT = "1"  # bump when the environments below change: cached ones are rebuilt
SIZES = (10, 100, 400)
QUICK_SIZES = (10, 20, 40)  # --quick (CI): the same rows, small enough to build in seconds
MODULES = 4  # per distribution
MODULE_BYTES = 64 * 1024  # each module: 256 KiB a distribution, 100 MiB for 400
BIG_FILES, SMALL_FILES = 15_000, 100
QUICK_BIG_FILES = 2_000
PATCHED = 3  # files the apply patch changes

HEADER = (
    "Patch-Id: {id}\nTitle: growth bench\nSymptom: s\nCause: c\nFix: f\n"
    "Smoke-Test: smoke/test_growth.py\n---\n"
)


def _module(tag: str, size: int) -> bytes:
    """A module of about ``size`` bytes, unique to ``tag``, line ``i`` being ``v_i = i``."""
    lines, total, i = [], 0, 0
    while total < size:
        line = f"{tag}_{i} = {i}\n"
        lines.append(line)
        total += len(line)
        i += 1
    return "".join(lines).encode()


def _diff(package: str, files: int) -> str:
    """One changed line in each of ``files`` modules (line 5 of ``mod_i``)."""
    parts = []
    for i in range(files):
        path = f"{package}/mod_{i}.py"
        old = [f"{package}_{i}_{j} = {j}" for j in range(2, 9)]
        body = [f" {c}" for c in old[:3]] + [f"-{old[3]}", f"+{old[3]}  # patched"]
        body += [f" {c}" for c in old[4:]]
        parts.append(
            f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
            "@@ -3,7 +3,7 @@\n" + "\n".join(body) + "\n"
        )
    return "".join(parts)


def _patchset(where: Path, name: str, dist: str, package: str, files: int) -> None:
    """A patchset ``name`` changing ``files`` modules of ``dist`` (version 1.0)."""
    if where.exists():
        shutil.rmtree(where)
    (where / "patches").mkdir(parents=True)
    (where / "smoke").mkdir()
    (where / "smoke" / "test_growth.py").write_text("def test_x():\n    pass\n")
    header = HEADER.format(id=f"{name}-1")
    (where / "patches" / "p.patch").write_text(header + _diff(package, files))
    (where / "patchset.toml").write_text(
        f'[patchset]\nname = "{name}"\nversion = "1"\nsummary = "g"\n'
        f'series = ["patches/p.patch"]\n[target]\ndistribution = "{dist}"\n'
        'specifier = "==1.0"\n'
    )


def _uv_install(python: Path, *what: str) -> None:
    subprocess.run(
        ["uv", "pip", "install", "-q", "--python", str(python), "--link-mode", "copy", *what],
        check=True,
    )


def _venv(folder: Path, wheels: list[Path]) -> Path:
    """A venv at ``folder`` holding ``wheels`` (reused when built by this LAYOUT)."""
    stamp = folder / "growth-layout"
    python = folder / "bin" / "python"
    if stamp.is_file() and stamp.read_text() == LAYOUT:
        return python
    if folder.exists():
        shutil.rmtree(folder)
    subprocess.run(["uv", "venv", "-q", "-p", sys.executable, str(folder)], check=True)
    for start in range(0, len(wheels), 200):  # keep the command line short
        _uv_install(python, "--no-deps", *map(str, wheels[start : start + 200]))
    stamp.write_text(LAYOUT)
    return python


def _site(python: Path) -> Path:
    return next(python.parent.parent.glob("lib/python3*/site-packages"))


def environments(sizes: tuple[int, ...], big: int) -> tuple[dict[int, Path], dict[int, Path]]:
    """The venvs of ``sizes`` distributions and the two apply venvs (``big`` and
    :data:`SMALL_FILES` files), by size; compatkit freshly installed into each (a wheel of this
    tree, bytecode compiled)."""
    wheels = CACHE / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    made: list[Path] = []
    for i in range(max(sizes)):
        name = f"gdist-{i}"
        path = wheels / f"gdist_{i}-1.0-py3-none-any.whl"
        if not path.is_file():
            files = {
                f"gdist_{i}/mod_{j}.py": _module(f"gdist_{i}_{j}", MODULE_BYTES)
                for j in range(MODULES)
            }
            files[f"gdist_{i}/__init__.py"] = b""
            path = build_wheel(wheels, name, "1.0", files)
        made.append(path)
    pythons = {n: _venv(CACHE / f"env-{n}", made[:n]) for n in sizes}
    appliers = {}
    for n in (SMALL_FILES, big):
        folder = wheels / f"files-{n}"
        folder.mkdir(exist_ok=True)
        path = folder / "gapply-1.0-py3-none-any.whl"
        if not path.is_file():
            files = {f"gapply/mod_{j}.py": _module(f"gapply_{j}", 400) for j in range(n - 1)}
            files["gapply/__init__.py"] = b""
            path = build_wheel(folder, "gapply", "1.0", files)
        appliers[n] = _venv(CACHE / f"apply-{n}", [path])
    ck = CACHE / "compatkit-wheel"
    if ck.exists():
        shutil.rmtree(ck)
    subprocess.run(["uv", "build", "-q", "--wheel", "-o", str(ck), str(ROOT)], check=True)
    (wheel,) = ck.glob("*.whl")
    for python in [*pythons.values(), *appliers.values()]:
        _uv_install(python, "--reinstall-package", "compatkit", str(wheel))
        subprocess.run(
            [str(python), "-m", "compileall", "-q", str(_site(python))],
            check=False,
            stdout=subprocess.DEVNULL,
        )
    pss = CACHE / "patchsets"
    _patchset(pss / "growth", "growth", "gdist-0", "gdist_0", 1)
    _patchset(pss / "gapply", "gapply", "gapply", "gapply", PATCHED)
    return pythons, appliers


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _ck(python: Path, *args: str) -> list[str]:
    return [str(python.parent / "compatkit"), "--patchset-dir", str(CACHE / "patchsets"), *args]


def _quiet(cmd: list[str], env: dict[str, str]) -> None:
    """Run ``cmd``, whatever its exit code (a revert of what is not applied)."""
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run(report: Report) -> None:
    quick = report.quick
    runs = 1 if quick else 15
    sizes, big = (QUICK_SIZES, QUICK_BIG_FILES) if quick else (SIZES, BIG_FILES)
    pythons, appliers = environments(sizes, big)
    env = _env()
    for python in pythons.values():  # status and verify read an applied patchset
        _quiet(_ck(python, "revert", "growth"), env)
        subprocess.run(
            _ck(python, "apply", "growth"), check=True, env=env, stdout=subprocess.DEVNULL
        )
    _targeted(report, pythons, appliers[SMALL_FILES], env, runs)
    _apply(report, appliers, env, runs)
    curves = _bytes(report, pythons, env, runs)
    for python in pythons.values():
        _quiet(_ck(python, "revert", "growth"), env)
    if not quick:
        _plot(curves, report)


def _targeted(
    report: Report, pythons: dict[int, Path], tool: Path, env: dict[str, str], runs: int
) -> None:
    """G-status and G-verify: each size's command and its venv's ``python -c pass`` in the
    same rounds, each timed in wall and CPU time (user + system of the child).

    A bigger site-packages slows the interpreter's own start-up too (``site`` lists it; the
    import system lists it for every top-level import), so the growth rows compare
    compatkit's part: the command's CPU time minus its interpreter's start-up CPU time, per
    round (CPU time: on a machine shared with other jobs the wall time swings by tens of
    percent between rounds, the CPU time much less). ``-tool`` rows: the same from a separate
    tool venv with ``--python`` (compatkit's own environment then stays small: its
    entry-point scan, load/registry.py, does not grow)."""
    sizes = list(pythons)
    forms = {
        "": lambda p, what: _ck(p, what, "growth"),
        "-tool": lambda p, what: _ck(tool, "--python", str(p), what, "growth"),
    }
    for what in ("status", "verify"):
        for suffix, command in forms.items():
            actions: list[Callable[[], tuple[float, float]]] = []
            for p in pythons.values():
                actions.append(lambda p=p: _timed_cpu([str(p), "-c", "pass"], env))
                actions.append(lambda p=p, w=what, c=command: _timed_cpu(c(p, w), env))
            done = rounds(runs, *actions)
            wall = [[x[0] for x in r] for r in done]
            for i, n in enumerate(sizes):
                report.add(
                    Figure(
                        f"G-{what}{suffix}-{n}",
                        f"compatkit {what} growth{' (--python, tool venv)' * bool(suffix)}, "
                        f"{n} distributions",
                        statistics.median(r[2 * i + 1] for r in wall),
                        "python -c pass (same venv)",
                        statistics.median(r[2 * i] for r in wall),
                        paired=statistics.median(r[2 * i + 1] / r[2 * i] for r in wall),
                    )
                )
            last = 2 * (len(sizes) - 1)
            own = [(r[last + 1][1] - r[last][1], r[1][1] - r[0][1]) for r in done]
            report.add(
                Figure(
                    f"G-{what}{suffix}-{sizes[-1]}/{sizes[0]}",
                    f"compatkit {what}{' --python' * bool(suffix)}: its CPU time beyond the "
                    f"interpreter's start-up, {sizes[-1]} distributions against {sizes[0]} "
                    f"(wall, whole commands: {_ratio(wall, last + 1, 1):.2f}×; python -c "
                    f"pass alone: {_ratio(wall, last, 0):.2f}×)",
                    statistics.median(a for a, _ in own),
                    f"the same, {sizes[0]} distributions",
                    statistics.median(b for _, b in own),
                    None if report.quick else 1.1,  # targets: full mode's sizes
                    paired=statistics.median(a / b for a, b in own if b > 0),
                )
            )


def _timed_cpu(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """:func:`common.timed`'s wall time, and the child's CPU time (user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    elapsed = timed(cmd, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def _ratio(done: list[list[float]], top: int, bottom: int) -> float:
    return statistics.median(r[top] / r[bottom] for r in done)


def _apply(report: Report, appliers: dict[int, Path], env: dict[str, str], runs: int) -> None:
    """G-apply: apply (timed) then revert (untimed) of the 3-file patch, each size in turn.
    Beside the wall times, the CPU time (user + system) of the apply process: on a machine
    shared with other jobs it moves far less than the wall time."""

    def one(python: Path) -> Callable[[], tuple[float, float]]:
        def run() -> tuple[float, float]:
            os.sync()
            elapsed, cpu = _timed_cpu(_ck(python, "apply", "gapply"), env)
            subprocess.run(
                _ck(python, "revert", "gapply"), check=True, env=env, stdout=subprocess.DEVNULL
            )
            return elapsed, cpu

        return run

    for python in appliers.values():
        _quiet(_ck(python, "revert", "gapply"), env)
    big = max(appliers)
    done = rounds(runs, one(appliers[big]), one(appliers[SMALL_FILES]), warmup=1)
    big_cpu = statistics.median(r[0][1] for r in done)
    small_cpu = statistics.median(r[1][1] for r in done)
    report.add(
        Figure(
            "G-apply",
            f"apply of a {PATCHED}-file patch to a {big:,}-file distribution (CPU time: "
            f"{big_cpu * 1000:.0f} ms against {small_cpu * 1000:.0f} ms, "
            f"{statistics.median(r[0][1] / r[1][1] for r in done):.2f}×)",
            statistics.median(r[0][0] for r in done),
            f"the same patch, {SMALL_FILES}-file distribution",
            statistics.median(r[1][0] for r in done),
            None if report.quick else 1.5,
            paired=statistics.median(r[0][0] / r[1][0] for r in done),
        )
    )


class Curve:
    """One command's times at each size, beside its floor's."""

    def __init__(self, name: str, unit: str, floor: str) -> None:
        self.name, self.unit, self.floor = name, unit, floor
        self.points: list[tuple[int, float, float, float]] = []  # (dists, amount, ours, floor)


def _bytes(report: Report, pythons: dict[int, Path], env: dict[str, str], runs: int) -> list[Curve]:
    """G-pristine and G-sbom at each size, each in the same rounds as its floor."""
    n_cores = cores()
    pristine = Curve(" ".join(PRISTINE_ALL), "MiB", f"sha256sum, xargs -P {n_cores}")
    sbom = Curve("sbom", "distributions", "cat every METADATA and RECORD")
    for n, python in pythons.items():
        site = _site(python)
        files = listed_files(site)
        size = sum((site / f).stat().st_size for f in files) / 2**20
        with tempfile.TemporaryDirectory(prefix="ck-growth-") as tmp:
            lst = Path(tmp) / "files.lst"
            lst.write_text("\0".join(files))
            metas = Path(tmp) / "meta.lst"
            metas.write_text(
                "\0".join(
                    str(p.relative_to(site))
                    for info in sorted(site.glob("*.dist-info"))
                    for p in (info / "METADATA", info / "RECORD")
                )
            )
            sha = ["sh", "-c", f"xargs -0 -P {n_cores} -n 200 sha256sum < {lst} > /dev/null"]
            cat = ["sh", "-c", f"xargs -0 cat < {metas} > /dev/null"]
            ours_p, floor_p = _medians(
                runs, any_exit(_ck(python, *PRISTINE_ALL), env), any_exit(sha, env, site)
            )
            ours_s, floor_s = _medians(
                runs, any_exit(_ck(python, "sbom"), env), any_exit(cat, env, site)
            )
        dists = len(list(site.glob("*.dist-info")))
        pristine.points.append((n, size, ours_p, floor_p))
        sbom.points.append((n, dists, ours_s, floor_s))
        report.add(
            Figure(
                f"G-pristine-{n}",
                f"compatkit {' '.join(PRISTINE_ALL)}, {n} distributions ({len(files)} files, "
                f"{size:.0f} MiB): {_per(ours_p, size)} per MiB, floor {_per(floor_p, size)}",
                ours_p,
                f"sha256sum, xargs -P {n_cores}",
                floor_p,
            )
        )
        report.add(
            Figure(
                f"G-sbom-{n}",
                f"compatkit sbom, {dists} distributions: {_per(ours_s, dists)} per "
                f"distribution, floor {_per(floor_s, dists)}",
                ours_s,
                "cat every METADATA and RECORD",
                floor_s,
            )
        )
    report.add(_slope(pristine, "pristine"))
    report.add(_slope(sbom, "sbom"))
    return [pristine, sbom]


def _slope(curve: Curve, tag: str) -> Figure:
    """Linear growth: the time each added MiB (distribution) costs between the two largest
    sizes, beside the same between the two smallest (about equal when the cost is linear) and
    the floor's; the fixed cost (start-up) drops out of a difference."""
    (_, a0, o0, f0), (_, a1, o1, f1), (_, a2, o2, f2) = curve.points[-3:]
    unit = "MiB" if curve.unit == "MiB" else "distribution"
    return Figure(
        f"G-{tag}-slope",
        f"compatkit {curve.name}: each added {unit} from {a1:.0f} to {a2:.0f} (from {a0:.0f} "
        f"to {a1:.0f}: {_per(o1 - o0, a1 - a0)}; the floor's {_per(f1 - f0, a1 - a0)})",
        (o2 - o1) / (a2 - a1),
        f"{curve.floor}, each added {unit}",
        (f2 - f1) / (a2 - a1),
    )


def _medians(runs: int, *actions: Callable[[], float]) -> tuple[float, ...]:
    done = rounds(runs, *actions, warmup=1)
    return tuple(statistics.median(r[i] for r in done) for i in range(len(actions)))


def _per(seconds: float, amount: float) -> str:
    return f"{seconds * 1000 / amount:.2f} ms" if amount else "-"


def machine_short() -> str:
    return f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end"


def _plot(curves: list[Curve], report: Report) -> None:
    """docs/growth.svg: each curve's time against its amount, its floor beside it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("  G: matplotlib is not importable: no plot (pip install matplotlib)", flush=True)
        return
    fig, axes = plt.subplots(1, len(curves), figsize=(5 * len(curves), 4))
    for ax, curve in zip(axes, curves, strict=True):
        xs = [p[1] for p in curve.points]
        ax.plot(xs, [p[2] * 1000 for p in curve.points], "o-", label=f"compatkit {curve.name}")
        ax.plot(xs, [p[3] * 1000 for p in curve.points], "s--", label=f"floor: {curve.floor}")
        ax.set_xlabel(curve.unit)
        ax.set_ylabel("ms (median)")
        ax.set_title(curve.name)
        ax.legend()
    fig.suptitle(f"issue 36, growth (bench/growth.py): {machine_short()}", fontsize=9)
    fig.tight_layout()
    out = ROOT / "docs" / "growth.svg"
    fig.savefig(out, metadata={"Date": None})
    plt.close(fig)
    report.notes.append(f"G: the curves are plotted in [{out.name}]({out.name}).")
