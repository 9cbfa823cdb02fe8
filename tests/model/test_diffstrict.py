"""Issue 18: diffs read as strictly as ``git apply`` reads them, line endings kept exactly.

The diffs are made from real files with ``git diff --no-index`` and ``diff -ruN``; ``git apply``
(always installed where these tests run) and GNU ``patch`` (skipped, with the reason, where it
is absent) are the oracles: whatever they create, compatkit creates byte for byte, and what they
call corrupt, compatkit refuses with one line.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from compatkit.engine.hunks import SeriesConflict, apply_series
from compatkit.errors import PatchFormatError
from compatkit.model.diff import parse_diff

GIT = shutil.which("git")
PATCH = shutil.which("patch")
needs_git = pytest.mark.skipif(GIT is None, reason="needs git (the oracle)")
needs_patch = pytest.mark.skipif(PATCH is None, reason="needs GNU patch (the oracle)")

Tree = dict[str, bytes]
BASE: Tree = {"pkg/mod.py": b"a = 1\nb = 2\n", "pkg/gone.py": b"bye\n"}


def write(root: Path, files: Tree) -> Path:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def read_tree(root: Path) -> Tree:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def make_diff(tmp: Path, old: Tree, new: Tree, tool: str) -> str:
    """``git diff --no-index`` (paths a/..., b/...) or ``diff -ruN`` of two trees."""
    work = tmp / "made"
    shutil.rmtree(work, ignore_errors=True)
    for side, files in (("a", old), ("b", new)):
        write(work / side, files).mkdir(parents=True, exist_ok=True)
    cmd = ["git", "diff", "--no-index", "--no-prefix", "a", "b"] if tool == "git" else None
    proc = subprocess.run(cmd or ["diff", "-ruN", "a", "b"], cwd=work, capture_output=True)
    assert proc.returncode == 1, proc.stderr
    return proc.stdout.decode("utf-8", "surrogateescape")


def oracle(tmp: Path, tool: str, files: Tree, diff: str) -> Tree | None:
    """The tree ``git apply`` or GNU ``patch`` leaves, or None if it refuses the diff."""
    root = tmp / f"oracle-{tool}"
    shutil.rmtree(root, ignore_errors=True)
    write(root, files).mkdir(exist_ok=True)
    cmd = ["git", "apply", "-"] if tool == "git" else ["patch", "-s", "-p1", "-f", "--dry-run"]
    data = diff.encode("utf-8", "surrogateescape")
    proc = subprocess.run(cmd, cwd=root, input=data, capture_output=True)
    if proc.returncode:
        return None
    if tool == "patch":  # the real run only once the dry run accepted it (no .rej, .orig files)
        subprocess.run(cmd[:-1], cwd=root, input=data, check=True, capture_output=True)
    return read_tree(root)


def compatkit(files: Tree, diff: str) -> Tree:
    fds = parse_diff(diff, "t.patch")
    base: dict[str, bytes | None] = {fd.path: files.get(fd.path) for fd in fds}
    out = dict(files)
    for path, data in apply_series(base, [("t", fds)]).contents.items():
        if data is None:
            out.pop(path, None)
        else:
            out[path] = data
    return out


# --- created files keep their bytes, line-ending changes are applied exactly ---

NEW: Tree = {"pkg/mod.py": b"a = 1\r\nb = 2\r\n", "pkg/new.py": b"x = 1\r\ny = 2\r\n"}


@needs_git
@pytest.mark.parametrize("tool", ["git", "diff"])
def test_crlf_creation_and_eol_only_change_match_git_apply(tmp_path: Path, tool: str) -> None:
    """Before: new.py was created LF, and mod.py (LF to CRLF, nothing else) came back
    unchanged with success. Now both are exactly the new tree, as git apply makes it."""
    diff = make_diff(tmp_path, BASE, NEW, tool)
    assert "\r\n" in diff
    assert oracle(tmp_path, "git", BASE, diff) == NEW
    assert compatkit(BASE, diff) == NEW


def test_a_line_ending_change_on_the_wrong_endings_is_a_conflict() -> None:
    """A hunk changing LF to CRLF is matched exactly: on a file already CRLF it conflicts
    instead of succeeding with nothing changed."""
    diff = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x\n+x\r\n"
    assert compatkit({"m.py": b"x\n"}, diff) == {"m.py": b"x\r\n"}
    with pytest.raises(SeriesConflict, match="hunk #1"):
        compatkit({"m.py": b"x\r\n"}, diff)


def test_modified_file_keeps_its_own_endings_under_an_lf_patch() -> None:
    diff = "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n"
    assert compatkit({"m.py": b"a\r\nb\r\n"}, diff) == {"m.py": b"a\r\nB\r\n"}


# --- the new-file and deleted-file forms git and patch accept ---


@needs_git
def test_diff_ruN_creates_and_deletes_like_git_apply(tmp_path: Path) -> None:
    """Before: 'targets a file that does not exist' for the new file, and the deleted one left
    behind empty. diff -N writes both sides as files dated at the epoch."""
    new = {"pkg/mod.py": b"a = 1\nb = 3\n", "pkg/new.py": b"hello\n"}
    diff = make_diff(tmp_path, BASE, new, "diff")
    assert "1970-01-01 00:00:00" in diff and "/dev/null" not in diff
    assert oracle(tmp_path, "git", BASE, diff) == new
    assert compatkit(BASE, diff) == new


@needs_patch
def test_diff_ruN_creates_and_deletes_like_gnu_patch(tmp_path: Path) -> None:
    new = {"pkg/mod.py": b"a = 1\nb = 3\n", "pkg/new.py": b"hello\r\n"}
    diff = make_diff(tmp_path, BASE, new, "diff")
    assert oracle(tmp_path, "patch", BASE, diff) == new == compatkit(BASE, diff)


@needs_git
def test_git_creation_without_new_file_mode_creates(tmp_path: Path) -> None:
    """``diff --git`` with ``--- /dev/null`` but no ``new file mode`` line (a hand-trimmed git
    diff): before, read as a change to a file that does not exist. GNU patch creates it."""
    new = {**BASE, "pkg/new.py": b"hello\n"}
    diff = make_diff(tmp_path, BASE, new, "git")
    trimmed = "".join(x for x in diff.splitlines(True) if not x.startswith("new file mode"))
    assert "--- /dev/null" in trimmed and "new file mode" not in trimmed
    assert compatkit(BASE, trimmed) == new
    if PATCH is not None:
        assert oracle(tmp_path, "patch", BASE, trimmed) == new


def test_epoch_in_another_time_zone_and_not_quite_epoch() -> None:
    create = "--- a/n.py\t1969-12-31 19:00:00.000000000 -0500\n+++ b/n.py\t2024-01-01\n"
    (fd,) = parse_diff(create + "@@ -0,0 +1 @@\n+x\n", "p")
    assert fd.kind == "create"
    late = create.replace("19:00:00", "19:00:01")
    assert parse_diff(late + "@@ -0,0 +1 @@\n+x\n", "p")[0].kind == "modify"


# --- truncated and malformed diffs: refused with one line, as git apply refuses them ---


@needs_git
@pytest.mark.parametrize("cut", ["mid-line", "whole-line"])
def test_truncated_patch_is_refused_at_the_line_git_names(tmp_path: Path, cut: str) -> None:
    """Before: a diff cut inside its last '+' line applied (exit 0) and wrote half a line."""
    new = {**BASE, "pkg/mod.py": b"a = 1\nb = 2\nc = 'a long last line'\n"}
    diff = make_diff(tmp_path, BASE, new, "git")
    short = diff[: diff.rindex("long")] if cut == "mid-line" else diff[: diff.rindex("+c =")]
    git = subprocess.run(["git", "apply", "--check", "-"], input=short.encode(), cwd=tmp_path,
                         capture_output=True, text=False)  # fmt: skip
    assert git.returncode and b"corrupt patch at line" in git.stderr
    at = git.stderr.decode().split("corrupt patch at line ")[1].split()[0]
    with pytest.raises(PatchFormatError) as info:
        compatkit(BASE, short)
    assert f"t.patch: corrupt patch at line {at}: " in info.value.message
    assert "\n" not in info.value.message


MALFORMED = {
    "plus-without-path": ("--- a/m.py\n+++\n@@ -1 +1 @@\n-a\n+b\n", "line 2: '+++' line without"),
    "plus-blank-path": ("--- a/m.py\n+++ \n@@ -1 +1 @@\n-a\n+b\n", "line 2: '+++' line without"),
    "minus-then-junk": ("--- a/m.py\nfoo\n+++ b/m.py\n@@ -1 +1 @@\n-a\n+b\n", "line 2: '---'"),
    "two-minus": ("--- a/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-a\n+b\n", "line 2: '---'"),
    "plus-first": ("+++ b/m.py\n@@ -1 +1 @@\n-a\n+b\n", "line 1: '+++' line without a '---'"),
    "empty-hunk": ("--- a/m.py\n+++ b/m.py\n@@ -1,0 +1,0 @@\n", "line 3: empty hunk"),
    "hunk-outside-file": ("@@ -1 +1 @@\n-a\n+b\n", "line 1: hunk outside any file"),
    "marker-mid-hunk": (
        "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n a\n\\ No newline at end of file\n-b\n+B\n",
        "line 6: a line after",
    ),
    "bad-hunk-header": ("--- a/m.py\n+++ b/m.py\n@@ -x +1 @@\n-a\n+b\n", "line 3: malformed hunk"),
    "hunk-ends-early": (
        "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n-a\n+b\nxx\n",
        "line 6: hunk ends",
    ),
}
GIT_ACCEPTS = {"two-minus"}  # git reads the second '---' as the header; compatkit refuses


@needs_git
@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_patch_is_refused_with_one_line(tmp_path: Path, name: str) -> None:
    """Before: empty-hunk, marker-mid-hunk, minus-then-junk and two-minus parsed as changes to
    m.py; the rest were refused without a line number, plus-blank-path as a 'rename' and
    bad-hunk-header as 'file header without any hunk'."""
    text, expected = MALFORMED[name]
    with pytest.raises(PatchFormatError) as info:
        compatkit({"m.py": b"a\nb\n"}, text)
    assert f"t.patch: corrupt patch at {expected}" in info.value.message
    assert "\n" not in info.value.message
    if name not in GIT_ACCEPTS:
        assert oracle(tmp_path, "git", {"m.py": b"a\nb\n"}, text) is None


def test_more_hunk_lines_than_counted_is_refused() -> None:
    """Stricter than git, which drops the extra '+c' line silently."""
    text = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-a\n+A\n+c\n"
    with pytest.raises(PatchFormatError, match="line 6: hunk has more lines than its header"):
        parse_diff(text, "t.patch")
    signed = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-a\n+A\n-- \n2.43.0\n\n"  # format-patch
    assert parse_diff(signed, "t.patch")[0].hunks[0].lines == (("-", "a"), ("+", "A"))


def test_line_numbers_count_the_patch_file_header() -> None:
    from compatkit.model.patchset import parse_patch

    raw = b"Patch-Id: p\nTitle: t\n---\n--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-a\n+b"
    with pytest.raises(PatchFormatError, match=r"^x.patch: corrupt patch at line 8: the last"):
        parse_patch(Path("x.patch"), raw)
