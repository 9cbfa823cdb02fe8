"""Issue 46 item 10: the command ``diff`` ends with is one that works from the same folder,
with ``-o DIR`` and with the default ``./patchsets`` (docs/authoring.md: the output folder is
searched too)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import Demo


def _run(cwd: Path, *args: str) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "compatkit", *args], capture_output=True, text=True, cwd=cwd
    )
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("output", [None, "out/sets"])
def test_the_lint_command_diff_prints_finds_the_new_patchset(
    output: str | None, demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(tmp_path / "ck-cache"))
    monkeypatch.setenv("COMPATKIT_NO_INDEX", "1")
    monkeypatch.setenv("COMPATKIT_WHEEL_DIR", str(demo.wheel.parent))
    here = tmp_path / "work"
    here.mkdir()
    greet = demo.venv.site / "demo/greet.py"
    greet.write_text(greet.read_text().replace("'hello '", "'good day '"))
    where = ["-o", output] if output else []
    args = ["--python", demo.venv.python, "diff", "demo", "--patchset", "mine", *where]
    code, out = _run(here, *args, "--id", "patch-1")
    assert code == 0, out
    (hint,) = [line for line in out.splitlines() if "then '" in line]
    command = shlex.split(hint.split("then '", 1)[1].rstrip("'"))
    assert command[:2] == ["compatkit", "lint"], hint
    code, out = _run(here, *command[1:])
    assert code == 1 and "unknown patchset" not in out, (hint, out)  # found: its TODOs fail
    assert "mine: " in out and "still a TODO placeholder" in out, out

    # a second patch goes beside the first: the output folder is searched (the default too)
    util = demo.venv.site / "demo/util.py"
    util.write_text(util.read_text().replace("line30 = 30\n", "line30 = 'thirty'\n"))
    code, out = _run(here, *args, "--id", "patch-2")
    assert code == 0, out
    series = (here / (output or "patchsets") / "mine" / "patchset.toml").read_text()
    assert "patch-1" in series and "patch-2" in series, series
