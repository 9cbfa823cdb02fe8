"""Start-up on every path (benchmarks P1 and P5): requirements decided in the target's own
interpreter and from a tool venv with ``--python``, with no json where it is not needed
(hashlib is: every command hashes its patchsets' files, issue 47); a warm apply and revert
that import nothing heavy beyond what a transaction needs."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from test_startup import HEAVY, RUN, _env, pythonpath

from helpers import DEMO_FILES, Demo, Venv, build_wheel, write_patchset

# Also off the path where nothing is hashed, no state is read and no JSON is printed.
WATCHED = (*HEAVY, "json")


def test_requirements_met_or_not_on_every_path(
    tmp_path: Path, make_venv: Callable[..., Venv]
) -> None:
    """Benchmark P1 on every path: status and explain word a ``>=X,<Y`` requirement met,
    unmet or not installed alike in the target's own interpreter and from a separate tool venv
    with ``--python``, and import nothing heavy for it."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    target_venv, tool_venv = make_venv(), make_venv()
    target_venv.install(build_wheel(wheels, "demo", "1.0", DEMO_FILES))
    patchsets = tmp_path / "patchsets"
    write_patchset(patchsets, requires=["otherlib>=2,<3", "demo>=1.0"])
    write_patchset(patchsets, "demo-marker", requires=["otherlib>=2,<3; python_version>'3'"])
    path = pythonpath(tmp_path)  # compatkit's dependency, as a tool venv has it
    env = {**_env(), "PYTHONPATH": path, "COMPATKIT_CACHE_DIR": str(tmp_path / "cache")}

    def run(python: str, *args: str) -> tuple[str, list[str]]:
        proc = subprocess.run(
            [python, "-c", f"HEAVY = {WATCHED!r}\n{RUN}", *args, "--patchset-dir", str(patchsets)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
        )
        loaded = [line for line in proc.stderr.splitlines() if line.startswith("LOADED")]
        assert proc.returncode == 0 and loaded, proc.stdout + proc.stderr
        return proc.stdout, loaded[-1].split()[1:]

    via_tool = [tool_venv.python, "--python", target_venv.python]
    run(*via_tool, "status", "demo-fix")  # fills the probe and TOML caches
    run(target_venv.python, "status", "demo-fix")
    for otherlib, expect in (
        (None, "needs otherlib<3,>=2, which is not installed"),
        ("1.0", "needs otherlib<3,>=2, found otherlib 1.0"),
        ("2.5", "applies cleanly"),
    ):
        if otherlib is not None:
            (wheels / otherlib).mkdir()
            wheel = build_wheel(
                wheels / otherlib, "otherlib", otherlib, {"otherlib/__init__.py": b""}
            )
            target_venv.install(wheel)
        for how in ([target_venv.python], via_tool):
            for args in (["status", "demo-fix"], ["explain", "demo-fix:patch-1"]):
                out, loaded = run(*how, *args)
                assert expect in out, (otherlib, how, args, out)
                heavy = sorted(loaded)
                assert heavy == [], f"{otherlib}: compatkit {' '.join(args)} imported {heavy}"
        out, _ = run(target_venv.python, "status", "demo-marker")
        assert "demo-marker" in out, out


def test_apply_and_revert_stay_off_heavy_imports(demo: Demo, tmp_path: Path) -> None:
    """Benchmark P5: a warm apply and revert import only what a transaction needs (and no
    unidiff: compatkit reads diffs with its own parser; apply not revert's module either)."""
    ps = str(demo.patchsets)
    env = {**_env(), "PYTHONPATH": pythonpath(tmp_path)}
    env["COMPATKIT_CACHE_DIR"] = str(tmp_path / "cache")
    allowed = ("ctypes", "fcntl")  # syncfs, the lock
    for round in range(2):
        for args in (["apply", "demo-fix"], ["revert", "demo-fix"]):
            # textwrap: the tables' wrap (apply gets it through packaging's logging)
            # typing: apply gets it through packaging; revert needs none (CONTRIBUTING.md)
            watch: tuple[str, ...] = (*HEAVY, "compatkit.ops.revert")
            watch = watch if args[0] == "apply" else (*HEAVY, "textwrap", "typing")
            proc = subprocess.run(
                [demo.venv.python, "-c", f"HEAVY = {watch!r}\n{RUN}", *args, "--patchset-dir", ps],
                cwd=tmp_path, env=env, capture_output=True, text=True,
            )  # fmt: skip
            assert proc.returncode == 0, proc.stdout + proc.stderr
            loaded = proc.stderr.splitlines()[-1].split()[1:]
            heavy = [m for m in loaded if not m.startswith(allowed)]
            if round == 0 and args[0] == "apply":  # cold: the TOML cache is filled
                assert not [m for m in heavy if not m.startswith(("tomllib", "tomli", "typing"))], (
                    heavy
                )
            else:
                assert heavy == [], f"round {round}: compatkit {args[0]} imported {heavy}"


def test_the_console_script_collects_only_once_its_modules_are_loaded(
    demo: Demo, tmp_path: Path
) -> None:
    """Benchmark P5: the console script imports with the cyclic collector off, then freezes
    what the imports made and turns the collector on for the command's work; main() called
    in-process leaves the caller's collector as it was."""
    child = (
        "import gc, sys\n"
        "from compatkit.cli.entry import run\n"
        "sys.argv[0] = 'compatkit'\n"
        "code = run()\n"
        "print('GC', gc.isenabled(), gc.get_freeze_count() > 0, file=sys.stderr)\n"
        "from compatkit.cli.main import main\n"
        "gc.unfreeze()\n"
        "code = code or main(sys.argv[1:])\n"
        "print('GC', gc.isenabled(), gc.get_freeze_count() > 0, file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    env = {**_env(), "PYTHONPATH": pythonpath(tmp_path)}
    env["COMPATKIT_CACHE_DIR"] = str(tmp_path / "cache")
    for command in ("apply", "revert"):
        proc = subprocess.run(
            [demo.venv.python, "-c", child, "--patchset-dir", str(demo.patchsets), command,
             "demo-fix"],
            cwd=tmp_path, env=env, capture_output=True, text=True,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
        marks = [line for line in proc.stderr.splitlines() if line.startswith("GC ")]
        assert marks == ["GC True True", "GC True False"], proc.stderr
