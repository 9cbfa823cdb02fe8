"""git apply's anchoring, naming and shapes in the pure reader and engine (issue 44).

Each case is one of git's rules (apply.c: ``match_beginning``/``match_end``,
``gitdiff_verify_name``, ``find_name_traditional``, ``parse_fragment``); the real ``git
apply`` beside compatkit is tests/ops/test_git_apply_corpus.py.
"""

from __future__ import annotations

import pytest

from compatkit.engine.hunks import HunkMismatch, SeriesConflict, apply_file, apply_series
from compatkit.errors import PatchFormatError
from compatkit.model.diff import FileDiff, parse_diff

APPEND_MAIN = "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,3 @@\n def main():\n     pass\n+main()\n"


def one(text: str, zero: bool = False) -> FileDiff:
    (fd,) = parse_diff(text, "t.patch", unidiff_zero=zero)
    return fd


def test_a_hunk_without_trailing_context_matches_only_at_the_end() -> None:
    """Before: a module that already ended with main() got a second call after the first
    match of the context (exit 0)."""
    assert apply_file(b"def main():\n    pass\n", one(APPEND_MAIN)).data == (
        b"def main():\n    pass\nmain()\n"
    )
    with pytest.raises(HunkMismatch, match="does not match"):
        apply_file(b"def main():\n    pass\nmain()\n", one(APPEND_MAIN))


def test_a_hunk_at_line_0_matches_only_an_empty_file() -> None:
    """``@@ -0,0 +1 @@`` made against an empty __init__.py: before, written again into one
    that already held the line."""
    fd = one("--- a/p/__init__.py\n+++ b/p/__init__.py\n@@ -0,0 +1 @@\n+import os\n")
    assert fd.kind == "modify"
    assert apply_file(b"", fd).data == b"import os\n"
    with pytest.raises(HunkMismatch):
        apply_file(b"import os\n", fd)


def test_a_hunk_at_line_1_matches_only_at_the_start() -> None:
    fd = one("--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n")
    assert apply_file(b"a\nb\nc\n", fd).data == b"A\nb\nc\n"
    with pytest.raises(HunkMismatch):
        apply_file(b"x\na\nb\nc\n", fd)  # git would not move it down a line either


def test_a_hunk_with_context_on_both_sides_still_moves() -> None:
    fd = one("--- a/m.py\n+++ b/m.py\n@@ -5,3 +5,3 @@\n a\n-b\n+B\n c\n")
    assert apply_file(b"a\nb\nc\nd\n", fd).offsets == (-4,)


def test_a_context_free_hunk_is_refused_unless_the_patch_opts_in() -> None:
    text = "--- a/m.py\n+++ b/m.py\n@@ -3,0 +4 @@\n+new\n"
    with pytest.raises(PatchFormatError, match=r"hunk #1 \(line 3\) has no context lines"):
        one(text)
    assert apply_file(b"1\n2\n3\n4\n5\n", one(text, zero=True)).data == b"1\n2\n3\nnew\n4\n5\n"


def test_a_whole_file_hunk_without_context_is_no_U0_diff() -> None:
    """A one-line file's change has no context line and is pinned at both ends: taken."""
    assert apply_file(b"a\n", one("--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-a\n+b\n")).data == b"b\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n a\n b\n", "only context lines"),
        (
            "diff --git a/f b/f\nnew file mode 100644\n--- /dev/null\n+++ b/f-blah\n"
            "@@ -0,0 +1 @@\n+x\n",
            "corrupt patch at line 4: bad git-diff - inconsistent new filename",
        ),
        (
            "diff --git a/f b/f\n--- a/g\n+++ b/f\n@@ -1 +1 @@\n-x\n+y\n",
            "corrupt patch at line 2: bad git-diff - inconsistent old filename",
        ),
        (
            "diff --git a/f b/f\nnew file mode 100644\n--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+x\n",
            "expected /dev/null, got a/f",
        ),
        (
            "diff --git a/f b/f\nnew file mode 100644\ndeleted file mode 100644\n",
            "inconsistent header lines",
        ),
        ("--- /dev/null\n+++ b/f\n@@ -1 +1 @@\n-x\n+y\n", "new file depends on old contents"),
        ("--- a/f\n+++ /dev/null\n@@ -1 +1 @@\n-x\n+y\n", "deleted file still has contents"),
        ("diff --git a/l b/l\nnew file mode 120000\n", "symlinks (mode 120000)"),
        ("diff --git a/s b/s\nindex 1234567..89abcde 160000\n", "submodules (mode 160000)"),
    ],
)
def test_what_git_calls_corrupt_is_refused_with_its_reason(text: str, message: str) -> None:
    with pytest.raises(PatchFormatError) as info:
        parse_diff(text, "t.patch")
    assert message in info.value.message and "\n" not in info.value.message


@pytest.mark.parametrize("zone", ["-0800", "-08:00"])
def test_the_epoch_in_any_zone_notation_is_no_file(zone: str) -> None:
    """Before: ``-08:00`` was not read as the epoch, and the deletion left a 0-byte file."""
    text = f"--- a/m.py\t2024-01-01 00:00:00 +0000\n+++ b/m.py\t1969-12-31 16:00:00 {zone}\n"
    fd = one(text + "@@ -1 +0,0 @@\n-x\n")
    assert fd.kind == "delete"
    assert apply_file(b"x\n", fd).data is None


def test_a_date_after_spaces_is_not_part_of_the_path() -> None:
    fd = one(
        "--- m.py  2024-01-01 10:00:00.000 +0100\n+++ m.py  2024-01-02 10:00:00 +0100\n"
        "@@ -1 +1 @@\n-x\n+y\n"
    )
    assert fd.path == "m.py"


@pytest.mark.parametrize(
    ("old", "new"), [("m.py.orig", "m.py"), ("m.py", "m.py.new"), ("a/p/m.py.orig", "b/p/m.py")]
)
def test_traditional_names_resolve_to_the_shorter_as_git_does(old: str, new: str) -> None:
    fd = one(f"--- {old}\n+++ {new}\n@@ -1 +1 @@\n-x\n+y\n")
    assert fd.path in ("m.py", "p/m.py") and fd.kind == "modify"


@pytest.mark.parametrize(
    ("old", "new", "files", "patched"),
    [
        ("a/p/m_old.py", "b/p/m.py", {"p/m.py"}, "p/m.py"),  # git's choice exists
        ("a/p/m.py", "b/p/m_new.py", {"p/m.py"}, "p/m.py"),  # only the --- name exists
        ("p/m.py.bak", "p/m.py", {"p/m.py.bak"}, "p/m.py.bak"),
        ("p/n.py", "p/m.py", {"p/n.py", "p/m.py"}, "p/m.py"),  # both: git's, the +++ name
        ("p/m.py", "p/m.py.new", {"p/m.py", "p/m.py.new"}, "p/m.py"),  # both: the prefix
        ("p/n.py", "p/m.py", set(), "p/m.py"),  # neither: git's, for "not a file of"
    ],
)
def test_differing_names_patch_the_one_the_distribution_has(
    old: str, new: str, files: set[str], patched: str
) -> None:
    """Before: refused ("source and target paths differ") unless one name only added a
    suffix to the other."""
    fd = one(f"--- {old}\n+++ {new}\n@@ -1 +1 @@\n-x\n+y\n").bound(files.__contains__)
    assert (fd.path, fd.kind, fd.paths) == (patched, "modify", (patched,))
    assert apply_file(b"x\n", fd).data == b"y\n"


def test_names_differing_only_in_their_first_folder_stay_refused() -> None:
    with pytest.raises(PatchFormatError, match="differ only in their first folder"):
        one("--- old/p/m.py\n+++ new/p/m.py\n@@ -1 +1 @@\n-x\n+y\n")


SECTIONS = (
    "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n"
    "--- a/m.py\n+++ b/m.py\n@@ -2,2 +2,2 @@\n b\n-c\n+C\n"
)


def test_several_sections_of_one_file_apply_in_order_and_reverse() -> None:
    files = parse_diff(SECTIONS, "t.patch")
    forward = apply_series({"m.py": b"a\nb\nc\n"}, [("p", files)])
    assert forward.contents["m.py"] == b"A\nb\nC\n"
    assert forward.touched_by["m.py"] == ["p"] and len(forward.offsets["p"]["m.py"]) == 2
    back = apply_series(forward.contents, [("p", files)], reverse=True)
    assert back.contents["m.py"] == b"a\nb\nc\n"


def test_delete_then_create_of_one_path() -> None:
    text = (
        "diff --git a/m.py b/m.py\ndeleted file mode 100644\n--- a/m.py\n+++ /dev/null\n"
        "@@ -1 +0,0 @@\n-old\n"
        "diff --git a/m.py b/m.py\nnew file mode 100755\n--- /dev/null\n+++ b/m.py\n"
        "@@ -0,0 +1 @@\n+new\n"
    )
    files = parse_diff(text, "t.patch")
    result = apply_series({"m.py": b"old\n"}, [("p", files)])
    assert result.contents == {"m.py": b"new\n"} and result.modes == {"m.py": 0o755}
    assert apply_series(result.contents, [("p", files)], reverse=True).contents == {
        "m.py": b"old\n"
    }


RENAME = (
    "diff --git a/p/old.py b/p/new.py\nsimilarity index 90%\nrename from p/old.py\n"
    "rename to p/new.py\nindex 1..2 100644\n--- a/p/old.py\n+++ b/p/new.py\n"
    "@@ -1,2 +1,2 @@\n a\n-b\n+B\n"
)


def test_a_rename_moves_the_bytes_and_reverses() -> None:
    (fd,) = parse_diff(RENAME, "t.patch")
    assert (fd.kind, fd.source, fd.path) == ("rename", "p/old.py", "p/new.py")
    start: dict[str, bytes | None] = {"p/old.py": b"a\nb\n", "p/new.py": None}
    result = apply_series(start, [("p", [fd])])
    assert result.contents == {"p/old.py": None, "p/new.py": b"a\nB\n"}
    assert result.origins == {"p/new.py": "p/old.py"}
    assert apply_series(result.contents, [("p", [fd])], reverse=True).contents == start


def test_a_copy_keeps_its_source_and_reverses() -> None:
    text = RENAME.replace("rename from", "copy from").replace("rename to", "copy to")
    (fd,) = parse_diff(text, "t.patch")
    start: dict[str, bytes | None] = {"p/old.py": b"a\nb\n", "p/new.py": None}
    result = apply_series(start, [("p", [fd])])
    assert result.contents == {"p/old.py": b"a\nb\n", "p/new.py": b"a\nB\n"}
    assert apply_series(result.contents, [("p", [fd])], reverse=True).contents == start
    with pytest.raises(SeriesConflict, match="renames onto a file that already exists"):
        apply_series({"p/old.py": b"a\nb\n", "p/new.py": b"x\n"}, [("p", parse_diff(RENAME, "t"))])


def test_a_mode_change_without_hunks_is_a_section() -> None:
    (fd,) = parse_diff("diff --git a/p/t.py b/p/t.py\nold mode 100644\nnew mode 100755\n", "t")
    assert (fd.kind, fd.old_mode, fd.new_mode) == ("modify", 0o644, 0o755)
    result = apply_series({"p/t.py": b"x\n"}, [("p", [fd])])
    assert result.contents == {"p/t.py": b"x\n"} and result.modes == {"p/t.py": 0o755}
    assert apply_series(result.contents, [("p", [fd])], reverse=True).modes == {"p/t.py": 0o644}
