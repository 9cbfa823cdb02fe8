"""compatkit wheel: the pristine wheel with a patchset built in, installed by uv and pip."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from compatkit import wheelfile
from compatkit.errors import CompatkitError
from compatkit.records import Record, hash_bytes
from conftest import DEMO_FILES, PATCH_GREET, UV, Demo, Venv, build_wheel, write_patchset

needs_uv = pytest.mark.skipif(UV is None, reason="needs uv")


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(tmp_path / "ck-cache"))
    monkeypatch.setenv("COMPATKIT_NO_INDEX", "1")
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)


def build(demo: Demo, out: Path, *args: str) -> tuple[int, str, str]:
    return demo.run(
        "wheel", "demo-fix", "-o", str(out), "--wheel-dir", str(demo.wheel.parent), *args
    )


def built(demo: Demo, out: Path) -> Path:
    code, _, err = build(demo, out)
    assert code == 0, err
    (whl,) = out.glob("*.whl")
    return whl


def test_the_wheel_is_renamed_patched_and_its_record_true(demo: Demo, tmp_path: Path) -> None:
    whl = built(demo, tmp_path / "out")
    code, out, _ = build(demo, tmp_path / "out", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["source"] == str(demo.wheel)
    version = doc["version"]
    assert version.startswith("1.0+ck.") and len(version) == len("1.0+ck.") + 16
    assert whl.name == f"demo-{version}-py3-none-any.whl" and doc["unchanged"] is True
    info = f"demo-{version}.dist-info"
    with zipfile.ZipFile(whl) as zf:
        files = {n: zf.read(n) for n in zf.namelist()}
        modes = {i.filename: i.external_attr >> 16 for i in zf.infolist()}
    assert f"Version: {version}\n".encode() in files[f"{info}/METADATA"]
    assert not [n for n in files if n.startswith("demo-1.0.dist-info")]
    assert b"'hi ' + name" in files["demo/greet.py"]
    assert b"line20 = 200\n" in files["demo/util.py"]
    rows = Record.parse(files[f"{info}/RECORD"]).rows
    assert {r.path for r in rows} == set(files)
    for row in rows:
        if row.path != f"{info}/RECORD":
            assert row.hash == hash_bytes(files[row.path]) and row.size == len(files[row.path])
    assert list(files)[-1] == f"{info}/RECORD" and set(modes.values()) == {0o100644}
    state = json.loads(files[f"{info}/compatkit/demo-fix.json"])
    assert state["built_in"] is True and state["applied"] == ["patch-1", "patch-2"]
    assert all(f["backup"] is None for f in state["files"]), "no originals in a wheel"


def test_the_same_input_gives_the_same_bytes(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = built(demo, tmp_path / "a").read_bytes()
    assert built(demo, tmp_path / "b").read_bytes() == first
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    later = built(demo, tmp_path / "c").read_bytes()
    assert later != first and built(demo, tmp_path / "d").read_bytes() == later
    write_patchset(demo.patchsets, patches={"0001.patch": PATCH_GREET})
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    other = built(demo, tmp_path / "e")
    assert other.read_bytes() != first and "+ck." in other.name


@needs_uv
@pytest.mark.parametrize("installer", ["uv", pytest.param("pip", marks=pytest.mark.slow)])
def test_installed_wheel_reports_built_in(
    demo: Demo, tmp_path: Path, make_venv: Callable[..., Venv], installer: str
) -> None:
    whl = built(demo, tmp_path / "out")
    venv = make_venv(with_pip=installer == "pip")
    venv.install(whl, installer)
    there = Demo(venv, demo.patchsets, demo.wheel, demo.capsys)
    code, out, _ = there.run("--json", "status", "demo-fix")
    ps = json.loads(out)["patchsets"][0]
    assert ps["state"] == "applied (built in)"
    assert {p["status"] for p in ps["patches"]} == {"built in"}
    assert there.run("verify", "demo-fix")[0] == 0
    assert there.run("verify")[0] == 0, "no name: every applied patchset here"
    code, out, _ = there.run("explain", "patch-1")
    assert code == 0 and "here: built in (by the installed wheel demo 1.0+ck." in out
    code, out, _ = there.run("list")
    assert "built in" in out
    before = venv.snapshot()
    code, _, err = there.run("revert", "demo-fix")
    assert code == 1 and "reinstall the pristine wheel (demo==1.0)" in err
    assert there.run("apply", "demo-fix")[0] == 0, "the same patchset: nothing to do"
    write_patchset(demo.patchsets, patches={"0001.patch": PATCH_GREET})
    code, _, err = there.run("apply", "demo-fix")
    assert code == 1 and "built into the installed wheel" in err
    assert "build the wheel again" in err
    assert venv.snapshot() == before
    code, out, _ = there.run("status", "demo-fix")
    assert "outdated" in out and "build the wheel again" in out
    (venv.site / "demo/greet.py").write_text("edited\n")
    code, _, err = there.run("verify", "demo-fix")
    assert code == 1 and "demo/greet.py was edited after compatkit patched it" in err


def test_bad_input_changes_nothing(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    code, _, err = demo.run("wheel", "nope", "-o", str(out))
    assert code == 2 and "nope" in err
    write_patchset(demo.patchsets, name="stale", specifier="==2.0")
    code, _, err = demo.run("wheel", "stale", "-o", str(out))
    assert code == 1 and "stale targets demo==2.0, not demo 1.0" in err
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "empty-uv"))
    monkeypatch.setenv("PIP_CACHE_DIR", str(tmp_path / "empty-pip"))
    code, _, err = demo.run("wheel", "demo-fix", "-o", str(out))  # no copy anywhere, offline
    assert code == 1 and "cannot get the pristine wheel of demo 1.0" in err
    assert "offline: no download tried" in err
    bad = PATCH_GREET.replace(" def hello(name):", " def hello(nom):")
    write_patchset(demo.patchsets, name="broken", patches={"0001.patch": bad})
    code, _, err = demo.run(
        "wheel", "broken", "-o", str(out), "--wheel-dir", str(demo.wheel.parent)
    )
    assert code == 1 and "demo/greet.py" in err
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    code, _, err = build(demo, out)
    assert code == 2 and "SOURCE_DATE_EPOCH='yesterday'" in err
    assert not out.exists()


@needs_uv
def test_the_pristine_wheel_comes_from_uvs_cache(demo: Demo, tmp_path: Path) -> None:
    code, out, err = demo.run("--json", "wheel", "demo-fix", "-o", str(tmp_path / "o"))
    assert code == 0, err
    assert "archive-v0" in json.loads(out)["source"], "the demo fixture installed it with uv"
    with_dir = built(demo, tmp_path / "p")
    assert (tmp_path / "o" / with_dir.name).read_bytes() == with_dir.read_bytes()


def test_a_corrupt_copy_is_skipped_for_an_intact_one(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "empty-uv"))
    monkeypatch.setenv("PIP_CACHE_DIR", str(tmp_path / "empty-pip"))
    bad_dir = tmp_path / "bad"
    bad_dir.mkdir()
    corrupt = bad_dir / demo.wheel.name
    with zipfile.ZipFile(demo.wheel) as src, zipfile.ZipFile(corrupt, "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            dst.writestr(name, b"tampered\n" if name == "demo/util.py" else data)
    code, _, err = demo.run(
        "wheel", "demo-fix", "-o", str(tmp_path / "o"), "--wheel-dir", str(bad_dir)
    )
    assert code == 1 and "demo/util.py does not match the wheel's RECORD" in err
    assert not (tmp_path / "o").exists()
    args = ["--wheel-dir", str(bad_dir), "--wheel-dir", str(demo.wheel.parent)]
    code, _, err = demo.run("wheel", "demo-fix", "-o", str(tmp_path / "o"), *args)
    assert code == 0, err


def test_names_follow_the_wheel_spec(tmp_path: Path) -> None:
    meta = b"Wheel-Version: 1.0\nBuild: 7\nTag: py2-none-any\nTag: py3-none-any\n"
    assert (
        wheelfile.wheel_name("My.Pkg", "1.0+ck.ab", meta)
        == "my_pkg-1.0+ck.ab-7-py2.py3-none-any.whl"
    )
    with pytest.raises(CompatkitError, match="do not compress"):
        wheelfile.wheel_name("x", "1", b"Tag: cp311-cp311-linux_x86_64\nTag: py3-none-any\n")
    assert wheelfile.set_version(b"Name: x\r\nVersion: 1\r\n\r\nVersion: 9\n", "2") == (
        b"Name: x\r\nVersion: 2\r\n\r\nVersion: 9\n"
    )
    assert wheelfile.rename_metadata("x-1.data/scripts/run", "x-1", "x-1+ck.a") == (
        "x-1+ck.a.data/scripts/run"
    )


def test_scripts_keep_their_executable_bit(demo: Demo, tmp_path: Path) -> None:
    files = {**DEMO_FILES, "demo-1.0.data/scripts/demo-run": b"#!python\nprint(1)\n"}
    wheels = tmp_path / "w"
    wheels.mkdir()
    src = build_wheel(wheels, "demo", "1.0", files)
    mode_fixed = wheels / "fixed.whl"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(mode_fixed, "w") as zout:
        for info in zin.infolist():
            if info.filename.endswith("demo-run"):
                info.external_attr = 0o100755 << 16
            zout.writestr(info, zin.read(info.filename))
    mode_fixed.replace(src)
    code, _, err = demo.run(
        "wheel", "demo-fix", "-o", str(tmp_path / "o"), "--wheel-dir", str(wheels)
    )
    assert code == 0, err
    (whl,) = (tmp_path / "o").glob("*.whl")
    with zipfile.ZipFile(whl) as zf:
        modes = {i.filename: i.external_attr >> 16 for i in zf.infolist()}
    (script,) = [n for n in modes if n.endswith("demo-run")]
    assert script.startswith("demo-1.0+ck.") and modes[script] == 0o100755
