"""Installed files of any size are hashed streamed (issue 36, items 1 and 5).

Sparse files stand for gigabyte libraries (a libtorch ``.so``): no real disk is written. The
peak memory of a ``verify --pristine`` is measured in a child process (resource.getrusage),
so nothing the test process itself holds counts."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from compatkit import bounded
from compatkit.env.target import Environment
from compatkit.model.records import hash_bytes, row_for
from compatkit.ops.verify import pristine_problems
from helpers import Venv, build_wheel, run_cli

MIB = 1 << 20


def _streamed(path: Path) -> str:
    """The RECORD form of ``path``'s hash, by hashlib in chunks (not compatkit's code)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(8 * MIB), b""):
            h.update(block)
    return record_hash(h.digest())


def record_hash(digest: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _add_to_record(venv: Venv, dist: str, rows: list[str]) -> None:
    """Append rows to ``dist``'s RECORD (a new file, never through uv's hardlink)."""
    record = next(venv.site.glob(f"{dist}-*.dist-info")) / "RECORD"
    data = record.read_bytes() + "".join(f"{r}\n" for r in rows).encode()
    tmp = record.with_name("RECORD.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, record)


def _sparse(path: Path, size: int, tail: bytes = b"end") -> Path:
    """A sparse file of ``size`` bytes ending in ``tail``: no disk blocks but the last."""
    with open(path, "wb") as f:
        f.truncate(size - len(tail))
        f.seek(size - len(tail))
        f.write(tail)
    return path


@pytest.fixture
def small_venv(tmp_path: Path, make_venv: Callable[..., Venv]) -> Venv:
    venv = make_venv()
    venv.install(build_wheel(tmp_path, "big", "1.0", {"big/__init__.py": b""}))
    return venv


def _peak_rss(python: str, *args: str) -> tuple[int, int]:
    """(exit code, peak RSS in bytes) of ``compatkit --python PYTHON ARGS`` in a child."""
    code = (
        "import resource, sys\n"
        "from compatkit.cli.main import main\n"
        "rc = main(sys.argv[1:])\n"
        "print(rc, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "--python", python, *args],
        capture_output=True,
        text=True,
        check=False,
    )
    rc, peak = proc.stderr.splitlines()[-1].split()
    return int(rc), int(peak)


@pytest.mark.slow
def test_a_2gb_file_is_verified_in_little_memory(small_venv: Venv) -> None:
    big = _sparse(small_venv.site / "big" / "libbig.so", 2 << 30)
    _add_to_record(small_venv, "big", [f"big/libbig.so,{_streamed(big)},{2 << 30}"])
    for args in (["verify", "--pristine", "big"], ["verify", "--pristine", "--all"]):
        rc, peak = _peak_rss(small_venv.python, *args)
        assert rc == 0, args
        assert peak < 150 * MIB, (args, peak)
    with open(big, "r+b") as f:  # one byte changed, far into the file: found
        f.seek(1 << 30)
        f.write(b"x")
    rc, peak = _peak_rss(small_venv.python, "verify", "--pristine", "--all")
    assert rc == 1 and peak < 150 * MIB


@pytest.mark.slow
def test_a_file_over_4_gib(small_venv: Venv, capsys: pytest.CaptureFixture[str]) -> None:
    """Past 2**32 bytes: no size overflows, and no bound refuses it (nothing is kept)."""
    size = (4 << 30) + 3 * MIB + 5
    big = _sparse(small_venv.site / "big" / "huge.bin", size)
    _add_to_record(small_venv, "big", [f"big/huge.bin,{_streamed(big)},{size}"])
    code, out, err = run_cli(capsys, "--python", small_venv.python, "verify", "--pristine", "big")
    assert (code, err) == (0, ""), err
    assert out == "big 1.0: every file matches its RECORD\n"


def test_sparse_files_hash_as_their_bytes(tmp_path: Path) -> None:
    """A sparse file's holes are zeros: the digest is that of its bytes, whatever the chunk."""
    for size in (0, 1, MIB - 1, MIB, MIB + 1, 3 * MIB + 17):
        path = _sparse(tmp_path / f"s{size}", size, b"" if size < 3 else b"end")
        data = path.read_bytes()
        assert bounded.sha256(path) == hashlib.sha256(data).digest(), size
        assert record_hash(bounded.sha256(path, threads=True)) == hash_bytes(data)


@pytest.fixture
def changing(small_venv: Venv, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[int], None]]:
    """A 3 MiB file of ``big`` whose size changes after its first chunk is hashed."""
    path = small_venv.site / "big" / "data.bin"
    path.write_bytes(os.urandom(3 * MIB))
    _add_to_record(small_venv, "big", [row_for("big/data.bin", path.read_bytes()).raw])
    readv = os.readv

    def arrange(new_size: int) -> None:
        calls: list[int] = []

        def changing_readv(fd: int, buffers: list[memoryview]) -> int:
            n = readv(fd, buffers)
            if not calls and os.fstat(fd).st_size == 3 * MIB:
                calls.append(1)
                with open(path, "r+b") as f:  # the same inode: as a writer would
                    f.truncate(new_size)
            return n

        monkeypatch.setattr(os, "readv", changing_readv)

    yield arrange


@pytest.mark.parametrize("new_size", [MIB // 2, 3 * MIB + 10, 50 * MIB])
def test_a_file_that_changes_size_while_hashed_is_changed(
    small_venv: Venv, changing: Callable[[int], None], new_size: int
) -> None:
    """Shrinks below what was read, or grows a little or a lot: reported, never a crash."""
    dist = Environment.for_python(small_venv.python).require("big")
    changing(new_size)
    assert pristine_problems(dist) == ["big/data.bin does not match its RECORD hash"]


@pytest.mark.slow
def test_a_distribution_of_50000_files(
    small_venv: Venv, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = small_venv.site / "big" / "many"
    folder.mkdir()
    rows = []
    for i in range(50_000):
        data = f"x = {i}\n".encode()
        (folder / f"m{i}.py").write_bytes(data)
        rows.append(row_for(f"big/many/m{i}.py", data).raw)
    _add_to_record(small_venv, "big", rows)
    for args in (["--pristine", "big"], ["--pristine", "--all"]):
        code, _, err = run_cli(capsys, "--python", small_venv.python, "verify", *args)
        assert (code, err) == (0, ""), err
    for i in (7, 49_999):
        (folder / f"m{i}.py").write_bytes(b"changed\n")
    (folder / "m123.py").unlink()
    code, _, err = run_cli(capsys, "--python", small_venv.python, "verify", "--pristine", "--all")
    assert code == 1
    assert err.splitlines()[1:] == [
        "  - big 1.0: 1 file missing; 2 files match no RECORD",
        "    missing: big/many/m123.py",
        "    matches no RECORD: big/many/m7.py",
        "    matches no RECORD: big/many/m49999.py",
    ]
