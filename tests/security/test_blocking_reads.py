"""Issue 46 items 2-4: the reads issue 34 left blocking or unbounded.

- the entry-point scan of compatkit's own site-packages read a declaring distribution's
  METADATA with importlib.metadata's plain ``read_text``: a FIFO hung ``list``, ``status``,
  ``apply``...; a link to ``/dev/zero`` read until memory ran out;
- the runtime hook opened its table, the patched sources and their pycs, and hashed an
  installed file, with a plain blocking ``open``: a FIFO there hung every start of the
  environment (``compatkit runtime uninstall --dir``, the way out, too);
- ``runtime install`` / ``runtime verify`` start the target with ``site``, which reads every
  ``.pth`` file of its site-packages: a FIFO one hung them for 600 s.

Every child runs with a timeout (a hang fails the test, killed with its process group) and an
address-space limit (a read without end fails fast).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from helpers import Demo
from helpers.reliability import child

# The CLI with compatkit's own site-packages replaced by the folder in argv[1] (the entry-point
# scan looks there only), under the same address-space limit as test_bounded_reads.LIMITED.
OWN_SITE = (
    "import resource, runpy, site, sys; "
    "resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
    "where = sys.argv.pop(1); site.getsitepackages = lambda prefixes=None: [where]; "
    "runpy.run_module('compatkit', run_name='__main__', alter_sys=True)"
)


def _declaring(site: Path, metadata: str) -> Path:
    """A distribution in ``site`` whose entry_points.txt names the ``compatkit.patchsets``
    group, with METADATA made a FIFO, a link to /dev/zero, or a regular file."""
    info = site / "teamfix_patchsets-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "teamfix_patchsets").mkdir()
    (site / "teamfix_patchsets" / "__init__.py").write_text("")
    (info / "entry_points.txt").write_text("[compatkit.patchsets]\nteamfix = teamfix_patchsets\n")
    (info / "RECORD").write_text("teamfix_patchsets/__init__.py,,\n")
    path = info / "METADATA"
    if metadata == "fifo":
        os.mkfifo(path)
    elif metadata == "zero":
        path.symlink_to("/dev/zero")
    else:
        path.write_text("Metadata-Version: 2.1\nName: teamfix-patchsets\nVersion: 1.0\n")
    return path


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_the_entry_point_scan_never_blocks_on_metadata(tmp_path: Path, kind: str) -> None:
    metadata = _declaring(tmp_path / "site", kind)
    env = {**os.environ, "COMPATKIT_CACHE_DIR": str(tmp_path / "cache"), "NO_COLOR": "1"}
    for args in (["list"], ["status"]):
        start = time.perf_counter()
        cmd = [sys.executable, "-c", OWN_SITE, str(tmp_path / "site"), *args]
        code, _, err = child(cmd, env)
        assert code is not None, f"{args} hung"
        text = err.decode()
        assert code == 1, (args, text)
        assert text.splitlines() == [
            f"compatkit: error: {metadata}: not a regular file "
            f"({'a FIFO' if kind == 'fifo' else 'a character device'}); not read"
        ], text
        assert time.perf_counter() - start < 30


def test_the_entry_point_scan_still_lists_a_sound_package(tmp_path: Path) -> None:
    """The baseline: the same distribution with a regular METADATA is read, and named."""
    _declaring(tmp_path / "site", "file")
    env = {**os.environ, "COMPATKIT_CACHE_DIR": str(tmp_path / "cache"), "NO_COLOR": "1"}
    code, out, err = child([sys.executable, "-c", OWN_SITE, str(tmp_path / "site"), "list"], env)
    assert code == 0, err
    assert b"speculators-vllm016" in out


# the runtime hook: its table, a patched source, its pyc, the installed file it hashes


def _runtime_env(tmp: Path, root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return {**env, "COMPATKIT_CACHE_DIR": str(tmp / "cache"), "PYTHONPATH": str(root)}


PROBE = "import demo.greet; print(demo.greet.hello('x'))"


@pytest.mark.parametrize("part", ["table", "source", "pyc", "installed"])
def test_no_file_the_hook_reads_blocks_a_start(demo: Demo, tmp_path: Path, part: str) -> None:
    """A FIFO in place of each file the hook reads: the start (or the import) fails closed
    with its one line, at once; a pyc is only a cache (compiled again, served patched)."""
    root = tmp_path / "rt"
    assert demo.run("runtime", "install", "demo-fix", "--dir", str(root))[0] == 0
    env = _runtime_env(tmp_path, root)
    assert child([demo.venv.python, "-c", PROBE], env)[1] == b"hi x\n"
    data = root / "_compatkit_runtime"
    (key,) = (data / "src").iterdir()
    path = {
        "table": data / "table.marshal",
        "source": key / "demo" / "greet.py",
        "pyc": next((data / "pycache").rglob("*.pyc")),
        "installed": demo.venv.site / "demo" / "greet.py",
    }[part]
    path.unlink()
    os.mkfifo(path)
    if part == "pyc":
        path.chmod(0o644)  # as the folder's files are (mkfifo's mode is the umask's)
    code, out, err = child([demo.venv.python, "-c", PROBE], env)
    assert code is not None, "the start hung"
    text = err.decode()
    if part == "pyc":
        assert (code, out) == (0, b"hi x\n"), text
        return
    assert code == 1 and b"hi x" not in out, text
    first = text.splitlines()[0]
    if part == "table":
        assert text.splitlines() == [first], text
        assert first.startswith("compatkit runtime: refusing to start: "), text
        assert f"{path} is not a regular file" in first, text
    else:
        assert first.startswith("compatkit runtime: refusing to import demo.greet: "), text
        assert str(path) in first, text


def test_uninstall_removes_a_folder_whose_table_is_a_fifo(demo: Demo, tmp_path: Path) -> None:
    """compatkit's own start in that environment goes on without the hook (one line), and the
    way out the line names removes the folder, reading nothing of it."""
    root = tmp_path / "rt"
    assert demo.run("runtime", "install", "demo-fix", "--dir", str(root))[0] == 0
    table = root / "_compatkit_runtime" / "table.marshal"
    table.unlink()
    os.mkfifo(table)
    cmd = [sys.executable, "-m", "compatkit", "runtime", "uninstall", "--dir", str(root)]
    code, _, err = child(cmd, _runtime_env(tmp_path, root))
    assert code is not None, "runtime uninstall --dir hung"
    lines = err.decode().splitlines()
    assert code == 0, lines
    assert len(lines) == 1 and "compatkit starts without the hook" in lines[0], lines
    assert not (root / "_compatkit_runtime").exists()


# runtime install / verify: the target started with site, which reads every .pth

LIMITED = (
    "import resource, runpy; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
    "runpy.run_module('compatkit', run_name='__main__', alter_sys=True)"
)


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_runtime_install_and_verify_name_a_pth_that_would_block(
    demo: Demo, tmp_path: Path, kind: str
) -> None:
    root = tmp_path / "rt"
    assert demo.run("runtime", "install", "demo-fix", "--dir", str(root))[0] == 0
    evil = demo.venv.site / "evil.pth"
    if kind == "fifo":
        os.mkfifo(evil)
    else:
        evil.symlink_to("/dev/zero")
    what = "a FIFO" if kind == "fifo" else "a character device"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["COMPATKIT_CACHE_DIR"] = str(tmp_path / "cache")
    base = [sys.executable, "-c", LIMITED, "--python", demo.venv.python]
    base += ["--patchset-dir", str(demo.patchsets), "runtime"]
    for args in (["verify", "--dir", str(root)], ["install", "demo-fix", "--dir", str(root / "b")]):
        start = time.perf_counter()
        code, _, err = child([*base, *args], env)
        assert code is not None, f"runtime {args[0]} hung"
        text = err.decode()
        assert code == 1, text
        assert "Traceback" not in text and "internal error" not in text, text
        assert f"{evil}: not a regular file ({what}); every start of" in text, text
        assert len(text.splitlines()) <= 2, text
        assert time.perf_counter() - start < 30
    assert not (root / "b").exists()  # refused before anything was written
