"""compatkit.atomic: the one way compatkit writes a file, in site-packages or outside it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from compatkit import atomic
from helpers import Demo


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_replaces_without_writing_through_a_hardlink(tmp_path: Path) -> None:
    target, cache = tmp_path / "m.py", tmp_path / "cache-copy"
    target.write_bytes(b"old\n")
    os.link(target, cache)  # as uv links an installed file to its cache
    atomic.write(target, b"new\n")
    assert target.read_bytes() == b"new\n" and cache.read_bytes() == b"old\n"
    assert _names(tmp_path) == ["cache-copy", "m.py"]


def test_keeps_the_mode_of_the_file_it_replaces_and_the_umask_for_new_ones(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_bytes(b"#!/bin/sh\n")
    script.chmod(0o750)
    atomic.write(script, b"#!/bin/sh\necho hi\n")
    assert script.stat().st_mode & 0o7777 == 0o750
    old = os.umask(0o027)
    try:
        atomic._umask = None
        atomic.write(tmp_path / "new.txt", b"x")
    finally:
        os.umask(old)
        atomic._umask = None
    assert (tmp_path / "new.txt").stat().st_mode & 0o777 == 0o640


def test_exclusive_refuses_an_existing_name_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "patch-1.patch"
    atomic.write_text(path, "first\n", exclusive=True)
    with pytest.raises(FileExistsError):
        atomic.write_text(path, "second\n", exclusive=True)
    assert path.read_text() == "first\n" and _names(tmp_path) == ["patch-1.patch"]


def test_a_failed_write_leaves_neither_target_nor_temp(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "x.json"
    with pytest.raises(FileNotFoundError):
        atomic.write(path, b"{}")
    assert _names(tmp_path) == []


def test_planted_temp_names_cannot_capture_the_write(tmp_path: Path) -> None:
    """A symlink, a hardlink and a FIFO at guessable temp names are never opened."""
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"the user's file\n")
    folder = tmp_path / "pkg"
    folder.mkdir()
    target = folder / "m.py"
    target.write_bytes(b"old\n")
    os.symlink(outside, folder / f".m.py{atomic.TMP_SUFFIX}")
    os.link(outside, folder / f".m.py.{'0' * 12}{atomic.TMP_SUFFIX}")
    os.mkfifo(folder / f".m.py.fifo{atomic.TMP_SUFFIX}")
    atomic.write(target, b"new\n")
    assert target.read_bytes() == b"new\n" and outside.read_bytes() == b"the user's file\n"
    assert target.stat().st_ino != outside.stat().st_ino


def test_remove_temps_unlinks_leftovers_and_never_follows_a_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_bytes(b"k")
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "m.py").write_bytes(b"x")
    (folder / f".m.py.abc{atomic.TMP_SUFFIX}").write_bytes(b"half")
    os.symlink(outside, folder / f".m.py.def{atomic.TMP_SUFFIX}")
    (folder / f".other.py.abc{atomic.TMP_SUFFIX}").write_bytes(b"not ours")
    atomic.remove_temps(str(folder / "m.py"))
    assert _names(folder) == [f".other.py.abc{atomic.TMP_SUFFIX}", "m.py"]
    assert (outside / "keep").read_bytes() == b"k"


def test_apply_ignores_a_hardlink_and_a_fifo_planted_at_the_old_temp_name(demo: Demo) -> None:
    """Before: ``.greet.py.compatkit-tmp`` was opened with O_TRUNC, no O_EXCL: a planted
    hardlink made apply write into a file outside site-packages, and a FIFO hung it."""
    outside = demo.venv.root.parent / "outside.txt"
    outside.write_bytes(b"the user's file\n")
    pkg = demo.venv.site / "demo"
    os.link(outside, pkg / ".greet.py.compatkit-tmp")
    os.mkfifo(pkg / ".util.py.compatkit-tmp")
    proc = subprocess.run(
        demo.command("apply", "demo-fix"), capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert outside.read_bytes() == b"the user's file\n"
    assert b"'hi '" in (pkg / "greet.py").read_bytes()
    assert (pkg / "greet.py").stat().st_ino != outside.stat().st_ino


def test_txn_names_temp_files_as_atomic_does() -> None:
    from compatkit.env import txn

    assert txn.TMP_SUFFIX == atomic.TMP_SUFFIX
