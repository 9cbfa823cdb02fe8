"""Recovery treats its journal as untrusted input.

A real ``python -m compatkit apply`` is SIGKILLed in the middle of its writes, which leaves a
real journal in ``demo-1.0.dist-info``. Each test then corrupts or tampers with that journal
(or with the files it names) the way a crash, a bad disk or an attacker could, and runs the
next command. A journal that fails any check must be refused with one line naming it and
``compatkit recover --discard``, with nothing written anywhere, inside site-packages or out.
``compatkit recover --discard`` then deletes it and leaves every file as it is.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compatkit.env import txn
from compatkit.env.target import Dist
from compatkit.errors import CompatkitError
from compatkit.model import journal
from helpers import Demo
from helpers.reliability import FULL, FUZZ_EXAMPLES, CrashTarget, report, snapshot

INFO = "demo-1.0.dist-info"


class Crashed:
    """The demo venv with an apply killed half-way: some files written, the journal whole."""

    def __init__(self, demo: Demo, tmp_path: Path) -> None:
        self.demo = demo
        self.site = demo.venv.site
        self.target = CrashTarget(demo.venv, demo.patchsets, "demo-fix", "demo")
        self.pristine = self.target.snap()
        steps = self.target.count_steps("apply")
        assert self.target.inproc("revert", "demo-fix").code == 0
        for step in range(1, steps):
            assert self.target.child("apply", crash_at=step).returncode < 0
            if self.journal.is_dir() and self._written():
                break
            assert self.target.inproc("status", "demo-fix").code == 0  # roll back, try the next
        else:
            raise AssertionError("no crash point left a journal with files written")
        self.outside = tmp_path / "outside"
        self.outside.mkdir()
        (self.outside / "victim.txt").write_bytes(b"the user's file\n")

    def _written(self) -> bool:
        return (self.site / "demo/greet.py").read_bytes() != self.pristine["demo/greet.py"]

    @property
    def journal(self) -> Path:
        return self.site / INFO / txn.JOURNAL

    def doc(self) -> dict[str, object]:
        return json.loads((self.journal / "journal.json").read_bytes())  # type: ignore[no-any-return]

    def save(self, doc: object) -> None:
        (self.journal / "journal.json").write_text(json.dumps(doc))

    def entry(self, path: str) -> dict[str, object]:
        entries = self.doc()["entries"]
        assert isinstance(entries, list)
        return next(e for e in entries if e["path"] == path)

    def edit_entry(self, which: str, **changes: object) -> None:
        doc = self.doc()
        for e in doc["entries"]:  # type: ignore[attr-defined]
            if e["path"] == which:
                e.update(changes)
        self.save(doc)

    def everything(self) -> dict[str, bytes]:
        """Every byte below the venv's root and the outside folder, journal included."""
        out = {}
        for base in (self.demo.venv.root, self.outside):
            for p in sorted(base.rglob("*")):
                if p.is_file() and not p.is_symlink() and "__pycache__" not in p.parts:
                    out[str(p)] = p.read_bytes()
        return out

    def assert_refused(self, *why: str) -> None:
        """The next command refuses, naming the journal and the way out; nothing changes."""
        before = self.everything()
        result = self.target.inproc("status", "demo-fix")
        result.check_clean()
        assert result.code == 1, result.err
        first = result.err.splitlines()[0]
        assert str(self.journal) in first and "compatkit recover --discard demo" in first, first
        assert "nothing was written" in first, first
        for words in why:
            assert words in result.err, result.err
        assert self.everything() == before
        assert self.target.inproc("apply", "demo-fix").code == 1  # every command refuses
        assert self.everything() == before

    def assert_discard_leaves_files(self) -> None:
        files = {k: v for k, v in snapshot(self.site).items() if txn.JOURNAL not in k}
        result = self.target.inproc("recover", "--discard")
        assert result.code == 0, result.err
        assert "deleted the journal" in result.out
        assert not self.journal.exists()
        assert snapshot(self.site) == files
        assert self.target.inproc("status", "demo-fix").code == 0


@pytest.fixture
def crashed(demo: Demo, tmp_path: Path) -> Crashed:
    return Crashed(demo, tmp_path)


def test_a_sound_journal_is_rolled_back_by_recover(crashed: Crashed) -> None:
    result = crashed.target.inproc("recover")
    assert result.code == 0, result.err
    assert "demo 1.0: rolled back an interrupted compatkit run" in result.out
    assert crashed.target.snap() == crashed.pristine
    again = crashed.target.inproc("recover", "--json")
    assert json.loads(again.out)["recovered"] == []
    assert "nothing to recover" in crashed.target.inproc("recover").out


def test_dotdot_path_is_refused_and_nothing_is_written_outside(crashed: Crashed) -> None:
    victim = os.path.relpath(crashed.outside / "victim.txt", crashed.site)
    assert victim.startswith("../")
    crashed.edit_entry("demo/greet.py", path=victim)
    crashed.assert_refused("it contains '..'")
    assert (crashed.outside / "victim.txt").read_bytes() == b"the user's file\n"
    crashed.assert_discard_leaves_files()


def test_absolute_path_is_refused(crashed: Crashed) -> None:
    crashed.edit_entry("demo/greet.py", path=str(crashed.outside / "victim.txt"))
    crashed.assert_refused("it is absolute")


def test_a_created_file_outside_the_dist_is_refused(crashed: Crashed) -> None:
    """A "remove this created file" entry naming another package's file."""
    (crashed.site / "other").mkdir()
    (crashed.site / "other" / "keep.py").write_bytes(b"keep = 1\n")
    doc = crashed.doc()
    doc["entries"].insert(0, {"path": "other/keep.py", "before": None, "after": None})  # type: ignore[attr-defined]
    crashed.save(doc)
    crashed.assert_refused("other/keep.py is outside demo's packages")
    assert (crashed.site / "other" / "keep.py").exists()


def test_truncated_journal_is_refused(crashed: Crashed) -> None:
    index = crashed.journal / "journal.json"
    index.write_bytes(index.read_bytes()[: index.stat().st_size // 2])
    crashed.assert_refused("not valid JSON")
    crashed.assert_discard_leaves_files()


@pytest.mark.parametrize(
    "garbage",
    [b"\x00\xff" * 100, b"[]", b'{"entries": 3}', b"[" * 5000 + b"]" * 5000, b""],
    ids=["binary", "list", "entries-not-list", "nested-5000", "empty"],
)
def test_garbage_journal_is_refused(crashed: Crashed, garbage: bytes) -> None:
    (crashed.journal / "journal.json").write_bytes(garbage)
    crashed.assert_refused()


def test_shifted_offsets_are_refused(crashed: Crashed) -> None:
    span = crashed.entry("demo/greet.py")["before"]
    assert isinstance(span, list)
    start, length = span
    crashed.edit_entry("demo/greet.py", before=[start + 1, length])
    crashed.assert_refused("do not match their SHA-256")


def test_offsets_past_the_blob_file_are_refused(crashed: Crashed) -> None:
    crashed.edit_entry("demo/greet.py", before=[0, 10**12])
    crashed.assert_refused("outside the")


def test_wrong_hash_is_refused(crashed: Crashed) -> None:
    blobs = crashed.journal / "blobs"
    data = bytearray(blobs.read_bytes())
    data[0] ^= 0x01
    blobs.write_bytes(bytes(data))
    crashed.assert_refused("do not match their SHA-256")


def test_missing_blob_file_is_refused(crashed: Crashed) -> None:
    (crashed.journal / "blobs").unlink()
    crashed.assert_refused("cannot read its blobs")


def test_journal_of_an_older_format_is_refused(crashed: Crashed) -> None:
    doc = crashed.doc()
    del doc["format"]
    crashed.save(doc)
    crashed.assert_refused("not written by this compatkit")


def test_journal_of_another_distribution_is_refused(crashed: Crashed) -> None:
    doc = crashed.doc()
    doc["dist_info"] = "other-1.0.dist-info"
    crashed.save(doc)
    crashed.assert_refused("it belongs to 'other-1.0.dist-info'")


def test_a_symlinked_package_dir_is_refused(crashed: Crashed) -> None:
    """After the crash the package folder is swapped for a symlink to the user's folder."""
    real = crashed.site / "demo"
    shutil.copytree(real, crashed.outside / "demo")
    shutil.rmtree(real)
    real.symlink_to(crashed.outside / "demo")
    crashed.assert_refused("is a symlink")
    assert (crashed.outside / "demo" / "greet.py").read_bytes() != crashed.pristine["demo/greet.py"]


def test_a_symlinked_journal_is_refused_and_discard_only_unlinks_it(crashed: Crashed) -> None:
    elsewhere = crashed.outside / "journal"
    shutil.move(str(crashed.journal), elsewhere)
    crashed.journal.symlink_to(elsewhere)
    crashed.assert_refused("not a folder")
    assert crashed.target.inproc("recover", "--discard").code == 0
    assert not os.path.lexists(crashed.journal) and (elsewhere / "journal.json").is_file()


def test_discard_deletes_a_journal_holding_more_than_compatkit_writes(crashed: Crashed) -> None:
    """A finished journal's known files are unlinked by name; anything else in the folder (a
    file, a folder with files) still goes, through shutil.rmtree."""
    (crashed.journal / "stray.txt").write_bytes(b"x")
    (crashed.journal / "sub").mkdir()
    (crashed.journal / "sub" / "deeper.txt").write_bytes(b"y")
    crashed.assert_discard_leaves_files()
    assert not os.path.lexists(crashed.journal.with_name(f"{txn.JOURNAL}.del"))


def test_a_committed_journal_left_behind_is_removed_by_the_next_command(crashed: Crashed) -> None:
    """A ``.del`` journal (committed, its removal interrupted) and a ``.tmp`` one (never in
    force) are deleted, with whatever they hold, before the next transaction."""
    info = crashed.journal.parent
    assert crashed.target.inproc("recover").code == 0  # rolled back: the files as before
    for suffix in (".del", ".tmp"):
        (info / f"{txn.JOURNAL}{suffix}" / "sub").mkdir(parents=True)
        (info / f"{txn.JOURNAL}{suffix}" / "sub" / "blobs").write_bytes(b"z")
    assert crashed.target.inproc("apply", "demo-fix").code == 0
    assert crashed.target.inproc("revert", "demo-fix").code == 0
    left = sorted(p.name for p in info.iterdir() if p.name.startswith(txn.JOURNAL))
    assert left == [], left


def test_a_file_changed_after_the_crash_is_refused(crashed: Crashed) -> None:
    """The user edited a journaled file after the crash: rolling back would lose the edit."""
    path = crashed.site / "demo" / "greet.py"
    tmp = path.with_name("greet.py.edit")
    tmp.write_bytes(path.read_bytes() + b"# my edit\n")
    os.replace(tmp, path)  # a new inode: never an edit through uv's hardlink
    crashed.assert_refused("demo/greet.py holds neither")
    crashed.assert_discard_leaves_files()
    assert path.read_bytes().endswith(b"# my edit\n")


def test_a_path_named_twice_is_refused(crashed: Crashed) -> None:
    doc = crashed.doc()
    doc["entries"].append(dict(doc["entries"][0]))  # type: ignore[attr-defined, index]
    crashed.save(doc)
    crashed.assert_refused("is named twice")


# -- fuzzing: every mutation is refused with nothing written, or restores the pristine bytes


def _mutations() -> st.SearchStrategy[tuple[str, object]]:
    paths = st.sampled_from(
        ["../x", "/etc/passwd", "demo/../../x", "demo/greet.py", "demo/util.py", INFO + "/RECORD",
         "other.dist-info/RECORD", "demo/new.py", "a\x00b", "", ".", "demo//x", "demo\\x"]
    )  # fmt: skip
    values = st.one_of(
        st.none(), st.integers(-(2**70), 2**70), st.text(max_size=8), paths,
        st.lists(st.integers(-5, 10**6), max_size=3), st.booleans(),
        st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    )  # fmt: skip
    keys = st.sampled_from(
        ["path", "before", "sha256", "after", "mode", "mtime_ns", "move_to", "x"]
    )
    return st.tuples(keys, values)


def _tree(site: Path) -> dict[str, bytes]:
    files = sorted(p for p in site.rglob("*") if p.is_file())
    return {str(p.relative_to(site)): p.read_bytes() for p in files}


@pytest.mark.slow
def test_fuzzed_journals_never_write_what_they_should_not(crashed: Crashed, tmp_path: Path) -> None:
    saved = tmp_path / "saved-site"
    shutil.copytree(crashed.site, saved, symlinks=True)
    work = tmp_path / "work" / "site"
    pristine = {k: v for k, v in crashed.pristine.items() if "__pycache__" not in k}
    doc = crashed.doc()
    entries = doc["entries"]
    assert isinstance(entries, list)
    counts = {"refused": 0, "recovered": 0}

    @settings(
        max_examples=FUZZ_EXAMPLES // 4, deadline=None, database=None, derandomize=not FULL,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(st.lists(st.tuples(st.integers(0, len(entries) - 1), _mutations()), max_size=3))
    def one(mutations: list[tuple[int, tuple[str, object]]]) -> None:
        shutil.rmtree(work.parent, ignore_errors=True)
        shutil.copytree(saved, work, symlinks=True)
        mutated = json.loads(json.dumps(doc))
        for index, (key, value) in mutations:
            mutated["entries"][index][key] = value
        (work / INFO / txn.JOURNAL / "journal.json").write_text(json.dumps(mutated))
        before = _tree(work)
        dist = Dist.at(work / INFO)
        assert dist is not None
        try:
            assert txn.recover(dist)
        except journal.JournalError as exc:
            assert "\n" not in exc.message and "recover --discard" in exc.message
            assert _tree(work) == before
            counts["refused"] += 1
        except CompatkitError as exc:  # pragma: no cover - a failure, shown with its message
            raise AssertionError(f"not a JournalError: {exc.message}") from None
        else:
            now = {k: v for k, v in _tree(work).items() if "__pycache__" not in k}
            assert now == pristine
            counts["recovered"] += 1
        assert sorted(os.listdir(work.parent)) == ["site"]  # nothing written beside the root

    one()
    assert counts["refused"] > 0 and counts["recovered"] > 0
    report("journal/fuzz", **counts)
