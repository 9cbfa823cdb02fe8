"""Issue 38: refusals that say what would fit, and paths that cannot be misread.

A path with leading or trailing spaces or a control character is shown quoted (Python's repr
quoting, as ``refused path '...'`` always was); a diff made one folder up (``diff -ruN
pkg-0.11.orig/ pkg-0.11/``) says which prefix to drop; a patch whose new side is already on
disk says it looks already applied. Every refusal changes nothing on disk.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from compatkit.errors import PatchFormatError
from compatkit.model.diff import parse_diff
from compatkit.model.paths import shown
from helpers import DEMO_FILES, PATCH_GREET, Demo, write_patchset

HEAD = (
    "Patch-Id: patch-1\nTitle: t\nSymptom: s\nCause: c\nFix: f\n"
    "Smoke-Test: smoke/test_patch_1.py\n---\n"
)
GREET_HUNK = (
    "@@ -1,2 +1,2 @@\n def hello(name):\n-    return 'hello ' + name\n+    return 'hi ' + name\n"
)


def _refused(demo: Demo, name: str, diff: str) -> str:
    """Apply a one-patch patchset that must be refused; its error, nothing changed."""
    write_patchset(demo.patchsets, name=name, patches={"0001.patch": HEAD + diff})
    before = demo.venv.snapshot()
    code, _, err = demo.run("apply", name)
    assert code == 1, err
    assert demo.venv.snapshot() == before
    assert err.count("\n") == len(err.splitlines()) and "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("pkg/m.py", "pkg/m.py"),
        ("pkg/m.py ", "'pkg/m.py '"),
        (" pkg/m.py", "' pkg/m.py'"),
        ("pkg/m.py\t", "'pkg/m.py\\t'"),
        ("pkg/\x1b[2Jm.py", "'pkg/\\x1b[2Jm.py'"),
        ("pkg/\udcffm.py", "'pkg/\\udcffm.py'"),
    ],
)
def test_paths_are_quoted_when_they_could_be_misread(path: str, expected: str) -> None:
    assert shown(path) == expected


def test_a_path_with_trailing_spaces_is_shown_quoted(demo: Demo) -> None:
    diff = f"--- a/demo/greet.py  \n+++ b/demo/greet.py  \n{GREET_HUNK}"
    err = _refused(demo, "spaced", diff)
    assert "'demo/greet.py  ' is not a file of demo" in err


def test_a_conflict_on_a_path_with_a_leading_space_is_shown_quoted() -> None:
    from compatkit.engine.hunks import SeriesConflict, apply_series

    (fd,) = parse_diff(f"--- a/ m.py\n+++ b/ m.py\n{GREET_HUNK}", "t.patch")
    with pytest.raises(SeriesConflict, match=r"^p does not apply: ' m.py': hunk #1"):
        apply_series({" m.py": b"other\n"}, [("p", [fd])])


def test_diff_made_one_folder_up_says_which_prefix_to_drop(tmp_path: Path) -> None:
    """``diff -ruN pkg-0.11.orig/ pkg-0.11/``: the paths differ only in their first folder."""
    for side, text in (("pkg-0.11.orig", "hello"), ("pkg-0.11", "hi")):
        (tmp_path / side / "demo").mkdir(parents=True)
        (tmp_path / side / "demo/greet.py").write_text(f"x = '{text}'\n")
    made = subprocess.run(
        ["diff", "-ruN", "pkg-0.11.orig/", "pkg-0.11/"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert made.returncode == 1, made.stderr
    with pytest.raises(PatchFormatError) as info:
        parse_diff(made.stdout, "t.patch")
    message = info.value.message
    assert "source and target paths differ" in message
    assert "drop 'pkg-0.11.orig/' and 'pkg-0.11/'" in message and "demo/greet.py" in message


def test_paths_under_a_folder_the_distribution_lacks_say_which_prefix_to_drop(
    demo: Demo,
) -> None:
    """The same paths on both sides (``git diff --no-prefix`` one folder up)."""
    diff = f"--- pkg-0.11/demo/greet.py\n+++ pkg-0.11/demo/greet.py\n{GREET_HUNK}"
    err = _refused(demo, "deeper", diff)
    assert "pkg-0.11/demo/greet.py is not a file of demo" in err
    assert "drop the leading 'pkg-0.11/' from the patch's paths: demo/greet.py is" in err


def test_a_patch_already_on_disk_says_it_looks_already_applied(demo: Demo) -> None:
    assert demo.run("apply", "demo-fix")[0] == 0
    err = _refused(demo, "again", PATCH_GREET.split("---\n", 1)[1])
    assert "demo/greet.py: hunk #1 (line 1) does not match; it looks already applied" in err


def test_a_real_conflict_does_not_say_already_applied(demo: Demo) -> None:
    other = GREET_HUNK.replace("'hi '", "'hey '").replace("'hello '", "'howdy '")
    err = _refused(demo, "other", f"--- a/demo/greet.py\n+++ b/demo/greet.py\n{other}")
    assert "does not match" in err and "already applied" not in err
    assert DEMO_FILES["demo/greet.py"] == (demo.venv.site / "demo/greet.py").read_bytes()
