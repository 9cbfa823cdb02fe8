"""compatkit rebase: port a patchset between two real wheels with a three-way merge."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from compatkit.engine.hunks import apply_series
from compatkit.engine.rebase import port_series
from compatkit.load.validate import load_patchset
from compatkit.model.diff import parse_diff
from compatkit.model.patchset import split_header
from compatkit.model.results import PortState
from helpers import (
    DEMO_FILES,
    MODE_ONLY_DIFF,
    PATCH_GREET,
    PATCH_UTIL,
    UTIL_LINE20_HUNK,
    Venv,
    build_wheel,
    patch_text,
    run_cli,
    write_patchset,
)

PATCH_WHO = """\
Patch-Id: patch-3
Title: Greet you
Symptom: x
Cause: y
Fix: z
Smoke-Test: smoke/test_patch_1.py
---
--- a/demo/greet.py
+++ b/demo/greet.py
@@ -4,2 +4,2 @@
{blank}
-WHO = 'world'
+WHO = 'you'
""".format(blank=" ")

PATCH_WIN = """\
Patch-Id: patch-4
Title: CRLF file
Symptom: x
Cause: y
Fix: z
Smoke-Test: smoke/test_patch_1.py
---
--- a/demo/win.py
+++ b/demo/win.py
@@ -2,3 +2,3 @@
 b = 2
-c = 3
+c = 'three'
 d = 4
"""

WIN_OLD = b"a = 1\r\nb = 2\r\nc = 3\r\nd = 4\r\ne = 5\r\n"
WIN_NEW = b"a = 1\r\nb = 2\r\nc = 3\r\nd = 4\r\ne = 5\r\nf = 6\r\n"


@pytest.fixture
def wheels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """demo 1.0, and demo 1.1: patch-1 is upstream, util moved down 3 lines, WHO changed."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    build_wheel(folder, "demo", "1.0", {**DEMO_FILES, "demo/win.py": WIN_OLD})
    new = dict(DEMO_FILES)
    new["demo/greet.py"] = b"def hello(name):\n    return 'hi ' + name\n\n\nWHO = 'everyone'\n"
    new["demo/util.py"] = b"# moved\n# down\n# by three\n" + DEMO_FILES["demo/util.py"]
    new["demo/win.py"] = WIN_NEW
    build_wheel(folder, "demo", "1.1", new)
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(tmp_path / "ck-cache"))
    monkeypatch.setenv("COMPATKIT_NO_INDEX", "1")
    return folder


def rebase(
    capsys: pytest.CaptureFixture[str], base: Path, wheels: Path, *args: str
) -> tuple[int, str, str]:
    return run_cli(capsys, "rebase", "--patchset-dir", str(base), "--wheel-dir", str(wheels), *args)


def test_each_patch_is_classified_and_conflicts_are_written(
    tmp_path: Path, wheels: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path / "ps"
    old = write_patchset(
        base,
        patches={"0001.patch": PATCH_GREET, "0002.patch": PATCH_UTIL, "0003.patch": PATCH_WHO},
    )
    old_files = {p: p.read_bytes() for p in old.rglob("*") if p.is_file()}
    code, out, err = rebase(capsys, base, wheels, "demo-fix", "--target", "demo==1.1", "--json")
    assert code == 1
    doc = json.loads(out)
    rebase_keys = {"patchset", "new_patchset", "path", "old_version", "new_version", "patches"}
    assert set(doc) == {"ok", "command", "error", "problems"} | rebase_keys, sorted(doc)
    entry_keys = {"id", "status", "detail", "conflicts", "files"}
    assert all(set(p) == entry_keys for p in doc["patches"]), doc["patches"]
    assert set(doc["patches"][1]["files"][0]) == {"path", "status", "offset"}
    assert {p["id"]: p["status"] for p in doc["patches"]} == {
        "patch-1": "upstream",
        "patch-2": "offset",
        "patch-3": "conflict",
    }
    assert doc["patches"][1]["files"][0]["offset"] == 3
    new = base / "demo-fix-1.1"
    conflict = new / "conflicts/patch-3/demo/greet.py"
    assert f"resolve {conflict}" in err
    marked = conflict.read_text()
    assert "<<<<<<< patch-3 on demo 1.0\nWHO = 'you'\n" in marked
    assert "=======\nWHO = 'everyone'\n>>>>>>> demo 1.1\n" in marked
    assert (new / "retired/0001.patch").is_file()
    assert "-line20 = 20" in (new / "patches/0002.patch").read_text()
    assert "@@ -21,7 +21,7 @@" in (new / "patches/0002.patch").read_text()
    # the old patchset is untouched
    assert {p: p.read_bytes() for p in old.rglob("*") if p.is_file()} == old_files


def test_a_clean_rebase_applies_to_the_new_version(
    tmp_path: Path,
    wheels: Path,
    make_venv: Callable[..., Venv],
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = tmp_path / "ps"
    write_patchset(base, patches={"0002.patch": PATCH_UTIL, "0004.patch": PATCH_WIN})
    to_v11 = ("demo-fix", "--target", "demo==1.1", "--name", "v11")
    code, out, err = rebase(capsys, base, wheels, *to_v11)
    assert code == 0, err
    assert "patch-2" in out and "offset" in out
    ps = load_patchset(base / "v11")
    assert str(ps.specifier) == "==1.1" and ps.ids == ["patch-2", "patch-4"]
    assert b"\r" not in (base / "v11/patches/0004.patch").read_bytes()
    assert (
        run_cli(capsys, "lint", "--patchset-dir", str(base), "--wheel-dir", str(wheels), "v11")[0]
        == 0
    )
    venv = make_venv()
    venv.install(wheels / "demo-1.1-py3-none-any.whl", "uv", "--link-mode", "copy")
    args = ("--python", venv.python, "--patchset-dir", str(base))
    code, _, err = run_cli(capsys, "apply", "v11", *args)
    assert code == 0, err
    assert (venv.site / "demo/win.py").read_bytes() == WIN_NEW.replace(b"c = 3", b"c = 'three'")
    assert "line20 = 200\n" in (venv.site / "demo/util.py").read_text()


def test_merge_rewrites_a_patch_whose_context_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "wheels"
    folder.mkdir()
    lines = [f"x{i} = {i}\n".encode() for i in range(10)]
    build_wheel(folder, "demo", "1.0", {"demo/__init__.py": b"", "demo/m.py": b"".join(lines)})
    lines_new = list(lines)
    lines_new[3] = b"x3 = 'three'\n"  # upstream edits a line of the patch's context
    build_wheel(folder, "demo", "2.0", {"demo/__init__.py": b"", "demo/m.py": b"".join(lines_new)})
    patch = PATCH_UTIL.replace("demo/util.py", "demo/m.py").replace(
        "@@ -20,3 +20,3 @@\n line19 = 19\n-line20 = 20\n+line20 = 200\n line21 = 21\n",
        "@@ -4,5 +4,5 @@\n x3 = 3\n x4 = 4\n-x5 = 5\n+x5 = 55\n x6 = 6\n x7 = 7\n",
    )
    monkeypatch.setenv("COMPATKIT_NO_INDEX", "1")
    base = tmp_path / "ps"
    write_patchset(base, patches={"0001.patch": patch})
    code, out, err = rebase(capsys, base, folder, "demo-fix", "--target", "demo==2.0", "--json")
    assert code == 0, err
    (result,) = json.loads(out)["patches"]
    assert result["status"] == "clean" and "three-way merge" in result["detail"]
    text = (base / "demo-fix-2.0/patches/0001.patch").read_text()
    assert " x3 = 'three'\n x4 = 4\n-x5 = 5\n+x5 = 55\n" in text


def test_bad_target_is_a_usage_error(
    tmp_path: Path, wheels: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_patchset(tmp_path / "ps")
    code, _, err = rebase(capsys, tmp_path / "ps", wheels, "demo-fix", "--target", "other==1.1")
    assert code == 2 and "--target must be demo==VERSION" in err


@pytest.mark.real
@pytest.mark.slow
def test_real_speculators_rebase_to_0_4_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bundled patchset against the real 0.3.0 and 0.4.0 wheels (uv cache or PyPI)."""
    code, out, _ = run_cli(
        capsys,
        "rebase",
        "speculators-vllm016",
        "--target",
        "speculators==0.4.0",
        "-o",
        str(tmp_path),
        "--json",
    )
    doc = json.loads(out)
    statuses = {p["id"]: p["status"] for p in doc["patches"]}
    assert len(statuses) == 10
    assert set(statuses.values()) <= {"clean", "offset", "upstream", "conflict"}
    assert statuses["patch-3"] == "upstream"
    # patch-2 applies as text, but 0.4.0 already passes is_encoder_decoder: a repeated keyword
    assert statuses["patch-2"] == "conflict"
    assert code == 1


RENAME = patch_text(
    "patch-5",
    "diff --git a/demo/util.py b/demo/tools.py\nsimilarity index 90%\n"
    "rename from demo/util.py\nrename to demo/tools.py\n"
    "--- a/demo/util.py\n+++ b/demo/tools.py\n" + UTIL_LINE20_HUNK,
)
COPY = (
    RENAME.replace("rename from", "copy from")
    .replace("rename to", "copy to")
    .replace("Patch-Id: patch-5", "Patch-Id: patch-6")
)
MODE = patch_text("patch-7", MODE_ONLY_DIFF)


@pytest.mark.parametrize(("text", "kind"), [(RENAME, "rename"), (COPY, "copy"), (MODE, "modify")])
def test_renames_copies_and_modes_are_ported(
    text: str, kind: str, tmp_path: Path, wheels: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ported patch keeps its git header (rename, copy, mode) and its hunks move with
    the new version's file (util.py is three lines lower in demo 1.1). Before: the rename's
    new name was read from the old wheel ('does not apply to the old version'), and a
    mode-only patch came out as a header without a diff."""
    base = tmp_path / "ps"
    write_patchset(base, patches={"0001.patch": text})
    code, out, err = rebase(capsys, base, wheels, "demo-fix", "--target", "demo==1.1", "--json")
    assert code == 0, out + err
    (patch,) = json.loads(out)["patches"]
    assert patch["status"] in ("clean", "offset") and patch["conflicts"] == [], patch
    ported = load_patchset(base / "demo-fix-1.1").patches[0]
    (fd,) = ported.files
    old = load_patchset(base / "demo-fix").patches[0].files[0]
    assert (fd.kind, fd.path, fd.source) == (kind, old.path, old.source)
    assert (fd.old_mode, fd.new_mode) == (old.old_mode, old.new_mode)
    new_util = b"# moved\n# down\n# by three\n" + DEMO_FILES["demo/util.py"]
    tree = {"demo/util.py": new_util, "demo/tools.py": None, "demo/greet.py": b"g\n"}
    result = apply_series(tree, [(ported.id, ported.files)])
    if kind == "modify":
        assert result.contents == tree and result.modes == {"demo/greet.py": 0o755}
    else:
        want = new_util.replace(b"line20 = 20\n", b"line20 = 200\n")
        assert result.contents["demo/tools.py"] == want
        assert result.contents["demo/util.py"] == (None if kind == "rename" else new_util)


@pytest.mark.parametrize(
    ("new", "reason"),
    [
        ({"demo/util.py": None}, "the new version has no demo/util.py to rename"),
        ({"demo/tools.py": b"x = 1\n"}, "the new version already has demo/tools.py"),
    ],
)
def test_a_rename_the_new_version_cannot_take_is_a_conflict(
    new: dict[str, bytes | None], reason: str
) -> None:
    """A rename whose source is gone upstream, or whose new name upstream already has, is a
    conflict with its reason; before, the first read the new name from the old version."""
    _, body = split_header(RENAME)
    old = {"demo/util.py": DEMO_FILES["demo/util.py"], "demo/tools.py": None}
    (port,) = port_series([("patch-5", parse_diff(body, "p"))], old, {**old, **new})
    assert port.status is PortState.CONFLICT and port.detail == f"demo/tools.py: {reason}"


def test_a_file_in_two_sections_of_one_patch_keeps_both_changes() -> None:
    """Each section is ported on what the one before it wrote. Before: the ported diff held
    one before/after pair per path, the last section's, and the first change was lost."""
    sections = "".join(
        f"diff --git a/demo/util.py b/demo/util.py\n--- a/demo/util.py\n+++ b/demo/util.py\n"
        f"@@ -{n},3 +{n},3 @@\n line{n - 1} = {n - 1}\n-line{n} = {n}\n+line{n} = 'x'\n"
        f" line{n + 1} = {n + 1}\n"
        for n in (5, 30)
    )
    old = {"demo/util.py": DEMO_FILES["demo/util.py"]}
    new = {"demo/util.py": b"# moved\n" + DEMO_FILES["demo/util.py"]}
    (port,) = port_series([("p", parse_diff(sections, "p"))], old, new)
    result = apply_series(new, [("p", parse_diff(port.diff(), "p"))]).contents["demo/util.py"]
    assert result is not None
    assert b"line5 = 'x'\n" in result and b"line30 = 'x'\n" in result
