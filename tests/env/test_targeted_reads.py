"""``status NAME`` and ``verify NAME`` read only the distribution the patchset targets, however
many others the environment holds (issue 36, item 4; bench/growth.py times it at 10, 100 and
400 distributions). ``revert NAME`` works from the state alone, without loading the patchset
(tests/project/test_route.py), so it still lists every distribution's state folder to find it.

Every path compatkit stats, opens or lists during the command is recorded (spies that call
the real functions); none may lie in another distribution's files or metadata.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compatkit.model.records import Record, Row, row_for
from helpers import DEMO_FILES, UV, Demo, Venv, build_wheel, install_demo, run_cli

OTHERS = 12


def _install_others(demo: Demo, tmp_path: Path) -> None:
    """OTHERS more distributions beside demo (``another-K`` 1.0, one module each, named to
    list before demo, as a scan in name order meets them), in one uv run."""
    folder = tmp_path / "others"
    folder.mkdir()
    wheels = [
        build_wheel(folder, f"another-{k}", "1.0", {f"another_{k}/__init__.py": b"x = 1\n"})
        for k in range(OTHERS)
    ]
    cmd = [UV or "uv", "pip", "install", "--python", demo.venv.python, "--no-deps"]
    subprocess.run([*cmd, *map(str, wheels)], check=True, capture_output=True)
    assert len(list(demo.venv.site.glob("another_*.dist-info"))) == OTHERS


@contextmanager
def _paths_touched(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every path given to os.stat / os.lstat / os.open / os.scandir / os.listdir meanwhile."""
    seen: list[str] = []

    def spy(real: Callable[..., object]) -> Callable[..., object]:
        def call(*args: object, **kwargs: object) -> object:
            if args and isinstance(args[0], (str, bytes, os.PathLike)):
                seen.append(os.fsdecode(args[0]))
            return real(*args, **kwargs)

        return call

    with monkeypatch.context() as m:
        for name in ("stat", "lstat", "open", "scandir", "listdir"):
            m.setattr(os, name, spy(getattr(os, name)))
        yield seen


def _others_in(seen: list[str]) -> list[str]:
    return sorted({p for p in seen if "another_" in p or "another-" in p})


@pytest.mark.parametrize("command", ["status", "verify"])
def test_a_named_command_reads_only_its_target(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """Before issue 36, verify stat-ed every distribution's state file
    (``<dist>.dist-info/compatkit/<name>.json``) to find the one holding the patchset's."""
    _install_others(demo, tmp_path)
    code, _, err = demo.run("apply", "demo-fix")
    assert code == 0, err
    with _paths_touched(monkeypatch) as seen:
        code, _, err = demo.run(command, "demo-fix")
    assert code == 0, err
    assert any("demo-1.0.dist-info" in p for p in seen)  # the spies saw the target's reads
    assert _others_in(seen) == []


def test_revert_finds_the_state_of_a_patchset_no_longer_known(demo: Demo, tmp_path: Path) -> None:
    """A patchset no longer known here is still found by its state (every distribution's
    state folder listed) and reverted."""
    _install_others(demo, tmp_path)
    pristine = (demo.venv.site / "demo" / "greet.py").read_bytes()
    code, _, err = demo.run("apply", "demo-fix")
    assert code == 0, err
    shutil.rmtree(demo.patchsets / "demo-fix")
    code, out, err = demo.run("revert", "demo-fix")
    assert code == 0, err
    assert (demo.venv.site / "demo" / "greet.py").read_bytes() == pristine
    assert "demo-fix" in out


def test_apply_reads_a_big_record_once(
    tmp_path: Path,
    make_venv: Callable[..., Venv],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """apply of a 1-file patch to a distribution of ``modules`` files builds row objects only
    for the RECORD rows it reads or writes: the plan edits the raw lines, and the ownership
    check before the write reads only the paths, once (the journal's saved RECORD is the
    bytes on disk). Before issue 36 it built three per line: the cost of a small patch grew
    with the distribution (bench/growth.py, G-apply)."""
    modules = 600
    files = {f"demo/mod_{i}.py": b"x = 1\n" for i in range(modules)}
    files.update(DEMO_FILES)
    venv, patchsets, _ = install_demo(tmp_path, make_venv, files)
    made = 0
    real = Row.from_raw.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Row], raw: str) -> Row:
        nonlocal made
        made += 1
        return real(cls, raw)  # type: ignore[no-any-return]

    monkeypatch.setattr(Row, "from_raw", classmethod(counting))
    code, _, err = run_cli(
        capsys, "--python", venv.python, "--patchset-dir", str(patchsets), "apply", "demo-fix"
    )
    assert code == 0, err
    assert 0 < made < 20  # the rows apply reads and writes, none for the lines it keeps


@given(
    paths=st.lists(st.sampled_from(["a.py", "b.py", "c/d.py", '"e,f.py"', "g.py"]), max_size=8),
    replaced=st.sets(st.sampled_from(["a.py", "c/d.py", "e,f.py", "x.py"])),
    removed=st.sets(st.sampled_from(["b.py", "g.py", "e,f.py", "y.py"])),
    appended=st.lists(st.sampled_from(["a.py", "n.py", "m,n.py"]), max_size=3),
    crlf=st.booleans(),
)
def test_a_lazy_record_edits_as_its_rows_do(
    paths: list[str],
    replaced: set[str],
    removed: set[str],
    appended: list[str],
    crlf: bool,
) -> None:
    """Record.edit on the raw lines of a parsed RECORD (no rows built) gives the record the
    row-by-row edit gives (the one before issue 36), quoted paths and repeats included; and
    its rows, rendering, lookups and equality are the materialized record's."""
    end = "\r\n" if crlf else "\n"
    data = "".join(f"{p},sha256=h{i},{i}{end}" for i, p in enumerate(paths)).encode()
    replace = {p: row_for(p, p.encode()) for p in replaced}
    append = [row_for(p, b"new") for p in appended]
    lazy = Record.parse(data)
    built = Record.parse(data)
    rows = [replace.get(r.path, r) for r in built.rows if r.path not in removed]
    present = {r.path for r in rows}
    rows += [r for r in append if r.path not in present]
    expected = Record(tuple(rows), built.terminator, built.final_newline or not built.rows)
    got = lazy.edit(replace, removed, append)
    assert got == expected
    assert got.render() == expected.render()
    assert got.rows == expected.rows
    assert got.paths() == expected.paths() == Record.paths_in(got.render())
    for p in ["a.py", "e,f.py", "n.py", "zz.py"]:
        first = next((i for i, r in enumerate(rows) if r.path == p), None)  # a path's first row
        assert got.index(p) == first
        assert got.get(p) == (None if first is None else rows[first])


# lines of a RECORD without quotes: the paths a lookup or an edit must tell apart (a prefix of
# another path, a folder, a bare path, an empty line, a stray carriage return, a character
# outside ASCII, a byte that is not UTF-8: "\udcc3" once decoded)
_LINES = [
    "a.py,h,1",
    "a.pyc,h,2",
    "a,h,3",
    "a",
    "a.py",
    "",
    "d/e.py,h,4",
    "d/e.py,x,5",
    "d/__pycache__/e.cpython-311.pyc,h,6",
    "d/e.py\r,h,7",
    ",h,8",
    "f/g/h.py,h,9",
    "é/f.py,h,10",
    "\udcc3/x.py,h,11",
]
_PROBES = [
    "a.py",
    "a",
    "a.pyc",
    "",
    "d",
    "d/",
    "d/e.py",
    "d/e.py\r",
    "d/__pycache__/e.x.pyc",
    "d/__pycache__/e.cpython-311.pyc",
    "f/g/h.py",
    "f/g",
    "f/x/h.py",
    "x/y.py",
    "a,h",
    "a.py\n",
    "n.py",
    "é/f.py",
    "\udcc3\udca9/f.py",
    "\udcc3/x.py",
    "\ud800/x.py",
]


@given(
    lines=st.lists(st.sampled_from(_LINES), min_size=1, max_size=10),
    replaced=st.sets(st.sampled_from(["a.py", "a", "d/e.py", "", "x.py", "\udcc3/x.py"])),
    removed=st.sets(
        st.sampled_from(
            ["a.pyc", "d/e.py", "d/__pycache__/e.cpython-311.pyc", "", "f/g/h.py", "é/f.py"]
        )
    ),
    appended=st.lists(
        st.sampled_from(["a.py", "n.py", "d/__pycache__/n.pyc", "f/n.py", "", "é/n.py"]), max_size=4
    ),
    ending=st.sampled_from(["\n", "\r\n", ""]),
)
def test_a_record_kept_as_its_text_reads_and_edits_as_its_rows_do(
    lines: list[str], replaced: set[str], removed: set[str], appended: list[str], ending: str
) -> None:
    """A RECORD without quote characters is kept as its text (no line split: issue 36,
    G-apply): each lookup, edit, rendering and comparison gives what the record of its rows
    gives, for paths that are prefixes of others, folders, bare paths, empty lines and
    repeats, and for paths no line has (in a folder no line is in, holding a comma or a line
    break)."""
    end = ending or "\n"
    data = (end.join(lines) + ending).encode("utf-8", "surrogateescape")
    text = Record.parse(data)
    rows = Record.parse(data).rows  # the record of its rows
    built = Record(rows, text.terminator, text.final_newline)
    for p in _PROBES:
        assert text.index(p) == built.index(p), p
        assert text.get(p) == built.get(p), p
        assert (p in text.owned()) == (p in built.paths()), p
    assert text == built and text.render() == built.render()
    replace = {p: row_for(p, p.encode("utf-8", "surrogateescape")) for p in replaced}
    append = [row_for(p, b"new") for p in appended]
    got, expected = text.edit(replace, removed, append), built.edit(replace, removed, append)
    for p in _PROBES:
        assert (got.index(p), got.get(p)) == (expected.index(p), expected.get(p)), p
    assert got == expected and got.render() == expected.render()
    assert got.rows == expected.rows


def _count_splits(monkeypatch: pytest.MonkeyPatch) -> list[Record]:
    """Each record split into its lines from now on, in order: into their texts
    (Record._raw_list) or into an index of their first fields (Record._first_fields, which a
    record builds only once it has searched for many paths)."""
    splits: list[Record] = []
    real, real_index = Record._raw_list, Record._first_fields

    def counting(self: Record) -> list[str]:
        splits.append(self)
        return real(self)

    def counting_index(self: Record) -> dict[bytes, list[int]]:
        splits.append(self)
        return real_index(self)

    monkeypatch.setattr(Record, "_raw_list", counting)
    monkeypatch.setattr(Record, "_first_fields", counting_index)
    return splits


def test_apply_splits_no_record_into_lines(
    tmp_path: Path,
    make_venv: Callable[..., Venv],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """apply of a 1-file patch reads and edits the RECORD as one text: no line list is made
    of it (issue 36, G-apply: splitting a 15,000-line RECORD cost more than the rest of the
    plan's work on it)."""
    files = {f"demo/mod_{i}.py": b"x = 1\n" for i in range(50)}
    files.update(DEMO_FILES)
    venv, patchsets, _ = install_demo(tmp_path, make_venv, files)
    splits = _count_splits(monkeypatch)
    code, _, err = run_cli(
        capsys, "--python", venv.python, "--patchset-dir", str(patchsets), "apply", "demo-fix"
    )
    assert code == 0, err
    assert splits == []


def test_the_transactions_ownership_check_splits_no_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A transaction re-reads RECORD under its lock and asks whether it lists a few paths: a
    view of the bytes, looked up, never split into lines (issue 36, G-apply), quoted paths
    included; the answer is what the record's rows say (issue 47: no state kept between
    parses, the answer a function of the bytes)."""
    data = "".join(f"pkg/m{i}.py,sha256=h{i},{i}\n" for i in range(50)).encode()
    data += b'"pkg/a,b.py",,\n"pkg/q.py",,\n'
    splits = _count_splits(monkeypatch)
    owned = Record.paths_in(data)
    probes = ["pkg/m0.py", "pkg/m49.py", "pkg/a,b.py", "pkg/q.py", "pkg/m5", "pkg/x.py", "a,b.py"]
    assert [p in owned for p in probes] == [True, True, True, True, False, False, False]
    assert splits == []
    rows = {r.path for r in Record.parse(data).rows}
    assert all((p in owned) == (p in rows) for p in probes) and set(owned) == rows
