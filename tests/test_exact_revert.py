"""Issue 38: revert gives back every byte apply changed, whatever the shape of the change.

Two shapes used to apply and then fail to verify or revert: an original of 0 bytes (an empty
``__init__.py`` that gains a line, an empty ``py.typed`` that is deleted: the backup archive was
written only when it held some bytes), and a file at the site-packages root that the
distribution owns and the patch deletes (revert and recovery judged ownership by the RECORD
as apply left it, where that row is gone). Each case: apply, verify, revert (and revert
--force), byte for byte, RECORD included; and a SIGKILL inside the revert rolled back.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Demo, Venv, build_wheel, compatkit_command, run_cli, write_patchset
from reliability import snapshot

HEAD = (
    "Patch-Id: patch-1\nTitle: t\nSymptom: s\nCause: c\nFix: f\n"
    "Smoke-Test: smoke/test_patch_1.py\n---\n"
)

CASES = {
    # name: (distribution, its files, the patch's diff)
    "empty-init-gains-a-line": (
        "edge",
        {"edge/__init__.py": b"", "edge/core.py": b"X = 1\n"},
        "--- a/edge/__init__.py\n+++ b/edge/__init__.py\n@@ -0,0 +1 @@\n+from edge.core import X\n",
    ),
    "empty-py-typed-deleted": (
        "edge",
        {"edge/__init__.py": b"X = 1\n", "edge/py.typed": b""},
        "diff --git a/edge/py.typed b/edge/py.typed\ndeleted file mode 100644\n",
    ),
    "root-module-deleted": (
        "rootmod",
        {"rootmod_compat.py": b"import sys\nPY2 = False\n"},
        "--- a/rootmod_compat.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-import sys\n-PY2 = False\n",
    ),
}


class Target:
    def __init__(self, venv: Venv, patchsets: Path, dist: str, capsys: pytest.CaptureFixture[str]):
        self.venv, self.patchsets, self.dist, self.capsys = venv, patchsets, dist, capsys

    def run(self, *args: str) -> tuple[int, str, str]:
        base = ("--python", self.venv.python, "--patchset-dir", str(self.patchsets))
        return run_cli(self.capsys, *base, *args)

    def snap(self) -> dict[str, bytes]:
        return snapshot(self.venv.site)


@pytest.fixture(params=sorted(CASES))
def target(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    make_venv: Callable[..., Venv],
    capsys: pytest.CaptureFixture[str],
) -> Target:
    dist, files, diff = CASES[request.param]
    wheel = build_wheel(tmp_path, dist, "1.0", files)
    venv = make_venv()
    venv.install(wheel, "uv", "--link-mode", "copy")
    patchsets = tmp_path / "patchsets"
    write_patchset(patchsets, name="fix", patches={"0001.patch": HEAD + diff}, distribution=dist)
    return Target(venv, patchsets, dist, capsys)


def test_apply_verify_revert_is_byte_exact(target: Target) -> None:
    before = target.snap()
    code, out, err = target.run("apply", "fix")
    assert code == 0, err
    assert target.snap() != before
    code, out, err = target.run("verify", "fix")
    assert code == 0, (out, err)
    code, out, err = target.run("revert", "fix")
    assert code == 0, err
    assert target.snap() == before  # the RECORD too, byte for byte


def test_revert_force_is_byte_exact(target: Target) -> None:
    before = target.snap()
    assert target.run("apply", "fix")[0] == 0
    code, _, err = target.run("revert", "--force", "fix")
    assert code == 0, err
    assert target.snap() == before


@pytest.mark.slow
def test_sigkill_at_every_step_of_the_revert_is_rolled_back(target: Target) -> None:
    """The recovery of a revert judges ownership by what apply recorded, as revert does:
    killed after the state file is gone but before the RECORD row is back, it still restores
    the deleted root module's absence (and the state) instead of refusing the journal."""
    import subprocess

    pristine = target.snap()
    assert target.run("apply", "fix")[0] == 0
    applied = target.snap()
    rolled_back = 0
    for step in range(1, 40):
        cmd = compatkit_command(target.venv, target.patchsets, "revert", "fix")
        proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(step))
        assert proc.returncode in (0, -signal.SIGKILL), proc.stderr
        code, _, err = target.run("status", "fix")  # the next command rolls it back
        assert code == 0, err
        now = target.snap()
        if now == pristine:  # killed after its commit point, or past its last step: done
            break
        assert now == applied, step
        rolled_back += 1
    assert rolled_back >= 5  # the journal's own steps, then each file, RECORD and state


def _env(step: int) -> dict[str, str]:
    import os

    return {**os.environ, "COMPATKIT_CRASH_AT": str(step)}


def test_a_later_patch_may_change_and_delete_a_file_an_earlier_one_created(demo: Demo) -> None:
    """Found by tests/test_roundtrip_property.py: ownership was judged per patch against the
    installed RECORD, so a series whose second patch edits (or deletes) the new file of its
    first was refused ("demo/new.py is not a file of demo")."""
    create = "--- /dev/null\n+++ b/demo/new.py\n@@ -0,0 +1 @@\n+A = 1\n"
    edit = "--- a/demo/new.py\n+++ b/demo/new.py\n@@ -1 +1,2 @@\n A = 1\n+B = 2\n"
    delete = "--- a/demo/new.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-A = 1\n-B = 2\n"
    for name, tail in (("edits", [edit]), ("deletes", [edit, delete])):
        patches = {f"{i:04d}.patch": HEAD.replace("patch-1", f"patch-{i}") + d
                   for i, d in enumerate([create, *tail], 1)}  # fmt: skip
        write_patchset(demo.patchsets, name=name, patches=patches)
        before = demo.venv.snapshot()
        code, _, err = demo.run("apply", name)
        assert code == 0, err
        new = demo.venv.site / "demo/new.py"
        assert (new.read_bytes() if new.exists() else None) == (
            b"A = 1\nB = 2\n" if name == "edits" else None
        )
        assert demo.run("verify", name)[0] == 0
        assert demo.run("revert", name)[0] == 0
        assert demo.venv.snapshot() == before
