"""Installed files of any size are hashed streamed (issue 36, items 1 and 5).

Sparse files stand for gigabyte libraries (a libtorch ``.so``): no real disk is written. The
peak memory of a ``pristine`` is measured in a child process (resource.getrusage),
so nothing the test process itself holds counts."""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from compatkit import bounded
from compatkit.env.target import DiskFiles, Environment
from compatkit.model.records import Record, hash_bytes, row_for
from compatkit.ops.pristine import check
from compatkit.runtime import statfacts
from helpers import DEMO_FILES, Demo, Venv, build_wheel, install_demo, run_cli
from helpers.bigfiles import MIB, add_to_record, child_peak, peak_rss, record_hash, sparse, streamed


@pytest.fixture
def small_venv(tmp_path: Path, make_venv: Callable[..., Venv]) -> Venv:
    venv = make_venv()
    venv.install(build_wheel(tmp_path, "big", "1.0", {"big/__init__.py": b""}))
    return venv


@pytest.mark.slow
def test_a_2gb_file_is_verified_in_little_memory(small_venv: Venv) -> None:
    big = sparse(small_venv.site / "big" / "libbig.so", 2 << 30)
    add_to_record(small_venv.site, "big", [f"big/libbig.so,{streamed(big)},{2 << 30}"])
    for args in (["pristine", "big"], ["pristine", "--all"]):
        rc, peak = peak_rss(small_venv.python, *args)
        assert rc == 0, args
        assert peak < 150 * MIB, (args, peak)
    with open(big, "r+b") as f:  # one byte changed, far into the file: found
        f.seek(1 << 30)
        f.write(b"x")
    rc, peak = peak_rss(small_venv.python, "pristine", "--all")
    assert rc == 1 and peak < 150 * MIB


@pytest.mark.slow
def test_a_file_over_4_gib(small_venv: Venv, capsys: pytest.CaptureFixture[str]) -> None:
    """Past 2**32 bytes: no size overflows, and no bound refuses it (nothing is kept)."""
    size = (4 << 30) + 3 * MIB + 5
    big = sparse(small_venv.site / "big" / "huge.bin", size)
    add_to_record(small_venv.site, "big", [f"big/huge.bin,{streamed(big)},{size}"])
    code, out, err = run_cli(capsys, "--python", small_venv.python, "pristine", "big")
    assert (code, err) == (0, ""), err
    assert out == "big 1.0: every file matches its RECORD\n"


def test_sparse_files_hash_as_their_bytes(tmp_path: Path) -> None:
    """A sparse file's holes are zeros: the digest is that of its bytes, whatever the chunk."""
    for size in (0, 1, MIB - 1, MIB, MIB + 1, 3 * MIB + 17):
        path = sparse(tmp_path / f"s{size}", size, b"" if size < 3 else b"end")
        data = path.read_bytes()
        assert bounded.sha256(path) == hashlib.sha256(data).digest(), size
        assert record_hash(bounded.sha256(path)) == hash_bytes(data)


@pytest.fixture
def changing(small_venv: Venv, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[int], None]]:
    """A 3 MiB file of ``big`` whose size changes after its first chunk is hashed."""
    path = small_venv.site / "big" / "data.bin"
    path.write_bytes(os.urandom(3 * MIB))
    add_to_record(small_venv.site, "big", [row_for("big/data.bin", path.read_bytes()).raw])
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
    env = Environment.for_python(small_venv.python)
    changing(new_size)
    (report,) = check(env, ["big"]).reports
    assert report.foreign == ["big/data.bin"] and report.line().endswith("1 file matches no RECORD")


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
    add_to_record(small_venv.site, "big", rows)
    for args in (["big"], ["--all"]):
        code, _, err = run_cli(capsys, "--python", small_venv.python, "pristine", *args)
        assert (code, err) == (0, ""), err
    for i in (7, 49_999):
        (folder / f"m{i}.py").write_bytes(b"changed\n")
    (folder / "m123.py").unlink()
    code, _, err = run_cli(capsys, "--python", small_venv.python, "pristine", "--all")
    assert code == 1
    assert err.splitlines()[1:] == [
        "  - big 1.0: 1 file missing; 2 files match no RECORD",
        "    missing: big/many/m123.py",
        "    matches no RECORD: big/many/m7.py",
        "    matches no RECORD: big/many/m49999.py",
    ]


@pytest.mark.slow
def test_a_wheel_holding_a_2gb_file_is_built_in_little_memory(
    tmp_path: Path, make_venv: Callable[..., Venv]
) -> None:
    """``compatkit wheel`` copies an unpatched 2 GB library of the source wheel in pieces,
    hashed on the way, and writes the wheel through a temp file: its memory stays small. The
    source is an unpacked copy in uv's cache (a zipped one of 2 GB of zeros would be refused
    as a zip bomb), its library and the installed one the same sparse file."""
    venv, patchsets, whl = install_demo(tmp_path, make_venv, {**DEMO_FILES, "demo/big.so": b"x"})
    unpacked = tmp_path / "uv" / "archive-v0" / "demo"
    with zipfile.ZipFile(whl) as zf:
        zf.extractall(unpacked)
    size = 2 << 30
    for root in (unpacked, venv.site):  # the installed release holds the same bytes
        big = sparse(root / "demo" / "big.so", size)
        add_to_record(root, "demo", [f"demo/big.so,{streamed(big)},{size}"])
    env = {
        "COMPATKIT_NO_INDEX": "1",
        "COMPATKIT_CACHE_DIR": str(tmp_path / "ck-cache"),
        "UV_CACHE_DIR": str(tmp_path / "uv"),
        "PIP_CACHE_DIR": str(tmp_path / "no-pip-cache"),
    }
    out = tmp_path / "out"
    args = ["--patchset-dir", str(patchsets), "wheel", "demo-fix", "-o", str(out)]
    rc, peak = peak_rss(venv.python, *args, env=env)
    assert rc == 0 and peak < 150 * MIB, (rc, peak)
    (built,) = out.glob("*.whl")
    with zipfile.ZipFile(built) as zf:
        (record,) = [n for n in zf.namelist() if n.endswith(".dist-info/RECORD")]
        rows = {r.path: r for r in Record.parse(zf.read(record)).rows}
        assert (rows["demo/big.so"].hash, rows["demo/big.so"].size) == (streamed(big), size)
        h = hashlib.sha256()
        with zf.open("demo/big.so") as f:
            while block := f.read(8 * MIB):
                h.update(block)
    assert record_hash(h.digest()) == streamed(big)


@pytest.mark.slow
def test_an_sbom_of_an_environment_holding_a_2gb_file_takes_little_memory(
    small_venv: Venv, tmp_path: Path
) -> None:
    big = sparse(small_venv.site / "big" / "libbig.so", 2 << 30)
    add_to_record(small_venv.site, "big", [f"big/libbig.so,{streamed(big)},{2 << 30}"])
    rc, peak = peak_rss(small_venv.python, "sbom", "-o", str(tmp_path / "sbom.json"))
    assert rc == 0 and peak < 150 * MIB, (rc, peak)
    doc = json.loads((tmp_path / "sbom.json").read_text())
    assert [c["name"] for c in doc["components"] if c["name"] == "big"] == ["big"]


@pytest.mark.slow
def test_diff_beside_an_unedited_2gb_file_takes_little_memory(
    tmp_path: Path, make_venv: Callable[..., Venv]
) -> None:
    """``compatkit diff`` hashes every file against RECORD to find the edited ones: streamed,
    and only an edited one is read."""
    venv = make_venv()
    wheel = build_wheel(tmp_path, "big", "1.0", {"big/__init__.py": b"x = 1\n"})
    venv.install(wheel)
    big = sparse(venv.site / "big" / "libbig.so", 2 << 30)
    add_to_record(venv.site, "big", [f"big/libbig.so,{streamed(big)},{2 << 30}"])
    edited = venv.site / "big" / "__init__.py"
    edited.with_name("new.tmp").write_bytes(b"x = 2\n")  # never through uv's hardlink
    os.replace(edited.with_name("new.tmp"), edited)
    env = {"COMPATKIT_NO_INDEX": "1", "COMPATKIT_CACHE_DIR": str(tmp_path / "ck-cache")}
    args = ["diff", "big", "--patchset", "big-fix", "-o", str(tmp_path / "ps")]
    args += ["--id", "patch-1", "--wheel-dir", str(tmp_path)]
    rc, peak = peak_rss(venv.python, *args, env=env)
    assert rc == 0 and peak < 150 * MIB, (rc, peak)
    (patch,) = (tmp_path / "ps").rglob("*.patch")
    assert "-x = 1\n+x = 2\n" in patch.read_text()


def test_stat_facts_read_no_more_than_the_bytes_expected(tmp_path: Path) -> None:
    """``runtime install`` takes the stat facts of each file a patch edits by reading it
    against the bytes it should hold: one grown to 2 GB is read no further than that (and,
    not holding them, gets no facts)."""
    big = sparse(tmp_path / "m.py", 2 << 30)
    if statfacts._file_systems().get(big.stat().st_dev) not in statfacts.SOUND:
        pytest.skip("no stat facts are taken on this file system")
    body = "from compatkit.runtime import statfacts\nresult = statfacts.of_path(sys.argv[1], b'x')"
    result, peak = child_peak(body, str(big))
    assert (result, peak < 150 * MIB) == ("None", True), (result, peak)


def hash_all(
    jobs: list[tuple[DiskFiles, str]], sizes: list[int | None] | None = None
) -> list[str | None]:
    """Each job's hash through :class:`compatkit.ops.pristine.Hashing` (sizes: as RECORD
    gives them; None: stat'ed)."""
    from compatkit.ops import pristine

    with pristine.Hashing() as hashing:
        for (files, path), size in zip(jobs, sizes or [None] * len(jobs), strict=True):
            hashing.add(files, path, size)
        return hashing.results()


@pytest.mark.parametrize("other_thread", [False, True], ids=["forked", "spawned"])
def test_worker_processes_hash_as_one_process_does(tmp_path: Path, other_thread: bool) -> None:
    """Many files go to worker processes in batches, largest first; each answer comes back
    to its own job, a missing file as None and a FIFO as not read, exactly as hashing in this
    process gives them. With another thread running (a progress bar's), the workers are
    started afresh rather than forked (fork with threads can deadlock; 3.12 warns)."""
    import threading

    from compatkit.ops import pristine

    root = tmp_path / "site"
    root.mkdir()
    names = []
    for i in range(300):  # several batches: BATCH_FILES small files, and big ones alone
        size = (40 << 20) if i % 97 == 0 else i * 37
        path = root / f"f{i}.bin"
        if size > MIB:
            sparse(path, size, tail=str(i).encode())
        else:
            path.write_bytes(bytes([i % 251]) * size)
        names.append(path.name)
    os.mkfifo(root / "pipe")
    names += ["missing.py", "pipe"]
    jobs = [(DiskFiles(root), name) for name in names]
    assert len(jobs) >= pristine.SERIAL_BELOW and pristine.workers() >= 1
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    if other_thread:
        other.start()
    try:
        pooled = hash_all(jobs)
    finally:
        stop.set()
        if other_thread:
            other.join()
    serial = pristine._hash_batch(jobs)

    assert pooled == serial
    # sizes as a RECORD may give them, wrong ones included (a big file said to be small, a
    # small one big, none given): they only order and batch the work; every hash is the same
    wrong = [None if i % 3 == 0 else (40 << 20) - i * 37 for i in range(len(jobs))]
    assert hash_all(jobs, wrong) == serial
    assert pooled[names.index("f5.bin")] == streamed(root / "f5.bin")
    assert pooled[names.index("f97.bin")] == streamed(root / "f97.bin")
    assert pooled[-2] is None
    assert pooled[-1] is not None and pooled[-1].startswith(pristine.NOT_READ)


@pytest.mark.slow
def test_apply_refuses_an_edited_2gb_file_in_little_memory(demo: Demo) -> None:
    """apply's RECORD check hashes a patched file in chunks: one replaced by a 2 GiB (sparse)
    file since install is refused without being read whole (issue 36, item 1)."""
    util = demo.venv.site / "demo" / "util.py"
    tmp = sparse(util.with_name("util.py.tmp"), 2 << 30)
    os.replace(tmp, util)  # a new file: never through uv's hardlink
    greet = (demo.venv.site / "demo" / "greet.py").read_bytes()
    where = ["--patchset-dir", str(demo.patchsets)]
    rc, peak = peak_rss(demo.venv.python, *where, "apply", "demo-fix")
    assert rc == 1 and peak < 150 * MIB, (rc, peak)
    code, _, err = demo.run("apply", "demo-fix")
    assert code == 1 and "demo/util.py does not match its RECORD hash" in err, err
    assert (demo.venv.site / "demo" / "greet.py").read_bytes() == greet  # nothing written
    assert util.stat().st_size == 2 << 30


def test_pristine_takes_the_sizes_to_schedule_from_record(
    small_venv: Venv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pristine --all`` orders and batches the files by the sizes RECORD gives, without a
    stat of each before hashing starts (a serial system call per file, before the first big
    file is started; docs/benchmarks.md, P3-all); a row without a size is stat'ed; a file
    whose size changed is found all the same."""
    from compatkit.ops import pristine

    folder = small_venv.site / "big" / "many"
    folder.mkdir()
    rows = []
    for i in range(200):  # workers: more than SERIAL_BELOW files
        data = f"x = {i}\n".encode() * (i + 1)
        (folder / f"m{i}.py").write_bytes(data)
        row = row_for(f"big/many/m{i}.py", data).raw
        rows.append(row.rpartition(",")[0] + "," if i == 5 else row)  # m5: no size given
    add_to_record(small_venv.site, "big", rows)
    sized: list[str] = []
    size = DiskFiles.size

    def spy(self: DiskFiles, relpath: str) -> int:
        sized.append(relpath)
        return size(self, relpath)

    monkeypatch.setattr(DiskFiles, "size", spy)
    env = Environment.for_python(str(small_venv.python))
    assert pristine.check(env).reports == []
    assert sized == ["big/many/m5.py"]
    (folder / "m9.py").write_bytes(b"grown\n" * 100_000)  # RECORD's size is now wrong
    (report,) = pristine.check(env).reports
    assert report.foreign == ["big/many/m9.py"]


def test_pristine_starts_the_largest_files_while_records_are_still_read(
    tmp_path: Path, make_venv: Callable[..., Venv], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once enough files are known for worker processes, a big file is hashed as soon as its
    RECORD row is read, not after the last RECORD (on a real ML image the largest file alone
    decides when the work ends; docs/benchmarks.md, P3-all): its batch goes out before the
    next distribution's RECORD is read, and every answer is the same."""
    from compatkit.env.target import Dist
    from compatkit.ops import pristine

    venv = make_venv()
    many = {f"aaa/m{i}.py": f"x = {i}\n".encode() for i in range(pristine.SERIAL_BELOW + 10)}
    venv.install(build_wheel(tmp_path, "aaa", "1.0", many))
    venv.install(build_wheel(tmp_path, "zzz", "1.0", {"zzz/__init__.py": b""}))
    big = sparse(venv.site / "aaa" / "lib.so", pristine.BATCH_BYTES + 1)
    add_to_record(venv.site, "aaa", [f"aaa/lib.so,{streamed(big)},{pristine.BATCH_BYTES + 1}"])
    events: list[tuple[str, str]] = []
    read, send = Dist.read_record, pristine.Hashing._send

    def reading(self: Dist) -> Record:
        events.append(("read", self.name))
        return read(self)

    def sending(self: pristine.Hashing, batch: list[int]) -> None:
        events.append(("send", " ".join(self.jobs[i][1] for i in batch)))
        send(self, batch)

    monkeypatch.setattr(Dist, "read_record", reading)
    monkeypatch.setattr(pristine.Hashing, "_send", sending)
    monkeypatch.setattr(pristine, "workers", lambda: 2)  # a pool on a one-CPU machine too
    env = Environment.for_python(str(venv.python))
    assert pristine.check(env, ["aaa", "zzz"]).reports == []
    assert events.index(("send", "aaa/lib.so")) < events.index(("read", "zzz")), events
    sent = [path for what, paths in events if what == "send" for path in str(paths).split()]
    assert len(sent) == len(set(sent)) and {*many, "aaa/lib.so"} <= set(sent)  # each once
    with open(big, "r+b") as f:  # one byte changed far into the big file: found
        f.seek(20 << 20)
        f.write(b"!")
    (report,) = pristine.check(env, ["aaa", "zzz"]).reports
    assert report.foreign == ["aaa/lib.so"]
