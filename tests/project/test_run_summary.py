"""The end of a run (conftest.py's pytest_terminal_summary): the figures reliability modules
gathered over their tests, and one line naming the root-only tests that were skipped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import helpers

TESTS = Path(helpers.__file__).resolve().parents[1]  # the folder of conftest.py

TINY = """
import pytest

from helpers import NEEDS_ROOT
from helpers.reliability import AT_END

AT_END["tiny"] = lambda: {"inputs": {"a": 3}} if RAN else None
RAN = []


@pytest.mark.skipif(True, reason=f"{NEEDS_ROOT}: stages another user's files")
def test_as_another_user():
    pass


def test_needs_setpriv():
    pytest.skip(f"{NEEDS_ROOT} and setpriv")


@pytest.mark.skip(reason="no Python 3.10 here")
def test_other_reason():
    pass


def test_runs():
    RAN.append(1)
"""


def _run(folder: Path, *args: str) -> str:
    """pytest on folder/test_tiny.py with tests/conftest.py's hooks, its output."""
    (folder / "test_tiny.py").write_text(TINY)
    env = {**os.environ, "PYTHONPATH": str(TESTS), "COMPATKIT_REPORT": str(folder / "r.jsonl")}
    cmd = [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", *args]
    proc = subprocess.run(
        [*cmd, "-c", os.devnull, "--rootdir", str(folder), str(folder / "test_tiny.py")],
        capture_output=True,
        text=True,
        cwd=folder,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One run of the tiny module (a child pytest takes seconds): its folder and output."""
    folder = tmp_path_factory.mktemp("tiny")
    return folder, _run(folder)


def test_one_line_names_the_root_only_tests_skipped(tiny: tuple[Path, str]) -> None:
    _, out = tiny
    lines = [line for line in out.splitlines() if line.startswith("root-only tests skipped")]
    assert lines == [
        "root-only tests skipped (2): "
        "test_tiny.py::test_as_another_user, test_tiny.py::test_needs_setpriv"
    ], out


def test_figures_gathered_over_a_module_come_at_the_end(tiny: tuple[Path, str]) -> None:
    folder, out = tiny
    line = next(x for x in out.splitlines() if x.startswith("RELIABILITY "))
    assert json.loads(line.removeprefix("RELIABILITY "))["inputs"] == {"a": 3}
    assert out.index(line) > out.index("test_tiny.py")  # after the tests, in the summary
    saved = (folder / "r.jsonl").read_text().splitlines()
    assert [json.loads(x)["test"] for x in saved] == ["tiny"]


@pytest.mark.slow
def test_no_figures_when_none_of_its_tests_ran(tmp_path: Path) -> None:
    out = _run(tmp_path, "-k", "not test_runs")
    assert "RELIABILITY " not in out and "root-only tests skipped (2" in out
    assert not (tmp_path / "r.jsonl").exists()
