"""The planner on an in-memory fake of the files interface: no disk, no venv.

``plan_apply`` / ``plan_revert`` read the target only through ``compatkit.env.plan.Files``, so here
they run on :class:`MemoryFiles` (a dict, plus the names that are symlinks), and the change
list they produce is executed on the same dict by :meth:`MemoryFiles.commit`, as
:func:`compatkit.env.txn.commit` would on disk. The disk-backed behaviour is covered end to end by
test_apply.py and test_crash.py; these tests pin the planning decisions themselves.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compatkit.env import plan
from compatkit.env.plan import Overlay, plan_apply, plan_revert
from compatkit.env.state import State, state_relpath
from compatkit.env.target import Dist
from compatkit.env.txn import Change
from compatkit.errors import CompatkitError
from compatkit.model.patchset import Patchset, parse_patch
from compatkit.model.paths import check_relpath
from compatkit.model.records import hash_bytes, row_for
from helpers import DEMO_FILES, PATCH_GREET, PATCH_UTIL

INFO = "demo-1.0.dist-info"
NOWHERE = Path("/nonexistent/compatkit-plan-test")  # any disk read would find nothing here


class MemoryFiles:
    """A site-packages in a dict. ``symlinks`` are names that are symlinks (never followed)."""

    def __init__(self, files: dict[str, bytes], symlinks: set[str] | None = None) -> None:
        self.files = dict(files)
        self.symlinks = symlinks or set()
        self.mtimes: dict[str, int] = {}
        self.reads: list[str] = []

    def read(self, relpath: str) -> bytes | None:
        self.reads.append(relpath)
        return self.files.get(relpath)

    def is_file(self, relpath: str) -> bool:
        return relpath in self.files

    def lexists(self, relpath: str) -> bool:
        return relpath in self.files or relpath in self.symlinks

    def listdir(self, relpath: str) -> list[str]:
        prefix = relpath + "/"
        return sorted({p[len(prefix) :].split("/")[0] for p in self.files if p.startswith(prefix)})

    def mtime_ns(self, relpath: str) -> int:
        return self.mtimes.get(relpath, 1_000)

    def size(self, relpath: str) -> int:
        return len(self.files.get(relpath, b""))

    def hash(self, relpath: str) -> str | None:
        data = self.files.get(relpath)
        return None if data is None else hash_bytes(data)

    def mode(self, relpath: str) -> int:
        return 0o644

    def check_inside(self, relpath: str, dirs_ok: set[str]) -> None:
        check_relpath(relpath)
        parts = relpath.split("/")
        for i in range(1, len(parts) + 1):
            if "/".join(parts[:i]) in self.symlinks:
                raise CompatkitError(
                    f"refused path {relpath!r}: {'/'.join(parts[:i])} is a symlink"
                )

    def commit(self, changes: list[Change]) -> None:
        """Run a change list as txn.commit does: writes and deletes, then renames."""
        for c in changes:
            if c.move_to is not None:
                self.files[c.move_to] = self.files.pop(c.relpath)
            elif c.data is None:
                self.files.pop(c.relpath, None)
            else:
                self.files[c.relpath] = c.data
                if c.mtime_ns is not None:
                    self.mtimes[c.relpath] = c.mtime_ns


def installed(extra: dict[str, bytes] | None = None) -> MemoryFiles:
    """demo 1.0 as an installer leaves it: its files and a RECORD listing them."""
    files = {**DEMO_FILES, **(extra or {})}
    meta = {f"{INFO}/METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"}
    rows = [row_for(p, d).raw for p, d in {**files, **meta}.items()] + [f"{INFO}/RECORD,,"]
    record = ("\n".join(rows) + "\n").encode()
    return MemoryFiles({**files, **meta, f"{INFO}/RECORD": record})


def demo_patchset(*texts: str) -> Patchset:
    patches = tuple(parse_patch(Path(f"{i:04d}.patch"), t.encode()) for i, t in enumerate(texts))
    digest = hashlib.sha256("".join(texts).encode()).hexdigest()
    return Patchset("demo-fix", "1.0.0", "", "demo", "==1.0", (), patches, NOWHERE, digest)


def dist() -> Dist:
    return Dist("demo", "1.0", NOWHERE / INFO, NOWHERE)


def apply_in_memory(files: MemoryFiles, ps: Patchset, excluded: list[str] | None = None) -> None:
    ov = Overlay(dist(), files)
    plan_apply(ov, ps, excluded or [], force=False)
    files.commit(ov.changes())


def state_of(files: MemoryFiles) -> State:
    data = files.read(state_relpath(dist(), "demo-fix"))
    assert data is not None
    return State.from_json(data)


def test_apply_plans_new_bytes_record_rows_state_and_one_backup_archive() -> None:
    files = installed()
    ov = Overlay(dist(), files)
    plan = plan_apply(ov, demo_patchset(PATCH_GREET, PATCH_UTIL), [], force=False)
    written = {c.relpath: c.data for c in ov.changes()}
    assert written["demo/greet.py"] == DEMO_FILES["demo/greet.py"].replace(b"'hello '", b"'hi '")
    assert b"line20 = 200\n" in (written["demo/util.py"] or b"")
    assert set(written) == {
        "demo/greet.py",
        "demo/util.py",
        f"{INFO}/RECORD",
        f"{INFO}/compatkit/demo-fix.json",
        f"{INFO}/compatkit/demo-fix/originals",
    }
    record = (written[f"{INFO}/RECORD"] or b"").decode()
    assert row_for("demo/greet.py", written["demo/greet.py"]).raw in record
    assert f"{INFO}/compatkit/demo-fix.json,," in record
    assert plan.state.applied == ["patch-1", "patch-2"]


def test_revert_plans_every_original_byte_back() -> None:
    files = installed()
    pristine = dict(files.files)
    ps = demo_patchset(PATCH_GREET, PATCH_UTIL)
    apply_in_memory(files, ps)
    assert files.files != pristine
    ov = Overlay(dist(), files)
    assert plan_revert(ov, state_of(files), force=False) == []
    files.commit(ov.changes())
    assert files.files == pristine


def test_bytecode_is_moved_aside_and_back() -> None:
    pyc = "demo/__pycache__/greet.cpython-311.pyc"
    files = installed({pyc: b"\x00compiled"})
    pristine = dict(files.files)
    apply_in_memory(files, demo_patchset(PATCH_GREET))
    assert pyc not in files.files
    moved = [p for p, d in files.files.items() if d == b"\x00compiled"]
    assert moved and moved[0].startswith(f"{INFO}/compatkit/demo-fix/pyc/")
    ov = Overlay(dist(), files)
    plan_revert(ov, state_of(files), force=False)
    files.commit(ov.changes())
    assert files.files == pristine


def test_a_symlinked_package_directory_is_refused() -> None:
    files = installed()
    files.symlinks.add("demo")
    with pytest.raises(CompatkitError) as info:
        plan_apply(Overlay(dist(), files), demo_patchset(PATCH_GREET), [], force=False)
    assert any("demo is a symlink" in p for p in info.value.problems)


def test_a_file_the_dist_does_not_own_is_refused() -> None:
    files = installed()
    del files.files["demo/greet.py"]
    files.files["demo/greet.py"] = DEMO_FILES["demo/greet.py"]
    record = files.files[f"{INFO}/RECORD"].decode().splitlines()
    files.files[f"{INFO}/RECORD"] = (
        "\n".join(r for r in record if not r.startswith("demo/greet.py,")) + "\n"
    ).encode()
    with pytest.raises(CompatkitError) as info:
        plan_apply(Overlay(dist(), files), demo_patchset(PATCH_GREET), [], force=False)
    assert info.value.problems == ["patch-1: demo/greet.py is not a file of demo"]


def test_a_file_edited_since_install_is_refused_unless_forced() -> None:
    files = installed()
    files.files["demo/util.py"] += b"# edited\n"
    ps = demo_patchset(PATCH_UTIL)
    with pytest.raises(CompatkitError) as info:
        plan_apply(Overlay(dist(), files), ps, [], force=False)
    assert "demo/util.py does not match its RECORD hash" in info.value.problems[0]
    plan_apply(Overlay(dist(), files), ps, [], force=True)


def test_revert_refuses_a_file_changed_after_the_apply() -> None:
    files = installed()
    apply_in_memory(files, demo_patchset(PATCH_GREET))
    files.files["demo/greet.py"] += b"# mine\n"
    problems = plan_revert(Overlay(dist(), files), state_of(files), force=False)
    assert problems == ["demo/greet.py changed since compatkit wrote it"]


def test_reapply_of_an_edited_patchset_plans_revert_and_apply_together() -> None:
    files = installed()
    pristine = dict(files.files)
    apply_in_memory(files, demo_patchset(PATCH_GREET))
    ov = Overlay(dist(), files)
    assert plan_revert(ov, state_of(files), force=False) == []
    plan_apply(ov, demo_patchset(PATCH_GREET, PATCH_UTIL), [], force=False)
    files.commit(ov.changes())
    assert state_of(files).applied == ["patch-1", "patch-2"]
    ov = Overlay(dist(), files)
    plan_revert(ov, state_of(files), force=False)
    files.commit(ov.changes())
    assert files.files == pristine


@pytest.mark.parametrize("searches", [None, 0])
def test_bytecode_of_every_interpreter_is_found_and_moved_aside_and_back(
    searches: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module's bytecode is every ``STEM.TAG.pyc`` and ``STEM.TAG.opt-N.pyc`` in its
    ``__pycache__``: this interpreter's, stale ones of others (another CPython, PyPy, a tag
    never seen), whatever order the folder lists them in, and nothing else (another module
    whose name starts with the same letters or stem, a file that is not ``.pyc``, a name with
    no tag). The folder is listed once for all the modules patched in it (issue 36, G-apply:
    its names are searched in one string instead of sorted). ``searches`` 0: the folder is
    indexed by stem at once, as after many searches (a patch of thousands of modules), and
    the same bytecode is found."""
    if searches is not None:
        monkeypatch.setattr(plan, "_SEARCHES", searches)
    cache = "demo/__pycache__"
    ours = [
        "greet.cpython-311.pyc",
        "greet.cpython-310.pyc",
        "greet.cpython-311.opt-1.pyc",
        "greet.cpython-311.opt-2.pyc",
        "greet.pypy311.pyc",
        "greet.some-future-tag.pyc",
        "util.cpython-39.pyc",
        "util.cpython-313.opt-1.pyc",
    ]
    others = [
        "greeting.cpython-311.pyc",  # another module
        "greet_x.cpython-311.pyc",
        "agreet.cpython-311.pyc",
        "greet.pyc",  # no tag
        "greet.cpython-311.pyc.tmp",  # not bytecode
        "greet.cpython-311.txt",
        "utility.cpython-311.pyc",
        "xutil.cpython-311.pyc",
    ]
    names = ours + others
    bytecode = {f"{cache}/{n}": b"\x00" + n.encode() for n in names[::-1]}  # unsorted order
    files = installed(bytecode)
    listed: list[str] = []
    real = files.listdir

    def listdir(relpath: str) -> list[str]:
        listed.append(relpath)
        return real(relpath)[::-1]

    files.listdir = listdir  # type: ignore[method-assign]
    ov = Overlay(dist(), files)
    assert ov.pycs("demo/greet.py") == sorted(f"{cache}/{n}" for n in ours if "greet." in n)
    assert ov.pycs("demo/util.py") == sorted(f"{cache}/{n}" for n in ours if "util." in n)
    assert ov.pycs("demo/__init__.py") == []
    assert listed == [cache]
    pristine = dict(files.files)
    apply_in_memory(files, demo_patchset(PATCH_GREET, PATCH_UTIL))
    assert sorted(n for n in names if f"{cache}/{n}" in files.files) == sorted(others)
    saved = {d for p, d in files.files.items() if p.startswith(f"{INFO}/compatkit/demo-fix/pyc/")}
    assert saved == {b"\x00" + n.encode() for n in ours}
    ov = Overlay(dist(), files)
    assert plan_revert(ov, state_of(files), force=False) == []
    files.commit(ov.changes())
    assert files.files == pristine


@given(
    names=st.lists(
        st.sampled_from(
            [
                "m.cpython-311.pyc",
                "m.cpython-311.opt-1.pyc",
                "m.b.cpython-311.pyc",  # the module m.b (a stem with a dot)
                "m.b.c.pypy311.pyc",
                "mb.cpython-311.pyc",
                "m.pyc",  # no tag
                "m.cpython-311.pyc.tmp",
                ".m.cpython-311.pyc",  # the module "" (a name starting with its dot)
                "x",
            ]
        ),
        unique=True,
    ),
    stem=st.sampled_from(["m", "m.b", "m.b.c", "mb", "", "x", "m.cpython-311"]),
)
def test_a_pycache_indexed_by_stem_finds_what_its_search_finds(names: list[str], stem: str) -> None:
    """A ``__pycache__`` searched often is indexed by stem (plan._pycs_by_stem): for every
    listing and module, the index gives the bytecode names the search of the listing gives,
    stems holding dots included."""
    listing = "\0" + "\0".join(names) + "\0"
    searched = plan._search_pycs(listing, stem)
    assert sorted(plan._pycs_by_stem(listing).get(stem, [])) == sorted(searched)
    assert all(n.startswith(f"{stem}.") and n.endswith(".pyc") for n in searched)
