"""Runtime mode fails closed: a module the table says must be patched is never imported
unpatched (docs/delivery.md, "Runtime mode"). Each case is tried both ways the hook gets in:
``DIR/sitecustomize.py`` on PYTHONPATH, and the ``.pth`` file in site-packages."""

from __future__ import annotations

import marshal
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_runtime import _env, reinstall_as_1_1, run  # as test_runtime's

import compatkit
from helpers import Demo

PROBE = "import demo.greet; print(demo.greet.hello('x'))"
FORMS = pytest.mark.parametrize("pth", [False, True], ids=["sitecustomize", "pth"])


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(tmp_path / "cache"))


def _install(demo: Demo, tmp_path: Path, pth: bool) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "rt"
    args = ["runtime", "install", "demo-fix", "--dir", str(root), *(["--pth"] if pth else [])]
    code, _, err = demo.run(*args)
    assert code == 0, err
    env = _env(tmp_path, **({} if pth else {"PYTHONPATH": str(root)}))
    assert run([demo.venv.python, "-c", PROBE], env).stdout.strip() == "hi x"
    return root, env


def _refused_start(demo: Demo, env: dict[str, str], *words: str) -> None:
    """The interpreter stops before the program runs, with one line naming what and why."""
    swallow = f"try:\n    {PROBE}\nexcept Exception:\n    print('swallowed')\n"
    proc = run([demo.venv.python, "-c", swallow], env)
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("compatkit runtime: refusing to start"), line
    for word in words:
        assert word in line, (word, line)


def _verify_fails(demo: Demo, root: Path, *words: str) -> None:
    code, _, err = demo.run("runtime", "verify", "--dir", str(root))
    assert code == 1, err
    for word in words:
        assert word in err, (word, err)


@FORMS
def test_a_damaged_or_missing_table_refuses_the_start(
    demo: Demo, tmp_path: Path, pth: bool
) -> None:
    root, env = _install(demo, tmp_path, pth)
    table = root / "_compatkit_runtime" / "table.marshal"
    good = table.read_bytes()
    table.write_bytes(good[: len(good) // 2])
    _refused_start(demo, env, "is missing or damaged", "demo.greet", "demo.util")
    _verify_fails(demo, root, "table.marshal is missing or damaged")
    doc = marshal.loads(good)
    del doc["modules"]["demo.greet"]  # well-formed, but it lost a module
    table.write_bytes(marshal.dumps(doc))
    _refused_start(demo, env, "lacks demo.greet, which it must patch")
    _verify_fails(demo, root, "table.marshal is missing or damaged")
    table.unlink()
    _refused_start(demo, env, "is missing or damaged")
    _verify_fails(demo, root, "table.marshal is missing or damaged")


@FORMS
def test_a_missing_hook_refuses_the_start(demo: Demo, tmp_path: Path, pth: bool) -> None:
    root, env = _install(demo, tmp_path, pth)
    (hook,) = root.glob("_compatkit_hook_*.py")
    hook.unlink()
    _refused_start(demo, env, "demo.greet", "must not be imported unpatched")
    _verify_fails(demo, root, f"{hook} is missing or not the hook compatkit wrote")


@FORMS
def test_a_missing_source_is_refused_at_import_and_not_as_an_import_error(
    demo: Demo, tmp_path: Path, pth: bool
) -> None:
    root, env = _install(demo, tmp_path, pth)
    (src,) = root.glob("_compatkit_runtime/src/*/demo/greet.py")
    src.unlink()
    swallow = f"try:\n    {PROBE}\nexcept ImportError:\n    print('swallowed')\n"
    proc = run([demo.venv.python, "-c", swallow], env)
    assert proc.returncode == 1 and "swallowed" not in proc.stdout
    assert "RuntimeRefusal: compatkit runtime: refusing to import demo.greet" in proc.stderr
    assert "patched source cannot be read" in proc.stderr
    _verify_fails(demo, root, "demo/greet.py: not the patched source compatkit wrote")


EARLY = "import demo.greet\n"


@FORMS
def test_an_early_import_refuses_the_start_and_fails_install_and_verify(
    demo: Demo, tmp_path: Path, pth: bool
) -> None:
    root, env = _install(demo, tmp_path, pth)
    early = demo.venv.site / "0-early.pth"  # sorts before compatkit's own .pth
    early.write_text(EARLY)
    _refused_start(demo, env, "demo.greet was imported before the runtime hook in")
    _verify_fails(demo, root, "demo.greet was imported before the runtime hook in")
    form = ["--pth"] if pth else []
    code, _, err = demo.run("runtime", "install", "demo-fix", "--dir", str(root), *form)
    assert code == 1 and "does not work, so it was removed again" in err, err
    assert not (root / "_compatkit_runtime").exists()
    assert not list(demo.venv.site.glob("00-compatkit-runtime.*"))
    assert not list(demo.venv.site.rglob("_compatkit_boot*"))
    code, _, err = demo.run("exec", "demo-fix", "--", demo.venv.python, "-c", PROBE)
    assert code == 1


def test_the_pth_form_loads_its_checks_from_bytecode_and_fails_closed_without_them(
    demo: Demo, tmp_path: Path
) -> None:
    root, env = _install(demo, tmp_path, pth=True)
    boot = demo.venv.site / "_compatkit_boot.py"
    (pyc,) = (demo.venv.site / "__pycache__").glob("_compatkit_boot.*.pyc")
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # Python writes no pyc itself: it uses install's
    proc = run([demo.venv.python, "-v", "-c", PROBE], env)
    assert proc.stdout.strip() == "hi x", proc.stderr
    assert f"code object from '{pyc}'" in proc.stderr  # not compiled at the start
    # only site-packages' boot module is run: not one earlier on sys.path, nor in the folder
    evil = tmp_path / "evil"
    evil.mkdir()
    for where in (evil, root):
        (where / "_compatkit_boot.py").write_text("print('EVIL')\n")
    proc = run([demo.venv.python, "-c", PROBE], {**env, "PYTHONPATH": str(evil)})
    assert proc.stdout.strip() == "hi x", proc.stdout + proc.stderr
    (root / "_compatkit_boot.py").unlink()
    # damaged or missing: the start stops with one line, never imports unpatched
    good = boot.read_bytes()
    boot.write_bytes(good.replace(b"def _compatkit_boot(", b"def _compatkit_boot(("))
    _refused_start(demo, env, f"{boot} cannot be loaded (SyntaxError", "demo.greet, demo.util")
    _verify_fails(demo, root, f"{boot} is missing or not the start-up module compatkit wrote")
    boot.unlink()
    _refused_start(demo, env, f"{boot} cannot be loaded (ImportError: no such file)")
    _verify_fails(demo, root, f"{boot} is missing or not the start-up module compatkit wrote")
    # install writes it again, never over a file of that name that is not compatkit's
    boot.write_text("mine = 1\n")
    code, _, err = demo.run("runtime", "install", "demo-fix", "--dir", str(root), "--pth")
    assert code == 1 and f"{boot} is not compatkit's" in err and boot.read_text() == "mine = 1\n"
    boot.unlink()
    assert demo.run("runtime", "install", "demo-fix", "--dir", str(root), "--pth")[0] == 0
    assert boot.read_bytes() == good and pyc.is_file()
    assert demo.run("runtime", "uninstall", "--dir", str(root))[0] == 0
    assert not boot.exists() and not pyc.exists()


def test_a_version_change_fails_verify(demo: Demo, tmp_path: Path) -> None:
    root, env = _install(demo, tmp_path, pth=False)
    reinstall_as_1_1(demo, tmp_path)
    proc = run([demo.venv.python, "-c", f"try:\n {PROBE}\nexcept ImportError: pass"], env)
    assert proc.returncode == 1 and "RuntimeRefusal" in proc.stderr
    _verify_fails(demo, root, "demo 1.0 is no longer installed")
    # exec --force: as apply --force, prepared for what is installed despite the mismatch
    code, _, err = demo.run("exec", "demo-fix", "--", "true")
    assert code == 1 and "needs demo==1.0, found demo 1.1" in err
    cmd = demo.command("exec", "--force", "demo-fix", "--", demo.venv.python, "-c", PROBE)
    proc = run(cmd, _env(tmp_path))
    assert proc.returncode == 0 and proc.stdout.strip() == "hi x", proc.stderr


def test_a_second_folder_patching_the_same_module_is_refused(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, _ = _install(demo, tmp_path, pth=True)
    second = tmp_path / "rt2"
    code, _, err = demo.run("runtime", "install", "demo-fix", "--dir", str(second))
    assert code == 1 and f"already patched by the active runtime folder {first}" in err, err
    assert not second.exists()
    assert demo.run("runtime", "uninstall", "--dir", str(first))[0] == 0
    first, _ = _install(demo, tmp_path, pth=False)
    monkeypatch.setenv("PYTHONPATH", str(first))
    code, _, err = demo.run("runtime", "install", "demo-fix", "--dir", str(second), "--pth")
    assert code == 1 and f"already patched by the active runtime folder {first}" in err, err
    monkeypatch.delenv("PYTHONPATH")
    # both started anyway (installed apart): the start is refused, neither silently dropped
    assert demo.run("runtime", "install", "demo-fix", "--dir", str(second))[0] == 0
    both = _env(tmp_path, PYTHONPATH=f"{second}{os.pathsep}{first}")
    _refused_start(demo, both, f"{second} ", f"{first} ", "both patch demo.greet, demo.util")
    monkeypatch.setenv("PYTHONPATH", str(first))  # each folder's verify sees the other
    _verify_fails(demo, second, "both patch demo.greet, demo.util")
    monkeypatch.setenv("PYTHONPATH", str(second))
    _verify_fails(demo, first, "both patch demo.greet, demo.util")
    monkeypatch.delenv("PYTHONPATH")
    # exec with a folder already active: the command's start is refused too
    cmd = demo.command("exec", "demo-fix", "--", demo.venv.python, "-c", PROBE)
    proc = run(cmd, _env(tmp_path, PYTHONPATH=str(first)))
    assert proc.returncode == 1 and "both patch demo.greet, demo.util" in proc.stderr


def _no_facts(table: bytes) -> object:
    doc = marshal.loads(table)
    for entry in doc["modules"].values():
        entry.pop("patched_facts")
    return doc


def test_exec_rebuilds_a_damaged_cache_folder(demo: Demo, tmp_path: Path) -> None:
    cmd = demo.command("exec", "demo-fix", "--", demo.venv.python, "-c", PROBE)
    assert run(cmd, _env(tmp_path)).stdout.strip() == "hi x"
    (root,) = (tmp_path / "cache" / "runtime").iterdir()
    table = root / "_compatkit_runtime" / "table.marshal"
    good = table.read_bytes()
    table.write_bytes(b"junk")
    (src,) = root.glob("_compatkit_runtime/src/*/demo/util.py")
    src.unlink()
    proc = run(cmd, _env(tmp_path))
    assert proc.returncode == 0 and proc.stdout.strip() == "hi x", proc.stderr
    # the same table, but for the stat facts of the source written again (a new inode)
    assert _no_facts(table.read_bytes()) == _no_facts(good) and src.is_file()
    # a cache folder the user does not own is refused, not used or removed
    os.chown(root, 12345, 12345)
    proc = run(cmd, _env(tmp_path))
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"compatkit: error: refusing the runtime folder: {root} is owned by another user "
        "(uid 12345); use a folder only you can write"
    ]


@FORMS
def test_a_folder_damaged_past_its_manifest_can_still_be_uninstalled(
    demo: Demo, tmp_path: Path, pth: bool
) -> None:
    root, env = _install(demo, tmp_path, pth)
    (root / "_compatkit_runtime" / "manifest.json").unlink()
    _verify_fails(demo, root, "its manifest is missing, but its start-up code is there")
    code, _, err = demo.run("runtime", "uninstall", "--dir", str(root))
    assert code == 0, err
    assert not list(root.glob("_compatkit_*")) and not (root / "sitecustomize.py").exists()
    assert not list(demo.venv.site.glob("00-compatkit-runtime.*"))  # found without a manifest
    proc = run([demo.venv.python, "-c", PROBE], env)
    assert proc.returncode == 0 and proc.stdout.strip() == "hello x", proc.stderr


def _compatkit_in(demo: Demo) -> Path:
    """compatkit installed in the demo venv itself, as a development install is: a ``.pth``
    naming its source folder and its dependencies' (this test run's), and the console script,
    on the venv's PATH."""
    src = Path(compatkit.__file__).parent.parent
    deps = [p for p in sys.path if p.endswith("site-packages")]
    (demo.venv.site / "zz-compatkit-dev.pth").write_text("\n".join([str(src), *deps]) + "\n")
    bin_dir = Path(demo.venv.python).parent
    script = bin_dir / "compatkit"
    script.write_text(
        f"#!{demo.venv.python}\nimport sys\nfrom compatkit.cli.entry import run\nsys.exit(run())\n"
    )
    script.chmod(0o755)
    return bin_dir


# each way a start is refused: in the boot (the hook missing), in the hook (its table
# damaged), and the .pth form's own line (its boot module missing)
DAMAGE = {
    "hook": lambda root, site: next(root.glob("_compatkit_hook_*.py")).unlink(),
    "table": lambda root, site: (root / "_compatkit_runtime" / "table.marshal").write_bytes(b"x"),
    "boot": lambda root, site: (site / "_compatkit_boot.py").unlink(),
}


SLOW = pytest.mark.slow  # each case ≈ 2 s: two of them in the fast subset


@pytest.mark.parametrize(
    ("pth", "damage"),
    [
        pytest.param(False, "hook", id="sitecustomize-hook", marks=SLOW),
        pytest.param(False, "table", id="sitecustomize-table"),
        pytest.param(True, "hook", id="pth-hook"),
        pytest.param(True, "table", id="pth-table", marks=SLOW),
        pytest.param(True, "boot", id="pth-boot", marks=SLOW),
    ],
)
def test_the_way_out_a_refused_start_names_works_from_that_interpreter(
    demo: Demo, tmp_path: Path, pth: bool, damage: str
) -> None:
    """compatkit installed in the very environment whose start is refused: the command the
    refusal names, run as written with that interpreter, removes the runtime, and then the
    interpreter starts (unpatched)."""
    root, env = _install(demo, tmp_path, pth)
    env["PATH"] = f"{_compatkit_in(demo)}{os.pathsep}{env['PATH']}"
    DAMAGE[damage](root, demo.venv.site)
    proc = run([demo.venv.python, "-c", PROBE], env)
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("compatkit runtime: refusing to start: "), line
    (way_out,) = re.findall(r"'(compatkit runtime uninstall --dir [^']+)'", line)
    proc = subprocess.run(way_out, shell=True, capture_output=True, text=True, env=env, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert f"removed the runtime hook in {root}" in proc.stdout
    assert "compatkit starts without the hook" in proc.stderr  # said, not silent
    proc = run([demo.venv.python, "-c", PROBE], env)
    assert proc.returncode == 0 and proc.stdout.strip() == "hello x", proc.stderr
    assert not list(demo.venv.site.glob("00-compatkit-runtime.*"))


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param("hook", id="pth-hook"),
        pytest.param("table", id="pth-table", marks=SLOW),
        pytest.param("boot", id="pth-boot", marks=SLOW),
    ],
)
def test_the_way_out_works_from_another_environment_with_python(
    demo: Demo, tmp_path: Path, damage: str
) -> None:
    """compatkit in another environment (this test run's), aimed at the refused interpreter
    with ``--python``: its probe of that interpreter must not start the refusing ``.pth``."""
    root, env = _install(demo, tmp_path, True)
    DAMAGE[damage](root, demo.venv.site)
    _refused_start(demo, env)
    cmd = [sys.executable, "-m", "compatkit", "--python", demo.venv.python]
    fresh = {**env, "COMPATKIT_CACHE_DIR": str(tmp_path / "fresh")}  # the probe runs anew
    proc = run([*cmd, "runtime", "uninstall", "--dir", str(root)], fresh)
    assert proc.returncode == 0, proc.stderr
    assert f"removed the runtime hook in {root}" in proc.stdout
    assert not list(demo.venv.site.glob("00-compatkit-runtime.*"))
    proc = run([demo.venv.python, "-c", PROBE], env)
    assert proc.returncode == 0 and proc.stdout.strip() == "hello x", proc.stderr
