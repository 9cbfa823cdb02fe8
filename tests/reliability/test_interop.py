"""compatkit next to the real tools: pip, uv's hardlinked cache, bytecode caches, a read-only
site-packages, a full disk."""

from __future__ import annotations

import hashlib
import resource
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import (
    DEMO_FILES,
    UV,
    Demo,
    Venv,
    build_wheel,
    can_unshare,
    compatkit_command,
    write_patchset,
)


def cli(venv: Venv, patchsets: Path, *args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    """compatkit in a child process (so rlimits and namespaces stay out of pytest)."""
    cmd = compatkit_command(venv, patchsets, *args)
    return subprocess.run(cmd, capture_output=True, text=True, **kw)  # type: ignore[call-overload,no-any-return]


def fresh_import(venv: Venv, expr: str) -> str:
    return subprocess.run(
        [venv.python, "-c", f"import demo.greet; print({expr})"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


@pytest.mark.parametrize("mode", ["timestamp", "checked-hash", "unchecked-hash"])
def test_bytecode_picks_up_apply_and_revert(demo: Demo, mode: str) -> None:
    subprocess.run(
        [
            demo.venv.python,
            "-m",
            "compileall",
            "-q",
            "--invalidation-mode",
            mode,
            str(demo.venv.site / "demo"),
        ],
        check=True,
    )
    assert fresh_import(demo.venv, "demo.greet.hello('x')") == "hello x"
    assert demo.run("apply", "demo-fix")[0] == 0
    assert fresh_import(demo.venv, "demo.greet.hello('x')") == "hi x"
    assert demo.run("revert", "demo-fix")[0] == 0
    assert fresh_import(demo.venv, "demo.greet.hello('x')") == "hello x"
    pyc = next((demo.venv.site / "demo/__pycache__").glob("greet.*.pyc"))
    flags = int.from_bytes(pyc.read_bytes()[4:8], "little")
    assert flags == {"timestamp": 0, "checked-hash": 3, "unchecked-hash": 1}[mode]


@pytest.mark.skipif(UV is None, reason="needs uv")
def test_uv_hardlinked_cache_is_untouched(
    tmp_path: Path, make_venv: Callable[..., Venv], capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = build_wheel(tmp_path, "demo", "1.0", DEMO_FILES)
    cache = tmp_path / "uv-cache"
    venv = make_venv()
    venv.install(wheel, "uv", "--link-mode", "hardlink", "--cache-dir", str(cache))
    installed = venv.site / "demo/greet.py"
    assert installed.stat().st_nlink > 1, "uv did not hardlink"
    cached = [p for p in cache.rglob("greet.py") if p.stat().st_ino == installed.stat().st_ino]
    assert cached
    digest = hashlib.sha256(cached[0].read_bytes()).hexdigest()
    patchsets = tmp_path / "ps"
    write_patchset(patchsets)
    assert cli(venv, patchsets, "apply", "demo-fix").returncode == 0
    assert "'hi '" in installed.read_text()
    assert hashlib.sha256(cached[0].read_bytes()).hexdigest() == digest
    assert cli(venv, patchsets, "revert", "demo-fix").returncode == 0
    assert hashlib.sha256(cached[0].read_bytes()).hexdigest() == digest


@pytest.fixture
def pip_demo(tmp_path: Path, make_venv: Callable[..., Venv]) -> tuple[Venv, Path, Path]:
    venv = make_venv(with_pip=True)
    wheel = build_wheel(tmp_path, "demo", "1.0", DEMO_FILES)
    venv.install(wheel, "pip")
    patchsets = tmp_path / "ps"
    write_patchset(patchsets)
    return venv, patchsets, wheel


@pytest.mark.slow
def test_pip_uninstall_after_apply_leaves_nothing(pip_demo: tuple[Venv, Path, Path]) -> None:
    venv, patchsets, _ = pip_demo
    before = set(venv.snapshot())
    assert cli(venv, patchsets, "apply", "demo-fix").returncode == 0
    fresh_import(venv, "1")  # regenerate bytecode, as a real user would
    subprocess.run([venv.python, "-m", "pip", "uninstall", "-y", "-q", "demo"], check=True)
    left = [p for p in venv.site.rglob("*") if "demo" in p.name.lower()]
    assert left == []
    assert set(venv.snapshot()) == {p for p in before if not p.startswith("demo")}


@pytest.mark.slow
def test_pip_force_reinstall_is_detected_and_reapplied(pip_demo: tuple[Venv, Path, Path]) -> None:
    venv, patchsets, wheel = pip_demo
    assert cli(venv, patchsets, "apply", "demo-fix").returncode == 0
    subprocess.run(
        [venv.python, "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps", str(wheel)],
        check=True,
    )
    proc = cli(venv, patchsets, "verify", "demo-fix")
    assert proc.returncode == 1
    assert "reinstall removed the patches" in proc.stderr
    assert cli(venv, patchsets, "apply", "demo-fix").returncode == 0
    assert cli(venv, patchsets, "verify", "demo-fix").returncode == 0


@pytest.mark.slow
def test_revert_matches_pip_show_files(pip_demo: tuple[Venv, Path, Path]) -> None:
    venv, patchsets, _ = pip_demo

    def show() -> str:
        return subprocess.run(
            [venv.python, "-m", "pip", "show", "-f", "demo"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    original = show()
    assert cli(venv, patchsets, "apply", "demo-fix").returncode == 0
    assert "compatkit/demo-fix.json" in show()
    assert cli(venv, patchsets, "revert", "demo-fix").returncode == 0
    assert show() == original


@pytest.mark.skipif(not can_unshare(), reason="needs root and mount namespaces")
def test_read_only_site_packages(demo: Demo) -> None:
    site = str(demo.venv.site)
    before = demo.venv.snapshot()
    script = f'mount --bind {site} {site} && mount -o remount,ro,bind {site} && exec "$@"'
    cmd = [
        "unshare",
        "-m",
        "sh",
        "-c",
        script,
        "sh",
        *demo.command("apply", "demo-fix"),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert "Read-only file system" in proc.stderr and "nothing was changed" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert demo.venv.snapshot() == before


def test_full_disk_rolls_back(demo: Demo) -> None:
    big = "x" * 6000
    text = (
        (demo.patchsets / "demo-fix/patches/0002.patch")
        .read_text()
        .replace("+line20 = 200", f"+line20 = 200  # {big}")
    )
    (demo.patchsets / "demo-fix/patches/0002.patch").write_text(text)
    (demo.patchsets / "demo-fix/smoke/test_patch_2.py").write_text("")
    before = demo.venv.snapshot()

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    proc = cli(demo.venv, demo.patchsets, "apply", "demo-fix", preexec_fn=limit)
    assert proc.returncode == 1, proc.stderr
    assert "File too large" in proc.stderr and "nothing was changed" in proc.stderr
    assert demo.venv.snapshot() == before
    assert not list(demo.venv.site.rglob("*compatkit-journal*"))
    assert not list(demo.venv.site.rglob("*.compatkit-tmp"))


@pytest.mark.slow
def test_revert_restores_pip_record_byte_for_byte(pip_demo: tuple[Venv, Path, Path]) -> None:
    """pip lists bytecode in RECORD; apply drops those rows, revert puts them back in place."""
    venv, patchsets, _ = pip_demo
    record = next(venv.site.glob("demo-1.0.dist-info")) / "RECORD"
    original = record.read_bytes()
    assert b"__pycache__/greet." in original
    before = {p: p.read_bytes() for p in venv.site.rglob("*") if p.is_file()}
    assert cli(venv, patchsets, "apply", "demo-fix").returncode == 0
    assert b"__pycache__/greet." not in record.read_bytes()
    assert cli(venv, patchsets, "revert", "demo-fix").returncode == 0
    assert record.read_bytes() == original
    assert {p: p.read_bytes() for p in venv.site.rglob("*") if p.is_file()} == before
