"""Containment on every write: revert and recovery too, namespace packages, bytecode folders.

Each case runs the real CLI on a real venv and checks that nothing outside the target
distribution's own files changes, inside site-packages or out.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import PATCH_GREET, Demo, Venv, build_wheel, run_cli, write_patchset


def _tree(base: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(base)): p.read_bytes()
        for p in sorted(base.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def test_revert_force_never_writes_through_a_symlinked_package_folder(
    demo: Demo, tmp_path: Path
) -> None:
    """Before: with demo/ swapped for a symlink after apply, ``revert --force`` wrote the
    original bytes into the folder the symlink points to (the user's files)."""
    assert demo.run("apply", "demo-fix")[0] == 0
    outside = tmp_path / "users-folder"
    shutil.copytree(demo.venv.site / "demo", outside)
    (outside / "greet.py").write_bytes(b"# the user's own greet.py\n")
    shutil.rmtree(demo.venv.site / "demo")
    (demo.venv.site / "demo").symlink_to(outside)
    before = _tree(outside)
    code, _, err = demo.run("revert", "demo-fix", "--force")
    assert code == 1 and "is a symlink" in err and "nothing was changed" in err, err
    assert _tree(outside) == before


def test_a_tampered_state_cannot_make_revert_write_another_distributions_file(
    demo: Demo, make_venv: Callable[..., Venv], tmp_path: Path
) -> None:
    """compatkit's state file is input too: a revert it drives is checked like an apply."""
    other = build_wheel(tmp_path, "other", "1.0", {"other/keep.py": b"keep = 1\n"})
    demo.venv.install(other, "uv", "--link-mode", "copy")
    assert demo.run("apply", "demo-fix")[0] == 0
    state_path = demo.venv.site / "demo-1.0.dist-info" / "compatkit" / "demo-fix.json"
    state = json.loads(state_path.read_bytes())
    state["files"][0]["path"] = "other/keep.py"
    state["files"][0]["written_sha"] = None  # "the patchset deleted it": restore it, it says
    state["files"][0]["original_sha"] = None
    state["files"][0]["backup"] = None
    state_path.write_text(json.dumps(state))
    code, _, err = demo.run("revert", "demo-fix", "--force")
    assert code == 1, err
    assert "other/keep.py" in err and "nothing was changed" in err, err
    assert (demo.venv.site / "other" / "keep.py").read_bytes() == b"keep = 1\n"


NSPKG_A = {"nspkg/a/__init__.py": b"A = 1\n", "nspkg/a/m.py": b"x = 1\n"}
NSPKG_B = {"nspkg/b/__init__.py": b"B = 1\n"}


def _create(path: str) -> str:
    return (
        "Patch-Id: patch-1\nTitle: t\nSymptom: s\nCause: c\nFix: f\n"
        "Smoke-Test: smoke/test_patch_1.py\n---\n"
        f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+EVIL = 1\n"
    )


@pytest.mark.parametrize(
    ("path", "refused"),
    [
        ("nspkg/b/evil.py", "nspkg/b/evil.py is not inside a folder of nsa"),
        ("nspkg/__init__.py", "nspkg/__init__.py is not inside a folder of nsa"),
        ("nspkg/b/__pycache__/__init__.cpython-311.pyc", "not a file of nsa"),
        ("nspkg/a/new.py", None),
        ("nspkg/a/sub/new.py", None),  # a new folder inside one of its own
    ],
)
def test_namespace_packages_keep_to_their_own_portion(
    make_venv: Callable[..., Venv],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    path: str,
    refused: str | None,
) -> None:
    """Before: any new file under the shared top-level ``nspkg/`` was accepted, so a patchset
    for nsa could create files in nsb's portion or the namespace itself."""
    venv = make_venv()
    for name, files in (("nsa", NSPKG_A), ("nsb", NSPKG_B)):
        venv.install(build_wheel(tmp_path, name, "1.0", files), "uv", "--link-mode", "copy")
    patchsets = tmp_path / "ps"
    write_patchset(patchsets, name="ns-fix", patches={"0001.patch": _create(path)},
                   distribution="nsa")  # fmt: skip
    before = _tree(venv.site)
    args = ("--python", venv.python, "--patchset-dir", str(patchsets), "apply", "ns-fix")
    code, _, err = run_cli(capsys, *args)
    if refused is None:
        assert code == 0, err
        assert (venv.site / path).read_bytes() == b"EVIL = 1\n"
        return
    assert code == 1 and refused in err, err
    assert _tree(venv.site) == before


def test_a_symlinked_pycache_is_never_emptied(demo: Demo, tmp_path: Path) -> None:
    """Before: apply moved the bytecode files out of the folder a symlinked ``__pycache__``
    pointed to (outside site-packages) into the distribution's backups."""
    outside = tmp_path / "someone-elses-cache"
    outside.mkdir()
    (outside / "greet.cpython-311.pyc").write_bytes(b"\x00not yours")
    cache = demo.venv.site / "demo" / "__pycache__"
    shutil.rmtree(cache, ignore_errors=True)
    cache.symlink_to(outside)
    code, _, err = demo.run("apply", "demo-fix")
    assert code == 1 and "__pycache__ is a symlink" in err, err
    assert os.listdir(outside) == ["greet.cpython-311.pyc"]
    assert b"'hi '" not in (demo.venv.site / "demo" / "greet.py").read_bytes()


def test_the_patch_itself_may_still_create_files_in_a_new_folder_of_its_own(
    demo: Demo,
) -> None:
    patch = PATCH_GREET + _create("demo/extra/new.py").split("---\n", 1)[1]
    write_patchset(demo.patchsets, name="more", patches={"0001.patch": patch})
    code, _, err = demo.run("apply", "more")
    assert code == 0, err
    assert demo.run("revert", "more")[0] == 0
    assert not (demo.venv.site / "demo" / "extra").exists()
