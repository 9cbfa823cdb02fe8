"""Fixtures and hooks only (what tests import lives in tests/helpers): real wheels built in
tmp_path, installed into real virtual environments."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from compatkit.env import txn
from compatkit.env.target import Dist
from helpers import DEMO_FILES, NEEDS_ROOT, UV, Demo, Venv, build_wheel, install_demo
from helpers.reliability import AT_END, record

# The width a command wraps its tables to comes from the user's terminal (COLUMNS, as
# shutil.get_terminal_size reads it); pytest-xdist sets COLUMNS=80 in its workers. Tests
# that care about a width set it themselves.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)


@pytest.fixture
def make_venv(tmp_path: Path) -> Callable[..., Venv]:
    counter = iter(range(1000))

    def make(with_pip: bool = False) -> Venv:
        root = tmp_path / f"venv{next(counter)}"
        if with_pip or UV is None:
            subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
        else:
            subprocess.run([UV, "venv", "-q", "-p", sys.executable, str(root)], check=True)
        return Venv(root)

    return make


@pytest.fixture
def demo(
    tmp_path: Path, make_venv: Callable[..., Venv], capsys: pytest.CaptureFixture[str]
) -> Iterator[Demo]:
    """demo 1.0 installed (uv, copy mode) in a fresh venv, plus the demo-fix patchset."""
    venv, patchsets, wheel = install_demo(tmp_path, make_venv, DEMO_FILES)
    yield Demo(venv, patchsets, wheel, capsys)


@pytest.fixture(autouse=True)
def _guard_real_site_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any compatkit write to the test runner's own site-packages fails the test."""
    real = {os.path.realpath(p) for p in sysconfig.get_paths().values()}
    original = txn.commit

    def guarded(dist: Dist, changes: list[txn.Change]) -> None:
        if os.path.realpath(dist.root) in real:
            raise AssertionError(f"a test tried to write to the real {dist.root}")
        original(dist, changes)

    monkeypatch.setattr(txn, "commit", guarded)  # every write goes through Session.commit


@pytest.fixture
def wheels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """demo 1.0's wheel in a wheel directory, and no index: lint and diff check against it."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    build_wheel(folder, "demo", "1.0", DEMO_FILES)
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(tmp_path / "ck-cache"))
    monkeypatch.setenv("COMPATKIT_NO_INDEX", "1")
    monkeypatch.setenv("COMPATKIT_WHEEL_DIR", str(folder))
    return folder


def _skip_reason(report: pytest.TestReport) -> str:
    """A skipped test's reason, as -ra shows it (without pytest.skip's "Skipped: ")."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """At the end of the run: the figures reliability modules gathered over their tests
    (reliability.AT_END: the fuzz inputs per target), and one line naming the tests skipped
    because they need root (their reasons start with helpers.NEEDS_ROOT)."""
    for name, figures in AT_END.items():
        found = figures()
        if found is not None:
            terminalreporter.write_line(record(name, **found))
    skipped = terminalreporter.stats.get("skipped", [])
    root = [r.nodeid for r in skipped if _skip_reason(r).startswith(NEEDS_ROOT)]
    if root:
        names = ", ".join(sorted(root))
        terminalreporter.write_line(f"root-only tests skipped ({len(root)}): {names}")
