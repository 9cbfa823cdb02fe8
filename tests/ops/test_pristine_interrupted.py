"""Issue 46 item 6: ``pristine --all`` whose hashing worker is killed (as the OOM killer does)
is one line naming the file it was hashing, exit 1, not "internal error: BrokenProcessPool";
and ``--json`` prints its one document on Ctrl-C (exit 130) too.

A real venv whose RECORD lists a sparse file of many GiB (hashing it takes seconds: the
worker is found and signalled meanwhile) and enough small files for worker processes; the
command runs as a child, in a session of its own, with a timeout."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from compatkit.model.records import hash_bytes
from compatkit.ops.pristine import SERIAL_BELOW
from helpers import Venv, build_wheel
from helpers.bigfiles import add_to_record, sparse

BIG = 64 << 30  # sparse: no block on disk; hashing its zeros takes many seconds
HANG = 120


@pytest.fixture
def venv(tmp_path: Path, make_venv: Callable[..., Venv]) -> Venv:
    venv = make_venv()
    many = {f"big/m{i}.py": f"x = {i}\n".encode() for i in range(SERIAL_BELOW + 10)}
    venv.install(build_wheel(tmp_path, "big", "1.0", many))
    path = sparse(venv.site / "big" / "huge.bin", BIG, b"")
    add_to_record(venv.site, "big", [f"big/huge.bin,{hash_bytes(b'')},{BIG}"])
    assert path.stat().st_size == BIG
    return venv


def _workers(pid: int) -> list[int]:
    """The child processes of ``pid`` (pristine's hashing workers)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                found.append(int(entry))
    return found


def _read_bytes(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/io").read_text()
    except OSError:
        return 0
    return int(next(ln for ln in text.splitlines() if ln.startswith("rchar:")).split()[1])


def _hashing(pid: int) -> int:
    """The worker of ``pid`` that reads the big file (over 256 MiB read), once there is one."""
    deadline = time.monotonic() + HANG / 2
    while time.monotonic() < deadline:
        busy = [w for w in _workers(pid) if _read_bytes(w) > 256 << 20]
        if busy:
            return busy[0]
        time.sleep(0.05)
    pytest.fail("no worker started hashing the big file")


def _run(venv: Venv, tmp_path: Path, then: Callable[[int], None]) -> tuple[int, str, str]:
    env = {**os.environ, "COMPATKIT_CACHE_DIR": str(tmp_path / "cache"), "NO_COLOR": "1"}
    cmd = [sys.executable, "-m", "compatkit", "--python", venv.python, "--json"]
    with subprocess.Popen(
        [*cmd, "pristine", "--all"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    ) as proc:
        try:
            then(proc.pid)
            out, err = proc.communicate(timeout=HANG)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.slow
def test_a_killed_worker_is_one_line_naming_its_file(venv: Venv, tmp_path: Path) -> None:
    def kill(pid: int) -> None:
        os.kill(_hashing(pid), signal.SIGKILL)  # as the OOM killer does

    code, out, err = _run(venv, tmp_path, kill)
    assert code == 1, err
    (line,) = err.splitlines()
    assert line == (
        "compatkit: error: a hashing worker was killed (out of memory?) while it hashed "
        f"'big/huge.bin' in {venv.site} ({BIG} bytes); nothing was reported"
    )
    doc = json.loads(out)
    assert doc["ok"] is False and doc["command"] == "pristine"
    assert doc["error"] == line.removeprefix("compatkit: error: ")


@pytest.mark.slow
def test_json_prints_its_document_on_ctrl_c(venv: Venv, tmp_path: Path) -> None:
    def interrupt(pid: int) -> None:
        _hashing(pid)
        os.kill(pid, signal.SIGINT)

    code, out, err = _run(venv, tmp_path, interrupt)
    assert code == 130, err
    assert err.splitlines() == ["compatkit: interrupted"]
    assert json.loads(out) == {
        "ok": False,
        "command": "pristine",
        "error": "interrupted",
        "problems": [],
    }
