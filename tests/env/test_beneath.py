"""compatkit.env.beneath.Tree: writes below a root through folder descriptors (issue 46)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from compatkit.env.beneath import MAX_OPEN, Swapped, Tree


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_more_folders_than_it_keeps_open_all_land_in_place(tmp_path: Path) -> None:
    """Past MAX_OPEN folders the least recently used descriptor is closed and reached anew;
    every file lands where its path says, and closing the tree closes every descriptor."""
    before = _open_fds()
    paths = [f"p{i % 7}/d{i}/sub/f{i}.py" for i in range(3 * MAX_OPEN)]
    with Tree(tmp_path) as tree:
        for i, path in enumerate(paths):
            tree.write(path, f"{i}\n".encode(), 0o640)
        assert _open_fds() <= before + MAX_OPEN + 1
        for i, path in enumerate(paths):  # again, in the same order: every one evicted since
            tree.write(path, f"{i}!\n".encode(), 0o640)
    assert _open_fds() == before
    for i, path in enumerate(paths):
        assert (tmp_path / path).read_bytes() == f"{i}!\n".encode()
        assert (tmp_path / path).stat().st_mode & 0o777 == 0o640


def test_a_renamed_folder_is_reached_anew_by_its_old_name(tmp_path: Path) -> None:
    with Tree(tmp_path) as tree:
        tree.write("a/x.py", b"1", 0o644)
        tree.rename("a", "b")
        tree.write("a/y.py", b"2", 0o644)  # a new folder "a", not the renamed one
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["y.py"]
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["x.py"]


def test_a_file_on_the_way_is_refused_and_a_link_is_removed_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "keep").mkdir(parents=True)
    (outside / "keep" / "data").write_text("precious\n")
    root = tmp_path / "root"
    root.mkdir()
    (root / "file").write_text("")
    (root / "link").symlink_to(outside)
    with Tree(root) as tree:
        with pytest.raises(Swapped, match="it is not a folder"):
            tree.write("file/m.py", b"", 0o644)
        with pytest.raises(Swapped, match="it is a symlink"):
            tree.unlink("link/keep/data")
        with pytest.raises(Swapped):  # nor is anything looked up through it
            tree.lstat("link/keep")
        tree.rmtree("link")
    assert not os.path.lexists(root / "link")
    assert (outside / "keep" / "data").read_text() == "precious\n"
