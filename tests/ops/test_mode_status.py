"""A patch that only changes a file's mode (git's ``old mode``/``new mode``, no hunk) is seen by
``status`` and ``verify`` as one that changes bytes is (issue 44): not applied while the file has
its old mode, already present when it has the new one, applied after ``apply``, drifted (and
failing verify) when the mode is changed back by hand."""

from __future__ import annotations

import json
import os
import shutil
import stat
import zipfile
from pathlib import Path

from helpers import MODE_ONLY_DIFF, Demo, patch_text, write_patchset

MODE_ONLY = patch_text("patch-x", MODE_ONLY_DIFF, "Executable greet")


def _chmod(path: Path, mode: int) -> None:
    """``chmod`` a file of its own: copied and renamed over first, so that uv's hardlinked
    cache file keeps its mode."""
    copy = path.with_name(path.name + ".copy")
    shutil.copy2(path, copy)
    os.replace(copy, path)
    path.chmod(mode)


def _status(demo: Demo) -> tuple[str, str]:
    code, out, err = demo.run("status", "modes", "--json")
    assert code == 0, err
    (patch,) = json.loads(out)["patchsets"][0]["patches"]
    return patch["status"], patch["detail"]


def test_status_and_verify_see_a_mode_only_patch(demo: Demo) -> None:
    write_patchset(demo.patchsets, "modes", {"0001.patch": MODE_ONLY})
    greet = demo.venv.site / "demo/greet.py"
    _chmod(greet, 0o644)
    assert _status(demo) == ("not applied", "applies cleanly")
    _chmod(greet, 0o755)  # upstream made it executable: nothing left to do
    assert _status(demo) == ("not applied", "its change is already present")  # before: applies
    _chmod(greet, 0o644)
    assert demo.run("apply", "modes")[0] == 0
    assert stat.S_IMODE(greet.stat().st_mode) == 0o755
    assert _status(demo)[0] == "applied"
    assert demo.run("verify", "modes")[0] == 0
    _chmod(greet, 0o644)  # changed back by hand
    assert _status(demo) == ("drifted", "a file changed after the apply")  # before: applied
    code, _, err = demo.run("verify", "modes")
    assert code == 1 and "demo/greet.py has mode 644, not the 755 modes sets" in err, err
    _chmod(greet, 0o755)
    assert demo.run("verify", "modes")[0] == 0
    assert demo.run("revert", "modes")[0] == 0
    assert stat.S_IMODE(greet.stat().st_mode) == 0o644
    assert _status(demo) == ("not applied", "applies cleanly")


def test_a_wheel_built_with_a_mode_patch_holds_the_mode(demo: Demo, tmp_path: Path) -> None:
    """``compatkit wheel``: the patched wheel's file has the mode the patch sets (a wheel's
    zip entry is 0644 or 0755). Before: the mode was lost (0644), so the built wheel did not
    hold the patch it reports built in."""
    write_patchset(demo.patchsets, "modes", {"0001.patch": MODE_ONLY})
    out = tmp_path / "out"
    code, _, err = demo.run("wheel", "modes", "-o", str(out), "--wheel-dir", str(demo.wheel.parent))
    assert code == 0, err
    (whl,) = out.glob("*.whl")
    with zipfile.ZipFile(whl) as z:
        modes = {i.filename: i.external_attr >> 16 for i in z.infolist()}
    assert modes["demo/greet.py"] == 0o100755 and modes["demo/util.py"] == 0o100644
