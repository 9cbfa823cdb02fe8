"""upstream on a release that deleted the patched code ('removed upstream'), and the
throw-away environment: the release with its own dependencies, the patchset's requirements
checked (never installed beside it), a resolver conflict in one line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from compatkit.delivery.wheels import WheelSource
from compatkit.ops.upstream import against_newest
from helpers import (
    DEMO_FILES,
    PATCH_GREET,
    PATCH_UTIL,
    UV,
    Demo,
    build_wheel,
    run_cli,
    write_patchset,
)

# demo 2.0 deleted demo/greet.py (patch-1's file); demo/util.py is still there, changed
DEMO_2 = {
    "demo/__init__.py": b"",
    "demo/util.py": b"".join(f"line{i} = {i * 10}\n".encode() for i in range(40)),
}


def _add_pytest(python: str) -> None:
    subprocess.run([UV or "uv", "pip", "install", "-q", "--python", python, "pytest"], check=True)


def _needs_patch_2(demo: Demo) -> None:
    """patch-1's smoke test declares it needs patch-2: a missing need must not hide the
    real error when patch-1's own file is gone."""
    patch = demo.patchsets / "demo-fix/patches/0001.patch"
    patch.write_text(patch.read_text().replace("Smoke-Test:", "Smoke-Needs: patch-2\nSmoke-Test:"))


def test_removed_upstream_with_the_real_error(demo: Demo, tmp_path: Path) -> None:
    _add_pytest(demo.venv.python)
    _needs_patch_2(demo)
    demo.venv.install(build_wheel(tmp_path, "demo", "2.0", DEMO_2), "uv", "--reinstall")
    code, out, err = demo.run("--json", "upstream", "demo-fix", "--target", "demo==2.0")
    assert code == 0, err
    got = {p["id"]: p for p in json.loads(out)["patches"]}
    one, two = got["patch-1"], got["patch-2"]
    assert one["state"] == "removed upstream"
    assert one["textual"] == "demo/greet.py no longer in demo 2.0"
    assert one["error"] == "ModuleNotFoundError: No module named 'demo.greet'"
    assert one["reason"] == one["error"]  # never "blocked: needs patch-2 ..."
    # demo/util.py is still there but its lines changed: that one needs a port
    assert (two["state"], two["smoke"]) == ("needs port", "fail")
    assert two["textual"].startswith("conflict")
    code, out, _ = demo.run("upstream", "demo-fix", "--target", "demo==2.0")
    assert "1/2 patches are removed upstream in demo 2.0: patch-1 can retire" in out


@pytest.fixture
def local_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """ckdemo 1.0 and 2.0 (2.0 needs cklib>=2), cklib 1.0 and 2.0, found by uv in a folder."""
    folder = tmp_path / "links"
    folder.mkdir()
    build_wheel(folder, "ckdemo", "1.0", DEMO_FILES, ("cklib<2",))
    build_wheel(folder, "ckdemo", "2.0", DEMO_2, ("cklib>=2",))
    for version in ("1.0", "2.0"):
        build_wheel(folder, "cklib", version, {f"cklib_{version[0]}/__init__.py": b""})
    monkeypatch.setenv("UV_FIND_LINKS", str(folder))
    return folder


def test_throwaway_env_installs_the_release_not_the_patchset_requirements(
    demo: Demo, local_index: Path
) -> None:
    patches = {"0001.patch": PATCH_GREET, "0002.patch": PATCH_UTIL}
    write_patchset(demo.patchsets, "ck-fix", patches, "==1.0", ["cklib<2"], distribution="ckdemo")
    args = ("--json", "--patchset-dir", str(demo.patchsets), "upstream", "ck-fix")
    code, out, err = run_cli(demo.capsys, *args, "--target", "ckdemo==2.0")  # no --python
    assert code == 0, err
    doc = json.loads(out)
    assert doc["target"] == "ckdemo==2.0"
    assert doc["unmet_requirements"] == ["needs cklib<2, found cklib 2.0"]
    assert [p["state"] for p in doc["patches"]] == ["removed upstream", "needs port"]


def test_a_resolver_conflict_is_one_line_naming_the_pair(demo: Demo, local_index: Path) -> None:
    patches = {"0001.patch": PATCH_GREET}
    write_patchset(demo.patchsets, "ck-fix", patches, "==1.0", distribution="ckdemo")
    args = ("--patchset-dir", str(demo.patchsets), "upstream", "ck-fix")
    code, _out, err = run_cli(demo.capsys, *args, "--target", "ckdemo==2.0", "--with", "cklib<2")
    assert code == 1
    assert err.count("\n") == 1 and err.startswith("compatkit: error: cannot install ")
    assert "Because" in err and "ckdemo==2.0" in err and "cklib" in err


@pytest.mark.parametrize(
    ("against", "pinned"),
    [
        ("ckdemo", "ckdemo==2.0"),
        ("ckdemo==latest", "ckdemo==2.0"),
        ("CKDemo == latest", "ckdemo==2.0"),
        ("ckdemo[fast]==latest", "ckdemo[fast]==2.0"),
        ("ckdemo==1.0", "ckdemo==1.0"),  # a version given: as it is
        ("cklib", "cklib==2.0"),
        ("ckpre", "ckpre==1.0rc1"),  # pre-releases only: the newest of them
    ],
)
def test_against_newest_picks_the_newest_final_release(
    local_index: Path, against: str, pinned: str
) -> None:
    """No version: the newest release there, a final one while there is one (3.0rc1 of
    ckdemo does not count), as an installer picks."""
    build_wheel(local_index, "ckdemo", "3.0rc1", DEMO_2)
    for version in ("0.9rc2", "1.0rc1"):
        build_wheel(local_index, "ckpre", version, {"ckpre/__init__.py": b""})
    source = WheelSource(wheel_dirs=(local_index,), index=False)
    assert str(against_newest(against, source)) == pinned


@pytest.mark.slow
def test_upstream_against_the_newest_release(
    demo: Demo, local_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--target ckdemo==latest`` installs and checks ckdemo 2.0, and says which it took."""
    build_wheel(local_index, "ckdemo", "3.0rc1", DEMO_2, ("cklib>=2",))
    monkeypatch.setenv("COMPATKIT_NO_INDEX", "1")  # versions from the local folder only
    monkeypatch.setenv("COMPATKIT_WHEEL_DIR", str(local_index))
    patches = {"0001.patch": PATCH_GREET, "0002.patch": PATCH_UTIL}
    write_patchset(demo.patchsets, "ck-fix", patches, "==1.0", distribution="ckdemo")
    args = ("--patchset-dir", str(demo.patchsets), "upstream", "ck-fix", "--target")
    code, out, err = run_cli(demo.capsys, "--json", *args, "ckdemo==latest")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["target"] == "ckdemo==2.0"
    assert [p["state"] for p in doc["patches"]] == ["removed upstream", "needs port"]
    code, out, err = run_cli(demo.capsys, *args, "ckdemo")
    assert code == 0, err
    assert out.startswith("the newest ckdemo on the index: ckdemo==2.0\n")


def test_against_latest_bad_input_is_one_line(demo: Demo, local_index: Path) -> None:
    write_patchset(demo.patchsets, "ck-fix", {"0001.patch": PATCH_GREET}, distribution="ckdemo")
    args = ("--patchset-dir", str(demo.patchsets), "upstream", "ck-fix", "--target")
    for against, code, why in (
        ("cklib==latest", 2, "--target names cklib, but ck-fix targets ckdemo"),
        ("ckdemo>=1,==latest", 2, "'latest' takes a bare distribution name"),
        ("ckdemo==", 2, "--target 'ckdemo=='"),
    ):
        got, _out, err = run_cli(demo.capsys, *args, against)
        assert got == code and why in err and err.count("\n") == 1, err


def test_against_latest_with_no_release_found(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COMPATKIT_NO_INDEX", "1")
    monkeypatch.setenv("COMPATKIT_WHEEL_DIR", str(tmp_path / "empty"))
    write_patchset(demo.patchsets, "ck-fix", {"0001.patch": PATCH_GREET}, distribution="ckdemo")
    args = ("--patchset-dir", str(demo.patchsets), "upstream", "ck-fix", "--target", "ckdemo")
    code, _out, err = run_cli(demo.capsys, *args)
    assert code == 1
    assert err == "compatkit: error: no release of ckdemo found in the wheel directories\n"


@pytest.mark.slow
def test_upstream_takes_its_wheels_from_wheel_dir_offline(
    demo: Demo, local_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--wheel-dir DIR --offline``: the newest release is found in DIR, and the throw-away
    environment installs from DIR (and uv's cache), never from the index (issue 35, item 6)."""
    monkeypatch.delenv("UV_FIND_LINKS")  # only --wheel-dir says where ckdemo and cklib are
    patches = {"0001.patch": PATCH_GREET, "0002.patch": PATCH_UTIL}
    write_patchset(demo.patchsets, "ck-fix", patches, "==1.0", distribution="ckdemo")
    args = ("--json", "--patchset-dir", str(demo.patchsets), "upstream", "ck-fix")
    where = ("--target", "ckdemo", "--offline", "--wheel-dir", str(local_index))
    code, out, err = run_cli(demo.capsys, *args, *where)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["target"] == "ckdemo==2.0"
    assert [p["state"] for p in doc["patches"]] == ["removed upstream", "needs port"]
