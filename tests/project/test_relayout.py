"""tests/relayout.py, the one-off move of tests/test_*.py into layer folders (issue 35, item 9):
its rewrites, and a run on a tiny repository of its own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import relayout

SCRIPT = Path(relayout.__file__).resolve()


def test_a_moved_file_climbs_one_folder_more() -> None:
    text = (
        "ROOT = Path(__file__).resolve().parents[2]\n"
        'DATA = Path(__file__).parents[1] / "fuzz_corpus"\n'
        "UP = Path(__file__).parents[3]\n"
        "SELF = Path(__file__).resolve()\n"
        "PKG = Path(compatkit.__file__).parent\n"
    )
    assert relayout._climb_one_more(text) == (
        "ROOT = Path(__file__).resolve().parents[3]\n"
        'DATA = Path(__file__).parents[2] / "fuzz_corpus"\n'
        "UP = Path(__file__).parents[4]\n"
        "SELF = Path(__file__).resolve()\n"
        "PKG = Path(compatkit.__file__).parent\n"
    )


def test_imports_of_conftest_and_the_moved_modules_go_to_helpers() -> None:
    text = (
        "from conftest import Demo, run_cli\n"
        "from wheelkit import build_wheel\n"
        "    from reliability import snapshot\n"
        "import fuzzgen\n"
        "from route import trace\n"  # route.py moves beside its test, not into helpers
        "from conftestx import y\n"
    )
    assert relayout._fix_imports(text) == (
        "from helpers import Demo, run_cli\n"
        "from helpers.wheelkit import build_wheel\n"
        "    from helpers.reliability import snapshot\n"
        "from helpers import fuzzgen\n"
        "from route import trace\n"
        "from conftestx import y\n"
    )


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def _relayout(repo: Path) -> subprocess.CompletedProcess[str]:
    git = shutil.which("git")
    assert git is not None
    env = {**os.environ, "PATH": str(Path(git).parent)}
    return subprocess.run(
        [sys.executable, str(SCRIPT)], cwd=repo, capture_output=True, text=True, env=env
    )


def test_a_run_moves_fixes_and_warns_and_a_second_changes_nothing(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "tests" / "helpers").mkdir(parents=True)
    (repo / "pyproject.toml").write_text("")
    (repo / "tests" / "conftest.py").write_text("def make_thing():\n    pass\n")
    (repo / "tests" / "helpers" / "__init__.py").write_text("Demo = 1\n")
    (repo / "tests" / "test_engine.py").write_text(
        '"""Also run by tests/test_cli.py."""\nfrom conftest import Demo\n'
        "ROOT = Path(__file__).resolve().parents[2]\n"
    )
    (repo / "tests" / "test_cli.py").write_text("from helpers import Nothing\n")
    (repo / "tests" / "test_new.py").write_text("")
    (repo / "noxfile.py").write_text('RELIABILITY = ("tests/test_cli.py::test_x",)\n')
    (repo / "CONTRIBUTING.md").write_text("# c\n\n## The fast subset\n\ntests/test_engine.py\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    proc = _relayout(repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout
    assert "moved tests/test_engine.py -> tests/engine/test_engine.py" in out
    assert "moved tests/test_cli.py -> tests/cli/test_cli.py" in out
    engine = (repo / "tests" / "engine" / "test_engine.py").read_text()
    # (ruff, if git's folder has one, may add blank lines)
    assert '"""Also run by tests/cli/test_cli.py."""' in engine
    assert "\nfrom helpers import Demo\n" in engine
    assert "\nROOT = Path(__file__).resolve().parents[3]\n" in engine
    assert "conftest" not in engine and ".parent." not in engine
    noxfile = (repo / "noxfile.py").read_text()
    assert '"tests/cli/test_cli.py::test_x"' in noxfile and "tests/test_cli" not in noxfile
    contributing = (repo / "CONTRIBUTING.md").read_text()
    assert "tests/engine/test_engine.py" in contributing and "## Where tests live" in contributing
    assert contributing.index("## Where tests live") < contributing.index("## The fast subset")
    warned = [line for line in out.splitlines() if line.startswith("relayout: warning: ")]
    assert any("not placed: tests/test_new.py" in line for line in warned), out
    assert any("tests/cli/test_cli.py: Nothing" in line for line in warned), out
    assert any("conftest.py defines make_thing" in line for line in warned), out
    assert (repo / "tests" / "test_new.py").exists()  # a file it cannot place stays put
    _git(repo, "add", "-A")
    again = _relayout(repo)
    assert "everything is in place; nothing changed" in again.stdout, again.stdout
    assert not [line for line in again.stdout.splitlines() if line.startswith("moved ")]
    assert (repo / "CONTRIBUTING.md").read_text() == contributing
    assert (repo / "tests" / "engine" / "test_engine.py").read_text() == engine
