"""engine/difftext: the diffs compatkit writes (diff, rebase) read back by model/diff as the
changes they were made from, git's header lines included, and what no patch can carry refused."""

from __future__ import annotations

import pytest

from compatkit.engine.difftext import file_diff
from compatkit.engine.hunks import apply_series
from compatkit.errors import PatchFormatError
from compatkit.model.diff import parse_diff

OLD = b"".join(f"v{i} = {i}\n".encode() for i in range(10))
NEW = OLD.replace(b"v5 = 5\n", b"v5 = 50\n")


@pytest.mark.parametrize(
    ("old", "new", "moved", "modes", "kind", "header"),
    [
        (None, b"x = 1\n", None, (None, 0o755), "create", "new file mode 100755\n"),
        (OLD, None, None, (0o755, None), "delete", "deleted file mode 100755\n"),
        (OLD, OLD, None, (0o644, 0o755), "modify", "old mode 100644\nnew mode 100755\n"),
        (OLD, NEW, ("rename", "p/old.py"), (None, None), "rename", "rename from p/old.py\n"),
        (OLD, OLD, ("copy", "p/old.py"), (None, None), "copy", "copy to p/m.py\n"),
    ],
)
def test_git_header_lines_round_trip(
    old: bytes | None,
    new: bytes | None,
    moved: tuple[str, str] | None,
    modes: tuple[int | None, int | None],
    kind: str,
    header: str,
) -> None:
    text = file_diff("p/m.py", old, new, moved=moved, modes=modes)
    assert header in text
    (fd,) = parse_diff(text, "p")
    assert fd.kind == kind and fd.path == "p/m.py"
    source = moved[1] if moved else "p/m.py"
    files = {"p/m.py": None if moved else old, "p/old.py": old if moved else None}
    result = apply_series(files, [("p", (fd,))])
    assert result.contents["p/m.py"] == new
    if kind == "rename":
        assert result.contents[source] is None
    if modes[1] is not None:
        assert result.modes["p/m.py"] == modes[1]


def test_an_unchanged_file_is_no_diff() -> None:
    assert file_diff("p/m.py", OLD, OLD) == ""


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        (OLD, OLD.replace(b"\n", b"\r\n"), "only line endings changed"),
        (OLD, b"\0\1binary", "binary files cannot be patched"),
    ],
)
def test_what_a_patch_cannot_carry_is_refused(old: bytes, new: bytes, why: str) -> None:
    with pytest.raises(PatchFormatError, match=why):
        file_diff("p/m.py", old, new)
