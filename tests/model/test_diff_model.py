"""Patches written by git diff, git format-patch and diff -u all parse, with their edge cases."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from compatkit.engine.hunks import apply_file
from compatkit.errors import PatchFormatError
from compatkit.model.diff import parse_diff
from compatkit.model.patchset import parse_patch

OLD = b"a\nb\nc\n"
NEW = b"a\nB\nc\nd"  # no newline at end of file


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.org")
    _git(repo, "config", "user.name", "T")
    (repo / "pkg/mod.py").write_bytes(OLD)
    (repo / "pkg/gone.py").write_bytes(b"bye\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    (repo / "pkg/mod.py").write_bytes(NEW)
    (repo / "pkg/gone.py").unlink()
    (repo / "pkg/new.py").write_bytes(b"hello\n")
    _git(repo, "add", "-A")
    return repo


def _check(text: str) -> None:
    files = {f.path: f for f in parse_diff(text, "t.patch")}
    assert files["pkg/mod.py"].kind == "modify"
    assert apply_file(OLD, files["pkg/mod.py"]).data == NEW
    assert files["pkg/new.py"].kind == "create"
    assert apply_file(None, files["pkg/new.py"]).data == b"hello\n"
    assert files["pkg/gone.py"].kind == "delete"
    assert apply_file(b"bye\n", files["pkg/gone.py"]).data is None


def test_git_diff(repo: Path) -> None:
    text = _git(repo, "diff", "--cached")
    assert "\\ No newline at end of file" in text
    _check(text)


def test_git_format_patch(repo: Path) -> None:
    _git(repo, "commit", "-qm", "Fix mod\n\nLonger description.")
    text = _git(repo, "format-patch", "-1", "--stdout")
    patch = parse_patch(Path("0001-fix.patch"), text.encode())
    assert patch.title == "Fix mod"
    assert patch.fields["author"].startswith("T <")
    _check(patch.diff_text)


def test_diff_u(tmp_path: Path) -> None:
    for side, files in (
        ("a", {"pkg/mod.py": OLD, "pkg/gone.py": b"bye\n"}),
        ("b", {"pkg/mod.py": NEW, "pkg/new.py": b"hello\n"}),
    ):
        for rel, data in files.items():
            (tmp_path / side / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / side / rel).write_bytes(data)
    proc = subprocess.run(["diff", "-ruN", "a", "b"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 1
    # diff -N writes absent files as empty ones with an epoch date: created and deleted
    assert "1970-01-01 00:00:00" in proc.stdout and "/dev/null" not in proc.stdout
    _check(proc.stdout)


def test_crlf_patch_text_is_normalised() -> None:
    text = "--- a/m.py\r\n+++ b/m.py\r\n@@ -1 +1 @@\r\n-x\r\n+y\r\n"
    (fd,) = parse_diff(text, "p")
    assert apply_file(b"x\n", fd).data == b"y\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "contains no diff"),
        ("just words\n", "contains no diff"),
        ("--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,1 @@\n-x\n+y\n", "corrupt patch at line 6"),
        (
            "diff --git a/x.bin b/x.bin\nindex 1..2 100644\n"
            "GIT binary patch\nliteral 1\nJc${NULL}\n\n",
            "binary patches are not supported",
        ),
        (
            "diff --git a/x b/x\nBinary files a/x and b/x differ\n",
            "binary patches are not supported",
        ),
        ("diff --git a/x b/x\nold mode 100644\nnew mode 120000\n", "symlinks"),
        ("diff --git a/x b/x\nnew file mode 160000\nindex 0..1\n", "submodules"),
        ("--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n x\n", "only context lines"),
        ("--- a/m.py\n+++ b/m.py\n@@ -5,0 +6 @@\n+x\n", "hunk #1 (line 5) has no context"),
        (
            "diff --git a/f b/f\nnew file mode 100644\n--- /dev/null\n+++ b/f-blah\n"
            "@@ -0,0 +1 @@\n+x\n",
            "inconsistent new filename",
        ),
        ("--- a/m.py\n+++ b/m.py\n", "file header without any hunk"),
    ],
)
def test_bad_patches_get_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(PatchFormatError) as info:
        parse_diff(text, "bad.patch")
    assert message in info.value.message
    assert "\n" not in info.value.message


def test_empty_patch_file() -> None:
    with pytest.raises(PatchFormatError, match="empty patch file"):
        parse_patch(Path("x.patch"), b"  \n")


def test_dep3_header_fields_and_continuations() -> None:
    raw = (
        b"Patch-Id: patch-6\nTitle: Drop [0]\nSymptom: RuntimeError: Boolean value\n"
        b"Cause: first line\n second line\n .\n third\nFix: f\nSmoke-Test: smoke/t.py\n"
        b"X-Custom: kept\n---\n--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x\n+y\n"
    )
    patch = parse_patch(Path("p.patch"), raw)
    assert patch.id == "patch-6"
    assert patch.fields["cause"] == "first line\nsecond line\n\nthird"
    assert patch.fields["x-custom"] == "kept"
    assert patch.missing_fields() == []
    assert parse_patch(
        Path("q.patch"), b"Title: t\n---\n" + raw.split(b"---\n", 1)[1]
    ).missing_fields() == ["patch-id", "symptom", "cause", "fix", "smoke-test"]


@pytest.mark.parametrize("signature", ["-- \n", "--\n"], ids=["space-kept", "space-stripped"])
def test_format_patch_signature_is_ignored_as_git_apply_ignores_it(
    repo: Path, tmp_path: Path, signature: str
) -> None:
    """Issue 38: a real ``git format-patch`` mail, its signature line ``-- `` as git writes it
    and with its space stripped (editors and whitespace hooks do), then the version line: both
    apply, giving what ``git apply`` gives from the same mail."""
    _git(repo, "commit", "-qm", "Fix mod")
    mail = _git(repo, "format-patch", "-1", "--stdout")
    assert "\n-- \n" in mail and mail.endswith("\n\n")  # the signature and its version line
    mail = mail.replace("\n-- \n", f"\n{signature}")
    patch = parse_patch(Path("0001-fix.patch"), mail.encode())
    _check(patch.diff_text)
    # the oracle: git apply on the base tree, from the same mail
    base = tmp_path / "base"
    base.mkdir()
    subprocess.run(["git", "-C", str(repo), "archive", "HEAD~1", "-o", str(tmp_path / "b.tar")])
    subprocess.run(["tar", "-xf", str(tmp_path / "b.tar"), "-C", str(base)], check=True)
    subprocess.run(["git", "apply", "-"], cwd=base, input=mail.encode(), check=True)
    files = {f.path: f for f in patch.files}
    assert apply_file(OLD, files["pkg/mod.py"]).data == (base / "pkg/mod.py").read_bytes()
    assert not (base / "pkg/gone.py").exists()


def test_a_bare_signature_line_followed_by_hunk_lines_is_still_refused() -> None:
    """Only a signature ends a hunk early: ``--`` followed by more hunk lines is a hunk that
    has more lines than its header counts (stricter than git, as before)."""
    text = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-a\n+A\n--\n+c\n"
    with pytest.raises(PatchFormatError, match="line 6: hunk has more lines than its header"):
        parse_diff(text, "t.patch")
    inside = "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1 @@\n-a\n--\n+A\n"  # counted: a removed '-'
    assert parse_diff(inside, "t.patch")[0].hunks[0].lines == (("-", "a"), ("-", "-"), ("+", "A"))
