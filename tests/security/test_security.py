"""Containment: a patch touches only its distribution's files, inside site-packages."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from compatkit.errors import CompatkitError
from compatkit.model.paths import check_relpath
from helpers import DEMO_FILES, Demo, build_wheel, write_patchset


def _patch(path_a: str, path_b: str, body: str = "@@ -0,0 +1 @@\n+evil = 1\n") -> str:
    return (
        f"Patch-Id: patch-1\nTitle: t\nSymptom: s\nCause: c\nFix: f\n"
        f"Smoke-Test: smoke/test_patch_1.py\n---\n--- {path_a}\n+++ {path_b}\n{body}"
    )


def _refused(demo: Demo, text: str, expected: str) -> None:
    write_patchset(demo.patchsets, name="hostile", patches={"0001.patch": text})
    before = demo.venv.snapshot()
    code, _, err = demo.run("apply", "hostile", "--force")
    assert code == 1, err
    assert expected in err
    assert demo.venv.snapshot() == before
    assert not (demo.venv.site.parent / "evil.py").exists()


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("/dev/null", "b/../evil.py", "contains '..'"),
        ("/dev/null", "b/demo/../../evil.py", "contains '..'"),
        ("/dev/null", "/tmp/compatkit-evil.py", "it is absolute"),
        ("/dev/null", "b/demo-1.0.dist-info/x.py", "points into package metadata"),
        ("/dev/null", "b/newtop/x.py", "outside demo's packages"),
    ],
)
def test_paths_outside_are_refused(demo: Demo, a: str, b: str, expected: str) -> None:
    _refused(demo, _patch(a, b), expected)


def test_symlink_inside_the_package_pointing_out(demo: Demo, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, demo.venv.site / "demo" / "link")
    _refused(demo, _patch("/dev/null", "b/demo/link/x.py"), "is a symlink")
    assert not any(outside.iterdir())


def test_file_not_in_record_is_refused(demo: Demo) -> None:
    stray = demo.venv.site / "demo" / "stray.py"
    stray.write_text("x = 1\n")
    _refused(
        demo,
        _patch("a/demo/stray.py", "b/demo/stray.py", "@@ -1 +1 @@\n-x = 1\n+x = 2\n"),
        "demo/stray.py is not a file of demo",
    )


def test_another_distributions_file_is_refused(demo: Demo, tmp_path: Path) -> None:
    other = build_wheel(tmp_path / "wheels", "other", "1.0", {"other/mod.py": b"x = 1\n"})
    demo.venv.install(other, "uv", "--link-mode", "copy")
    _refused(
        demo,
        _patch("a/other/mod.py", "b/other/mod.py", "@@ -1 +1 @@\n-x = 1\n+x = 2\n"),
        "other/mod.py is not a file of demo",
    )


def test_binary_patch_is_refused(demo: Demo) -> None:
    text = (
        "Patch-Id: patch-1\n---\ndiff --git a/demo/x.bin b/demo/x.bin\n"
        "Binary files a/demo/x.bin and b/demo/x.bin differ\n"
    )
    write_patchset(demo.patchsets, name="binary", patches={"0001.patch": text})
    code, _, err = demo.run("apply", "binary")
    assert code == 1 and "binary patches are not supported" in err


@pytest.mark.parametrize("bad", ["", "a\x00b", "a\\b", "C:/x", "a//b", "./a", "a/\nb"])
def test_check_relpath_refuses(bad: str) -> None:
    with pytest.raises(CompatkitError):
        check_relpath(bad)


def test_symlinked_file_inside_the_package_pointing_out(demo: Demo, tmp_path: Path) -> None:
    """A file the distribution owns, replaced by a symlink to a file outside: never written."""
    outside = tmp_path / "outside.py"
    greet = demo.venv.site / "demo" / "greet.py"
    outside.write_bytes(greet.read_bytes())  # same bytes, so even the RECORD hash matches
    greet.unlink()
    os.symlink(outside, greet)
    before = demo.venv.snapshot()
    for extra in ((), ("--force",)):
        code, _, err = demo.run("apply", "demo-fix", *extra)
        assert code == 1 and "is a symlink" in err, err
        assert demo.venv.snapshot() == before
    assert outside.read_bytes() == DEMO_FILES["demo/greet.py"]


def test_revert_never_writes_through_a_symlink(demo: Demo, tmp_path: Path) -> None:
    """A patched file swapped for a symlink after apply: revert --force replaces the link."""
    assert demo.run("apply", "demo-fix")[0] == 0
    outside = tmp_path / "outside.py"
    outside.write_bytes(b"precious = 1\n")
    greet = demo.venv.site / "demo" / "greet.py"
    greet.unlink()
    os.symlink(outside, greet)
    code, _, err = demo.run("revert", "demo-fix")
    assert code == 1 and "changed since compatkit wrote it" in err
    assert demo.run("revert", "demo-fix", "--force")[0] == 0
    assert outside.read_bytes() == b"precious = 1\n"
    assert not greet.is_symlink() and greet.read_bytes() == DEMO_FILES["demo/greet.py"]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (b"b/demo/\x00evil.py", b"NUL"),
        (b"b/demo/\xff\xfeevil.py", b"control or undecodable character"),
        (b"b/demo/\x1b[2Jevil.py", b"control or undecodable character"),
        (b"b/demo/" + b"x" * 300 + b".py", b"File name too long"),
        (b"b/demo/greet.py/inner.py", b"is not a directory"),
        (b"b/demo", b"is not a regular file"),
    ],
)
def test_hostile_names_through_the_whole_cli(demo: Demo, path: bytes, expected: bytes) -> None:
    """A real ``python -m compatkit`` process: exit 1, one clean stderr line, nothing changed."""
    text = _patch("/dev/null", "PATH").encode().replace(b"PATH", path)
    root = write_patchset(demo.patchsets, name="hostile", patches={"0001.patch": ""})
    (root / "patches" / "0001.patch").write_bytes(text)
    before = demo.venv.snapshot()
    cmd = [sys.executable, "-m", "compatkit", "--python", demo.venv.python]
    cmd += ["--patchset-dir", str(demo.patchsets), "apply", "hostile"]
    proc = subprocess.run(cmd, capture_output=True)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0].startswith(b"compatkit: error: ") and expected in proc.stderr
    assert all(line.startswith(b"  - ") for line in lines[1:])
    assert b"\x1b" not in proc.stderr and b"\x00" not in proc.stderr
    assert b"Traceback" not in proc.stderr
    assert demo.venv.snapshot() == before
    for extra in ("--dry-run", "--force"):
        code, _, err = demo.run("apply", "hostile", extra)
        assert code == 1 and expected.decode() in err and "Traceback" not in err
        assert demo.venv.snapshot() == before
