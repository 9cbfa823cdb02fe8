"""The runtime hook as compatkit ships it (``compatkit.runtime.hook``, imported as a module by
this checkout's interpreter) serving a folder ``compatkit runtime install`` wrote: the same
behaviour as its copy in the folder (tests/runtime/test_runtime.py), here in a child that
coverage follows (issue 47: the copy, ``_compatkit_hook_<sha>.py``, is outside the measured
package)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_runtime import PATCHED, SCRIPT

from helpers import Demo

START = "import sys\nsys.path.insert(0, {site!r})\nimport compatkit.runtime.hook as hook\n"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(tmp_path / "cache"))


def _child(demo: Demo, body: str) -> subprocess.CompletedProcess[str]:
    """``body`` run by this interpreter with the demo's site-packages first on sys.path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = START.format(site=str(demo.venv.site)) + body
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


def _installed(demo: Demo, tmp_path: Path) -> Path:
    # the demo venv is made from this interpreter (conftest's make_venv): the same Python
    root = tmp_path / "rt"
    code, _, err = demo.run("runtime", "install", "demo-fix", "--dir", str(root))
    assert code == 0, err
    return root


def test_the_hook_module_serves_patched_sources_and_their_bytecode(
    demo: Demo, tmp_path: Path
) -> None:
    root = _installed(demo, tmp_path)
    for _ in range(2):  # the second start loads the pycs the first one wrote
        proc = _child(demo, f"hook.start({str(root)!r})\nhook.start({str(root)!r})\n" + SCRIPT)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines() == PATCHED
    pycs = list((root / "_compatkit_runtime/pycache").rglob("*.pyc"))
    assert pycs and not list((demo.venv.site / "demo").glob("__pycache__/*ck*"))


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("import demo.greet\nhook.start({root!r})\n", "demo.greet was imported before"),
        ("hook.start({root!r} + '-none')\n", "is missing or damaged"),
        ("hook.start({root!r}, ['demo.other'])\n", "lacks demo.other, which it must patch"),
    ],
)
def test_a_start_the_hook_cannot_keep_is_refused_in_one_line(
    demo: Demo, tmp_path: Path, body: str, said: str
) -> None:
    root = _installed(demo, tmp_path)
    if "-none" in body:
        (tmp_path / "rt-none").mkdir()
    proc = _child(demo, body.format(root=str(root)) + "print('ran')\n")
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("compatkit runtime: refusing to start: ") and said in line, line


def test_a_changed_file_is_refused_by_the_hook_module(demo: Demo, tmp_path: Path) -> None:
    root = _installed(demo, tmp_path)
    greet = demo.venv.site / "demo/greet.py"
    copy = greet.with_name("greet.py.copy")
    copy.write_bytes(greet.read_bytes() + b"# edited\n")
    copy.replace(greet)  # a file of its own: uv's hardlinked cache file is not touched
    body = (
        f"hook.start({str(root)!r})\n"
        "try:\n    import demo.greet\nexcept Exception as e:\n    print(type(e).__name__)\n"
    )
    proc = _child(demo, body)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["RuntimeRefusal"]  # caught, and still said on stderr
    assert "refusing to import demo.greet" in proc.stderr
    assert "changed since demo-fix:patch-1 was prepared" in proc.stderr
