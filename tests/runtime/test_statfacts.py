"""Runtime mode's stat facts (compatkit.runtime.statfacts, docs/security.md "Runtime folders"):
the stat facts recorded at install spare the hook a SHA-256 of the installed file and of the patched
source at each start, and cannot be fooled by a same-size edit with its mtime put back; the
pycs written at install are what a start loads, even with PYTHONDONTWRITEBYTECODE set."""

from __future__ import annotations

import marshal
import mmap
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from test_runtime import _env, run  # as test_runtime's

from compatkit.runtime import statfacts
from helpers import Demo

PROBE = (
    "import sys, demo.greet; print(demo.greet.hello('x'), "
    "bool({'_sha256', '_sha2', 'hashlib'} & set(sys.modules)))"
)
SERVED_CHEAPLY = "hi x False"  # patched, and no SHA-256 module loaded
SERVED_HASHED = "hi x True"  # patched, after hashing


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(tmp_path / "cache"))


def _own_copy(path: Path) -> None:
    """Break uv's hardlink: a copy of ``path`` renamed over it (a new inode of our own)."""
    shutil.copyfile(path, path.with_name(path.name + ".copy"))
    os.replace(path.with_name(path.name + ".copy"), path)


def _edit_in_place(path: Path, old: bytes, new: bytes) -> None:
    """Rewrite ``path`` through the same inode, the same size, and put its mtime back."""
    assert len(old) == len(new)
    st = path.stat()
    data = path.read_bytes()
    assert old in data
    with open(path, "r+b") as f:
        f.write(data.replace(old, new))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        st.st_size,
        st.st_mtime_ns,
        st.st_ino,
    )


def _install(demo: Demo, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    greet = demo.venv.site / "demo/greet.py"
    if statfacts._file_systems().get(greet.stat().st_dev) not in statfacts.SOUND:
        pytest.skip("site-packages is on a file system whose ctime proves nothing")
    _own_copy(greet)
    root = tmp_path / "rt"
    code, _, err = demo.run("runtime", "install", "demo-fix", "--dir", str(root))
    assert code == 0, err
    return root, _env(tmp_path, PYTHONPATH=str(root))


def _table(root: Path) -> dict[str, dict[str, object]]:
    doc = marshal.loads((root / "_compatkit_runtime/table.marshal").read_bytes())
    modules: dict[str, dict[str, object]] = doc["modules"]
    return modules


def test_the_facts_spare_the_hash_and_a_same_size_edit_with_its_mtime_back_is_refused(
    demo: Demo, tmp_path: Path
) -> None:
    root, env = _install(demo, tmp_path)
    assert _table(root)["demo.greet"]["original_facts"] is not None
    proc = run([demo.venv.python, "-c", PROBE], env)
    assert proc.stdout.strip() == SERVED_CHEAPLY, proc.stderr
    # same inode, same size, same mtime: only the ctime the kernel set tells the change
    _edit_in_place(demo.venv.site / "demo/greet.py", b"hello", b"HOWDY")
    proc = run([demo.venv.python, "-c", PROBE], env)
    assert proc.returncode == 1 and "hi x" not in proc.stdout
    assert "refusing to import demo.greet" in proc.stderr
    assert "changed since demo-fix:patch-1 was prepared" in proc.stderr


def test_other_facts_with_the_same_bytes_fall_back_to_the_hash(demo: Demo, tmp_path: Path) -> None:
    _, env = _install(demo, tmp_path)
    greet = demo.venv.site / "demo/greet.py"
    greet.chmod(greet.stat().st_mode)  # a new ctime, the same bytes
    proc = run([demo.venv.python, "-c", PROBE], env)
    assert proc.stdout.strip() == SERVED_HASHED, proc.stderr


def test_a_patched_source_edited_in_place_is_refused(demo: Demo, tmp_path: Path) -> None:
    root, env = _install(demo, tmp_path)
    assert _table(root)["demo.greet"]["patched_facts"] is not None
    (source,) = root.glob("_compatkit_runtime/src/*/demo/greet.py")
    _edit_in_place(source, b"hi ", b"yo ")
    proc = run([demo.venv.python, "-c", PROBE], env)
    assert proc.returncode == 1 and "yo x" not in proc.stdout
    assert "is not the patched source compatkit wrote" in proc.stderr


def test_no_facts_are_recorded_where_ctime_proves_nothing(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "rt"
    monkeypatch.setattr(statfacts, "SOUND", frozenset())  # as on vfat, FUSE or without mountinfo
    assert demo.run("runtime", "install", "demo-fix", "--dir", str(root))[0] == 0
    env = _env(tmp_path, PYTHONPATH=str(root))
    assert {(e["original_facts"], e["patched_facts"]) for e in _table(root).values()} == {
        (None, None)
    }
    proc = run([demo.venv.python, "-c", PROBE], env)
    assert proc.stdout.strip() == SERVED_HASHED, proc.stderr
    greet = demo.venv.site / "demo/greet.py"
    _own_copy(greet)
    _edit_in_place(greet, b"hello", b"HOWDY")
    assert "changed since" in run([demo.venv.python, "-c", PROBE], env).stderr


def test_facts_wait_for_the_clock_to_move_past_a_fresh_change(tmp_path: Path) -> None:
    now = time.time_ns()
    assert not statfacts._settled(now // 10**9 * 10**9)  # whole seconds, this one: not proven
    assert statfacts._settled((now // 10**9 - 3) * 10**9)  # whole seconds, 3 s ago
    started = time.monotonic()
    assert statfacts._settled(now - 1)  # fine timestamps: one tick of the coarse clock waited out
    assert time.monotonic() - started > 0.04
    path = tmp_path / "f.py"
    path.write_bytes(b"x = 1\n")
    assert statfacts.of_path(str(path), b"x = 2\n") is None  # not the bytes expected


def test_a_start_loads_the_pycs_written_at_install(demo: Demo, tmp_path: Path) -> None:
    root, env = _install(demo, tmp_path)
    pycs = {p: p.stat().st_mtime_ns for p in root.rglob("*.pyc")}
    (hook,) = root.glob("_compatkit_hook_*.py")
    assert sorted(p.name.split(".")[0] for p in pycs) == sorted(
        [hook.stem, "greet", "sitecustomize", "util"]
    )
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # as on this machine: Python writes no pyc itself
    proc = run([demo.venv.python, "-v", "-c", PROBE], env)
    assert proc.stdout.strip() == SERVED_CHEAPLY, proc.stderr
    for name in ("sitecustomize", "_compatkit_hook_"):
        assert f"code object from '{root}/__pycache__/{name}" in proc.stderr
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*.pyc")} == pycs  # none rewritten


def test_an_edit_through_a_shared_writable_mapping_is_caught_at_start(
    demo: Demo, tmp_path: Path
) -> None:
    """A process that holds the installed file mapped (shared, writable) and has dirtied its
    page before install writes through it again after: on ext4 and the like such a write
    leaves size, mtime and ctime as they were while the page stays dirty. Install writes the
    page back first (fsync: every mapping of it is write-protected again), so the write after
    it faults, and the kernel sets the ctime: the start hashes the file, and refuses it."""
    greet = demo.venv.site / "demo/greet.py"
    if statfacts._file_systems().get(greet.stat().st_dev) not in statfacts.SOUND:
        pytest.skip("site-packages is on a file system whose ctime proves nothing")
    _own_copy(greet)
    with open(greet, "r+b") as f, mmap.mmap(f.fileno(), 0) as mapped:
        mapped[0:1] = mapped[0:1]  # the page dirtied, its bytes the same
        root = tmp_path / "rt"
        code, _, err = demo.run("runtime", "install", "demo-fix", "--dir", str(root))
        assert code == 0, err
        assert _table(root)["demo.greet"]["original_facts"] is not None
        at = mapped.find(b"hello")
        mapped[at : at + 5] = b"HOWDY"  # the same size, through the mapping
        assert greet.read_bytes().count(b"HOWDY") == 1
        env = _env(tmp_path, PYTHONPATH=str(root))
        proc = run([demo.venv.python, "-c", PROBE], env)
        assert proc.returncode == 1 and "hi x" not in proc.stdout, proc.stdout
        assert "refusing to import demo.greet" in proc.stderr
        assert "changed since demo-fix:patch-1 was prepared" in proc.stderr
        code, _, err = demo.run("runtime", "verify", "--dir", str(root))
        assert code == 1 and "changed since prepare" in err, err


def test_no_facts_are_taken_on_tmpfs(tmp_path: Path) -> None:
    """tmpfs writes no page back, so a page once mapped writable stays so: every later write
    through that mapping leaves the ctime as it was. Its files are hashed at every import."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or statfacts._file_systems().get(shm.stat().st_dev) != "tmpfs":
        pytest.skip("no tmpfs at /dev/shm")
    path = Path(tempfile.mkdtemp(dir=shm)) / "f.py"
    try:
        path.write_bytes(b"x = 1\n")
        old = time.time_ns() - 10**9
        os.utime(path, ns=(old, old))
        assert statfacts.of_path(str(path), b"x = 1\n") is None
        on_disk = tmp_path / "f.py"  # the same on ext4 and the like: facts
        on_disk.write_bytes(b"x = 1\n")
        if statfacts._file_systems().get(on_disk.stat().st_dev) in statfacts.SOUND:
            assert statfacts.of_path(str(on_disk), b"x = 1\n") is not None
    finally:
        shutil.rmtree(path.parent)
