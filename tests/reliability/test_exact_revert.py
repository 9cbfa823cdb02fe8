"""Issue 38: revert gives back every byte apply changed, whatever the shape of the change.

Two shapes used to apply and then fail to verify or revert: an original of 0 bytes (an empty
``__init__.py`` that gains a line, an empty ``py.typed`` that is deleted: the backup archive was
written only when it held some bytes), and a file at the site-packages root that the
distribution owns and the patch deletes (revert and recovery judged ownership by the RECORD
as apply left it, where that row is gone). Each case: apply, verify, revert (and revert
--force), byte for byte, RECORD included; and a SIGKILL inside the revert rolled back.
"""

from __future__ import annotations

import os
import signal
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import Demo, Venv, build_wheel, compatkit_command, run_cli, write_patchset
from helpers.reliability import snapshot

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
    """Found by tests/reliability/test_roundtrip_property.py: ownership was judged per patch against
    the installed RECORD, so a series whose second patch edits (or deletes) the new file of
    its first was refused ("demo/new.py is not a file of demo")."""
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


# A file the series deletes comes back with its permission bits, not 0644: apply keeps each
# one in its state (``FileState.mode``). A file it modifies keeps its mode through apply and
# revert; a file it creates is 0644.
MODED = {
    "moded/__init__.py": (b"X = 1\n", 0o755),  # modified
    "moded/gone_ro.py": (b"RO = 1\n", 0o444),  # deleted
    "moded/gone_x.py": (b"#!/bin/sh\n", 0o755),  # deleted
    "moded_tool.py": (b"TOOL = 1\n", 0o444),  # deleted, at the site-packages root
}
MODED_DIFF = (
    "--- a/moded/__init__.py\n+++ b/moded/__init__.py\n@@ -1 +1,2 @@\n X = 1\n+Y = 2\n"
    "--- a/moded/gone_ro.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-RO = 1\n"
    "--- a/moded/gone_x.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-#!/bin/sh\n"
    "--- a/moded_tool.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-TOOL = 1\n"
    "--- /dev/null\n+++ b/moded/new.py\n@@ -0,0 +1 @@\n+NEW = 1\n"
)


class Moded(Target):
    def snap_modes(self) -> dict[str, tuple[bytes, int]]:
        """Every file below site-packages (no bytecode): its bytes and permission bits."""
        site = self.venv.site
        return {
            rel: (data, stat.S_IMODE((site / rel).stat().st_mode))
            for rel, data in snapshot(site).items()
        }


@pytest.fixture
def moded(
    tmp_path: Path, make_venv: Callable[..., Venv], capsys: pytest.CaptureFixture[str]
) -> Moded:
    wheel = build_wheel(tmp_path, "moded", "1.0", {p: d for p, (d, _) in MODED.items()})
    venv = make_venv()
    venv.install(wheel, "uv", "--link-mode", "copy")  # copies: a chmod reaches no cache
    for rel, (_, mode) in MODED.items():
        os.chmod(venv.site / rel, mode)
    patchsets = tmp_path / "patchsets"
    write_patchset(
        patchsets, name="fix", patches={"0001.patch": HEAD + MODED_DIFF}, distribution="moded"
    )
    return Moded(venv, patchsets, "moded", capsys)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("force", [False, True], ids=["revert", "revert --force"])
def test_deleted_files_come_back_with_their_modes(moded: Moded, force: bool) -> None:
    site = moded.venv.site
    before = moded.snap_modes()
    code, _, err = moded.run("apply", "fix")
    assert code == 0, err
    assert not (site / "moded/gone_ro.py").exists() and not (site / "moded_tool.py").exists()
    assert _mode(site / "moded/__init__.py") == 0o755  # a modified file keeps its mode
    assert _mode(site / "moded/new.py") == 0o644  # a created file: 0644
    assert moded.run("verify", "fix")[0] == 0
    code, _, err = moded.run("revert", *(["--force"] if force else []), "fix")
    assert code == 0, err
    assert moded.snap_modes() == before  # 0444 and 0755, bytes and RECORD too


@pytest.mark.slow
def test_a_sigkilled_apply_or_revert_of_deleted_files_keeps_their_modes(moded: Moded) -> None:
    """Killed at each write step in turn, then rolled back by the next command: the tree is
    as before the command, modes included, until a kill comes after the commit point (or
    none comes) and the command's result stands: the deleted files are back 0444 and 0755."""
    import subprocess

    pristine = moded.snap_modes()
    for command in ("apply", "revert"):
        start = moded.snap_modes()
        rolled_back = 0
        for step in range(1, 60):
            cmd = compatkit_command(moded.venv, moded.patchsets, command, "fix")
            proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(step))
            assert proc.returncode in (0, -signal.SIGKILL), proc.stderr
            code, _, err = moded.run("status", "fix")  # the next command rolls it back
            assert code == 0, err
            now = moded.snap_modes()
            if now != start:
                break
            rolled_back += 1
        assert rolled_back >= 5, command  # the journal's own steps, then each file
        if command == "apply":
            assert "moded/gone_x.py" not in now and _mode(moded.venv.site / "moded/new.py") == 0o644
        else:
            assert now == pristine


def test_a_reapply_of_an_edited_patchset_keeps_the_deleted_files_modes(moded: Moded) -> None:
    """A re-apply plans the old version's revert and the new one's apply in one overlay: the
    files both delete are never on disk in between, so their modes come from the old state."""
    import json

    site = moded.venv.site
    before = moded.snap_modes()
    assert moded.run("apply", "fix")[0] == 0
    edited = HEAD + MODED_DIFF.replace("+Y = 2", "+Y = 3")
    write_patchset(
        moded.patchsets, name="fix", patches={"0001.patch": edited}, distribution="moded"
    )
    code, _, err = moded.run("apply", "fix")
    assert code == 0, err
    assert (site / "moded/__init__.py").read_bytes() == b"X = 1\nY = 3\n"
    state = json.loads((site / "moded-1.0.dist-info/compatkit/fix.json").read_bytes())
    assert {f["path"]: f["mode"] for f in state["files"] if f["written_sha"] is None} == {
        "moded/gone_ro.py": 0o444,
        "moded/gone_x.py": 0o755,
        "moded_tool.py": 0o444,
    }
    code, _, err = moded.run("revert", "fix")
    assert code == 0, err
    assert moded.snap_modes() == before


def test_a_state_without_modes_reverts_as_before(moded: Moded) -> None:
    """A state written before modes were kept: revert still works, and re-creates 0644."""
    import json

    site = moded.venv.site
    assert moded.run("apply", "fix")[0] == 0
    state_path = site / "moded-1.0.dist-info/compatkit/fix.json"
    raw = json.loads(state_path.read_bytes())
    assert sorted(f["mode"] for f in raw["files"] if f["written_sha"] is None) == [
        0o444,
        0o444,
        0o755,
    ]
    for f in raw["files"]:
        f.pop("mode", None)  # only a deleted file's entry has one
    _rewrite(state_path, json.dumps(raw, sort_keys=True).encode() + b"\n")
    code, _, err = moded.run("revert", "--force", "fix")  # the state's RECORD hash changed
    assert code == 0, err
    assert (site / "moded/gone_ro.py").read_bytes() == b"RO = 1\n"
    assert _mode(site / "moded/gone_ro.py") == 0o644
    assert _mode(site / "moded/__init__.py") == 0o755


@pytest.mark.parametrize(
    "bad", [0o4755, 0o1000, -1, "0o444", True], ids=["setuid", "sticky", "negative", "text", "bool"]
)
def test_a_state_with_a_bad_mode_is_refused_and_nothing_changes(moded: Moded, bad: object) -> None:
    """A state (anyone who can write the environment can edit it) never makes revert create a
    set-user-ID, sticky or otherwise odd file: it is refused in one line, nothing written."""
    import json

    site = moded.venv.site
    assert moded.run("apply", "fix")[0] == 0
    state_path = site / "moded-1.0.dist-info/compatkit/fix.json"
    raw = json.loads(state_path.read_bytes())
    next(f for f in raw["files"] if f["path"] == "moded/gone_x.py")["mode"] = bad
    _rewrite(state_path, json.dumps(raw, sort_keys=True).encode() + b"\n")
    edited = moded.snap_modes()
    code, out, err = moded.run("revert", "--force", "fix")
    assert code != 0
    assert "unreadable compatkit state" in err and "is not a file mode" in err, err
    assert "Traceback" not in err + out and len(err.strip().splitlines()) == 1, err
    assert moded.snap_modes() == edited


def _rewrite(path: Path, data: bytes) -> None:
    """A new file renamed over ``path`` (never an edit in place)."""
    tmp = path.with_name(path.name + ".new")
    tmp.write_bytes(data)
    os.replace(tmp, path)
