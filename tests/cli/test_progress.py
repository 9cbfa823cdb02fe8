"""Progress bars on long work (issue 36, item 6): on a terminal's stderr only.

A real ``python -m compatkit pristine --all`` runs on a pseudo-terminal (os.openpty:
its stdout and stderr are the terminal, as in a shell) and in a pipe, on a real venv: the bar
is drawn on the terminal, and a pipe, ``--json``, ``CI`` and ``TERM=dumb`` get exactly the
bytes they got before bars existed. The operations' side is checked with a reporter that
counts what it is told: files and bytes hashed, a download's bytes, a venv's two steps.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.filesize import decimal

from compatkit.delivery.wheels import WheelSource
from compatkit.env.target import Environment
from compatkit.load.registry import Registry
from compatkit.model.progress import Reporter, Task
from compatkit.ops.matrix import run_cell
from compatkit.ops.pristine import check
from compatkit.ops.upstream import throwaway_env
from helpers import Demo, Venv, install_demo
from helpers.wheelkit import build_wheel, local_index

# what a child must not inherit from the test run: they decide whether a bar is shown
# (CI, TERM) or how rich draws (its own switches, the size of the terminal)
_DECIDING = ("CI", "TERM", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "COLUMNS", "LINES")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DECIDING}
    return {**env, "TERM": "xterm-256color", "PYTHONIOENCODING": "utf-8", **extra}


def _on_terminal(cmd: list[str], env: dict[str, str]) -> tuple[int, bytes]:
    """Run ``cmd`` with stdin, stdout and stderr on a new 100×24 pseudo-terminal; its exit
    code and every byte it wrote there."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen(
        cmd, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
    )
    os.close(slave)
    seen = bytearray()
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 120)
            if not ready:
                proc.kill()
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every copy of the terminal's other end is closed
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(master)
    return proc.wait(timeout=60), bytes(seen)


def _in_pipe(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(cmd, capture_output=True, env=env, stdin=subprocess.DEVNULL)


def _hashed(venv: Venv) -> tuple[int, int]:
    """The files every RECORD of ``venv`` lists with a hash, and their bytes: what
    ``pristine --all`` hashes (each path once)."""
    paths = set()
    for record in venv.site.glob("*.dist-info/RECORD"):
        for line in record.read_text().splitlines():
            path, digest, *_ = line.split(",")
            if digest:
                paths.add(venv.site / path)
    return len(paths), sum(p.stat().st_size for p in paths)


def _verify_all(demo: Demo, *first: str) -> list[str]:
    base = [sys.executable, "-m", "compatkit", *first, "--python", demo.venv.python]
    return [*base, "pristine", "--all"]


def test_verify_pristine_all_draws_a_bar_on_a_terminal(demo: Demo) -> None:
    files, nbytes = _hashed(demo.venv)
    code, seen = _on_terminal(_verify_all(demo), _env())
    assert code == 0, seen
    # rich's bar: the task, its block characters, files and bytes hashed of the total (its
    # last frame is drawn as the work ends, then erased)
    assert b"hashing" in seen
    assert "━".encode() in seen
    assert f"{files}/{files} · {decimal(nbytes)}/{decimal(nbytes)}".encode() in seen, seen
    assert b"\x1b[2K" in seen  # the bar erased: the terminal keeps only the result
    assert b"every file matches its RECORD" in seen


def test_verify_pristine_all_in_a_pipe_prints_what_it_printed_before(demo: Demo) -> None:
    done = _in_pipe(_verify_all(demo), _env())
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(rb"all 1 distributions?: every file matches its RECORD\n", done.stdout)
    assert done.stderr == b""


def test_stderr_alone_on_a_terminal_leaves_the_piped_stdout_alone(demo: Demo) -> None:
    """``compatkit pristine --all > log``: the bar on the terminal, stdout's line in
    the log, not pulled onto the terminal by the bar."""
    master, slave = os.openpty()
    try:
        done = subprocess.run(
            _verify_all(demo), stdout=subprocess.PIPE, stderr=slave, env=_env(), timeout=120
        )
        os.close(slave)
        seen = bytearray()
        while select.select([master], [], [], 0)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(master)
    assert done.returncode == 0
    assert re.fullmatch(rb"all 1 distributions?: every file matches its RECORD\n", done.stdout)
    assert b"hashing" in seen and b"every file" not in seen


def test_json_on_a_terminal_shows_no_bar(demo: Demo) -> None:
    code, seen = _on_terminal(_verify_all(demo, "--json"), _env())
    assert code == 0, seen
    assert b"\x1b" not in seen and b"hashing" not in seen
    doc = json.loads(seen.replace(b"\r\n", b"\n"))
    assert doc == {"ok": True, "command": "pristine", "checked": 1, "distributions": []}


@pytest.mark.parametrize("switch", [{"CI": "true"}, {"TERM": "dumb"}])
def test_no_bar_in_ci_or_on_a_dumb_terminal(demo: Demo, switch: dict[str, str]) -> None:
    code, seen = _on_terminal(_verify_all(demo), _env(**switch))
    assert code == 0, seen
    assert b"hashing" not in seen and "━".encode() not in seen
    assert b"every file matches its RECORD" in seen


def test_no_rich_import_without_a_bar(demo: Demo) -> None:
    """In a pipe the bar's module is never imported (start-up time): rich is not."""
    cmd = _verify_all(demo)
    cmd[1:1] = ["-X", "importtime"]
    done = _in_pipe(cmd, _env())
    assert done.returncode == 0
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.decode().splitlines()]
    assert "compatkit.ops.pristine" in imported  # the work ran
    assert not [m for m in imported if m.split(".")[0] == "rich"]


class Seen:
    """One task as a :class:`Counted` reporter saw it."""

    def __init__(self, what: str, total: int | None, nbytes: int | None) -> None:
        self.what, self.total, self.nbytes = [what], total, nbytes
        self.steps = self.read = 0
        self.closed = False


class Counted(Reporter):
    """A reporter that remembers each task and what it was told (from any thread)."""

    def __init__(self) -> None:
        self.tasks: list[Seen] = []

    def task(self, what: str, total: int | None = None, nbytes: int | None = None) -> Task:
        seen = Seen(what, total, nbytes)
        self.tasks.append(seen)
        lock = threading.Lock()

        class Told(Task):
            def advance(self, steps: int = 1, nbytes: int = 0) -> None:
                with lock:
                    seen.steps += steps
                    seen.read += nbytes

            def describe(self, what: str) -> None:
                seen.what.append(what)

            def close(self) -> None:
                seen.closed = True

        return Told()


def test_hashing_reports_every_file_and_byte_of_the_total(
    tmp_path: Path, make_venv: Callable[..., Venv]
) -> None:
    big = {"demo/big.bin": os.urandom(3 << 20)}  # several pieces of bounded.HASH_CHUNK
    venv, _, _ = install_demo(tmp_path, make_venv, {"demo/__init__.py": b"", **big})
    files, nbytes = _hashed(venv)
    counted = Counted()
    result = check(Environment.for_python(venv.python), None, counted)
    assert (len(result.checked), result.reports) == (1, [])
    [task] = counted.tasks
    assert (task.what, task.total, task.nbytes) == (["hashing"], files, nbytes)
    assert (task.steps, task.read, task.closed) == (files, nbytes, True)


def test_a_download_reports_its_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "index"
    folder.mkdir()
    wheel = build_wheel(folder, "dltest", "1.0", {"dltest/data.bin": os.urandom(3 << 20)})
    counted = Counted()
    src = WheelSource(reporter=counted)
    monkeypatch.setattr(WheelSource, "_pip_download", lambda *_: None)  # the index's way
    with local_index([wheel]) as url:
        monkeypatch.setenv("COMPATKIT_INDEX_URL", url)
        got = src.download("dltest", "1.0")
    assert got.read_bytes() == wheel.read_bytes()
    size = wheel.stat().st_size
    [task] = counted.tasks
    assert task.what == [f"downloading {wheel.name}"]
    assert (task.nbytes, task.read, task.closed) == (size, size, True)


def test_a_wheel_sources_reporter_is_no_field() -> None:
    """The reporter a WheelSource carries (set when made or later, as the CLI does) is how
    progress shows, not where wheels come from: not compared, not in repr."""
    counted = Counted()
    src = WheelSource((Path("w"),), index=False, reporter=counted)
    assert src.reporter is counted
    assert src == WheelSource((Path("w"),), index=False)
    assert src != WheelSource((Path("v"),), index=False)
    assert repr(src) == repr(WheelSource((Path("w"),), index=False))
    assert "reporter" not in repr(src) and "Counted" not in repr(src)
    later = WheelSource()
    later.reporter = counted
    assert later.reporter is counted and later == WheelSource()


def test_a_line_printed_under_a_bar_stays_on_its_own_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``matrix run`` prints a line per patchset while its bar runs: a piped stdout gets it
    (rich does not pull it onto the terminal); a terminal's stdout shows it above the bar."""
    from compatkit.cli.progressbar import Bar

    for stdout_on_terminal in (False, True):
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
        terminal = os.fdopen(slave, "w", encoding="utf-8")
        piped = io.StringIO()
        for name in _DECIDING:
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("TERM", "xterm-256color")
        monkeypatch.setattr(sys, "stderr", terminal)
        monkeypatch.setattr(sys, "stdout", terminal if stdout_on_terminal else piped)
        with Bar().task("cell c1", total=2) as task:
            print("cell c1: demo-fix (apply): applying, smoke tests, reverting ...")
            task.advance()
        terminal.flush()
        monkeypatch.undo()
        seen = b""
        while select.select([master], [], [], 0)[0]:
            chunk = os.read(master, 65536)
            if not chunk:
                break
            seen += chunk
        terminal.close()
        os.close(master)
        assert b"cell c1" in seen and b"1/2" in seen
        line = "cell c1: demo-fix (apply): applying"
        assert (line.encode() in seen) is stdout_on_terminal, seen
        assert (line in piped.getvalue()) is not stdout_on_terminal


def test_a_throwaway_venv_reports_its_two_steps(demo: Demo, tmp_path: Path) -> None:
    counted = Counted()
    wheels = WheelSource(reporter=counted)  # where wheels come from carries the reporter
    env = throwaway_env([str(demo.wheel)], tmp_path / "throwaway", wheels)
    assert env.require("demo").version == "1.0"
    [task] = counted.tasks
    assert task.what == ["creating a throw-away venv", f"installing {demo.wheel}"]
    assert (task.total, task.steps, task.closed) == (2, 2, True)


@pytest.mark.slow
def test_a_matrix_cell_reports_each_patchset(demo: Demo, tmp_path: Path) -> None:
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(
        '[[cell]]\nid = "demo"\npackages = ["demo==1.0"]\npatchsets = ["demo-fix"]\n'
        '[cell.expect.demo-fix]\ndefault = "applied/pass"\n'
    )
    uv = [shutil.which("uv") or "uv", "pip", "install", "-q", "--python", demo.venv.python]
    subprocess.run([*uv, "pytest"], check=True)  # the smoke tests' runner, with its deps
    registry = Registry([demo.patchsets])
    env = Environment.for_python(demo.venv.python)
    counted = Counted()
    result = run_cell(registry, env, matrix, "demo", tmp_path / "results", reporter=counted)
    assert result.ok, result.mismatches
    assert result.to_json() == json.loads((tmp_path / "results" / "demo.json").read_text())
    [task] = counted.tasks
    assert task.what == ["cell demo", "cell demo: demo-fix (apply)"]
    assert (task.total, task.steps, task.closed) == (1, 1, True)


def _edit(path: Path, old: str, new: str) -> None:
    """Replace an installed file (a new inode: never through uv's hardlink)."""
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(path.read_text().replace(old, new))
    os.replace(tmp, path)


def test_diff_draws_its_read_of_the_distribution_on_a_terminal(demo: Demo, tmp_path: Path) -> None:
    """The bar reaches the operations that get their wheels from the command's context
    (diff, wheel, rebase: ``ctx.wheels()``); a pipe still gets none."""
    wheels = str(demo.wheel.parent)
    env = _env(COMPATKIT_CACHE_DIR=str(tmp_path / "cache"), COMPATKIT_NO_INDEX="1")
    args = ["diff", "demo", "--wheel-dir", wheels, "--id", "patch-1", "--patchset"]
    _edit(demo.venv.site / "demo" / "greet.py", "'hello '", "'good day '")
    code, seen = _on_terminal(demo.command(*args, "on-terminal", "-o", f"{tmp_path}/t"), env)
    assert code == 0, seen
    assert b"reading demo 1.0" in seen and "━".encode() in seen
    _edit(demo.venv.site / "demo" / "util.py", "line3 = 3", "line3 = 33")
    done = _in_pipe(demo.command(*args, "in-a-pipe", "-o", f"{tmp_path}/p"), env)
    assert done.returncode == 0, done.stderr
    assert b"reading" not in done.stdout + done.stderr and b"\x1b" not in done.stdout
