"""compatkit wheel: the pristine wheel with a patchset built in, installed by uv and pip."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import compatkit
from compatkit.delivery import wheelfile
from compatkit.delivery.wheelrelease import WholeWheel, whole_wheel
from compatkit.errors import CompatkitError
from compatkit.model.records import Record, hash_bytes
from compatkit.ops import wheel as wheel_ops
from helpers import (
    DEMO_FILES,
    PATCH_GREET,
    UV,
    Demo,
    Venv,
    build,
    build_wheel,
    built,
    needs_uv,
    write_patchset,
)


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(tmp_path / "ck-cache"))
    monkeypatch.setenv("COMPATKIT_NO_INDEX", "1")
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)


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
    args = ["wheel", "demo-fix", "-o", str(tmp_path / "o"), "--wheel-dir", str(wheels)]
    code, out, err = demo.run("--json", *args)
    assert code == 0 and json.loads(out)["source"] != str(src), "no script in the release"
    shutil.rmtree(tmp_path / "o")  # that one came from uv's cache: the demo without a script
    demo.venv.install(src, "uv", "--reinstall", "--link-mode", "copy")  # now the release
    code, out, err = demo.run("--json", *args)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["proof"] == "the installed RECORD" and doc["source"] == str(src), "its script too"
    (whl,) = (tmp_path / "o").glob("*.whl")
    with zipfile.ZipFile(whl) as zf:
        modes = {i.filename: i.external_attr >> 16 for i in zf.infolist()}
    (script,) = [n for n in modes if n.endswith("demo-run")]
    assert script.startswith("demo-1.0+ck.") and modes[script] == 0o100755


ELSEWHERE = """
import sys
sys.modules["cyclonedx"] = None  # compatkit writes SBOMs without cyclonedx-python-lib
import compatkit
compatkit.__version__ = "99.1.0"  # as if another release of compatkit built it
from compatkit.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_the_bytes_depend_on_neither_the_extra_nor_compatkits_version(
    demo: Demo, tmp_path: Path
) -> None:
    here = built(demo, tmp_path / "here").read_bytes()
    env = {
        "PYTHONPATH": str(Path(compatkit.__file__).resolve().parent.parent),
        "COMPATKIT_NO_INDEX": "1",
        "COMPATKIT_CACHE_DIR": str(tmp_path / "ck-cache"),
        "PATH": "/usr/bin:/bin",
    }
    out = tmp_path / "there"
    cmd = [sys.executable, "-c", ELSEWHERE, "--python", demo.venv.python]
    cmd += ["--patchset-dir", str(demo.patchsets), "wheel", "demo-fix", "-o", str(out)]
    cmd += ["--wheel-dir", str(demo.wheel.parent)]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    (whl,) = out.glob("*.whl")
    assert whl.read_bytes() == here
    with zipfile.ZipFile(whl) as zf:
        sbom = next(zf.read(n) for n in zf.namelist() if n.endswith("/sboms/compatkit.cdx.json"))
    tool = json.loads(sbom)["metadata"]["tools"]["components"][0]
    assert "version" not in tool and compatkit.__version__.encode() not in sbom
    assert tool["properties"] == [
        {"name": "compatkit:wheel-format", "value": str(wheel_ops.WHEEL_FORMAT)}
    ]


def test_the_format_number_is_in_the_name(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = built(demo, tmp_path / "a")
    monkeypatch.setattr(wheel_ops, "WHEEL_FORMAT", wheel_ops.WHEEL_FORMAT + 1)
    bumped = built(demo, tmp_path / "b")
    assert bumped.name != first.name, "a new format never reuses a file name"


def _uv(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    drop = ("VIRTUAL_ENV", "PYTHONPATH", "UV_PROJECT_ENVIRONMENT", "CONDA_PREFIX")
    env = {k: v for k, v in os.environ.items() if k not in drop} | {"UV_PYTHON": sys.executable}
    cmd = [UV or "uv", *args, "--offline", "-q"]
    return subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=env)


def _project(demo: Demo, root: Path, whl: Path, requirement: str) -> None:
    write_patchset(root / "patchsets")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "sample"\nversion = "0"\nrequires-python = ">=3.10"\n'
        f'dependencies = ["{requirement}"]\n\n[tool.uv]\npackage = false\n\n'
        f'[tool.uv.sources]\ndemo = {{ path = "wheels/{whl.name}" }}\n\n'
        '[tool.compatkit]\npatchsets = ["demo-fix"]\npatchset-dirs = ["patchsets"]\n'
    )


@needs_uv
def test_the_lockfile_pins_the_patched_wheel_and_refuses_another(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sample"
    whl = built(demo, root / "wheels")
    _project(demo, root, whl, "demo==1.0")
    assert _uv(root, "lock").returncode == 0
    digest = hashlib.sha256(whl.read_bytes()).hexdigest()
    assert f"sha256:{digest}" in (root / "uv.lock").read_text()
    run = _uv(root, "sync", "--locked")
    assert run.returncode == 0, run.stderr
    venv = Venv(root / ".venv")
    here = Demo(venv, root / "patchsets", demo.wheel, demo.capsys)
    monkeypatch.chdir(root)
    assert here.run("verify")[0] == 0, "the project's [tool.compatkit] set, built in"
    before = venv.snapshot()
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")  # other bytes, the same name
    code, _, err = demo.run("wheel", "demo-fix", "-o", str(root / "wheels"), "--overwrite",
                            "--wheel-dir", str(demo.wheel.parent))  # fmt: skip
    assert code == 0 and hashlib.sha256(whl.read_bytes()).hexdigest() != digest, err
    run = _uv(root, "sync", "--locked", "--reinstall")
    assert run.returncode != 0 and "hash" in run.stderr.lower(), run.stderr
    assert venv.snapshot() == before, "nothing of the other wheel was installed"


@needs_uv
def test_an_upgrade_past_the_patched_wheel_names_the_next_step(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sample"
    whl = built(demo, root / "wheels")
    _project(demo, root, whl, "demo==1.0")
    assert _uv(root, "sync").returncode == 0
    run = _uv(root, "add", "demo==2.0")  # the path source stays: uv keeps 1.0+ck.…
    assert run.returncode == 0, run.stderr
    assert '"demo==2.0"' in (root / "pyproject.toml").read_text()
    venv = Venv(root / ".venv")
    assert next(venv.site.glob("demo-1.0+ck.*.dist-info")), "uv kept the patched wheel"
    here = Demo(venv, root / "patchsets", demo.wheel, demo.capsys)
    monkeypatch.chdir(root)
    code, _, err = here.run("verify")
    assert code == 1 and "the installed patched wheel is not what the project asks for" in err
    assert "asks for demo==2.0: demo 1.0+ck." in err and "built with demo-fix" in err
    assert "compatkit upstream" in err and "compatkit wheel" in err
    assert "drop the path source" in err and "reinstall" not in err
    code, out, _ = here.run("status")
    assert code == 0 and "warning: " in out and "asks for demo==2.0: demo 1.0+ck." in out
    write_patchset(root / "patchsets", name="demo-fix-2", specifier="==2.0")
    code, _, err = here.run("verify", "demo-fix-2")
    assert code == 1 and "demo-fix-2: demo 1.0+ck." in err and "not demo==2.0" in err
    assert "compatkit wheel" in err and "reinstall" not in err
    code, out, _ = here.run("status", "demo-fix-2")
    assert code == 0 and "built with demo-fix, not demo==2.0" in out
    assert "drop the path source" in out


# The demo wheel's sha256 per wheel format, with the zlib that deflated it (another deflate
# implementation may compress differently). A change to what compatkit wheel writes that
# fails this test needs WHEEL_FORMAT bumped and a line in docs/delivery.md, in that commit.
GOLDEN = {2: ("1.2.13", "347be72516d62c90a00dee7fdb9b1205f98a31906441ed5bf29053889e858dbf")}


def test_a_change_of_bytes_comes_with_a_format_bump(demo: Demo, tmp_path: Path) -> None:
    import zlib

    zlib_version, expected = GOLDEN[wheel_ops.WHEEL_FORMAT]  # KeyError: record the new format
    if zlib_version != zlib.ZLIB_RUNTIME_VERSION:
        pytest.skip(f"zlib {zlib.ZLIB_RUNTIME_VERSION}, not {zlib_version}")
    whl = built(demo, tmp_path / "out")
    assert hashlib.sha256(whl.read_bytes()).hexdigest() == expected, (
        "compatkit wheel's bytes changed: bump WHEEL_FORMAT (ops/wheel.py) and say why in "
        "docs/delivery.md"
    )


def test_a_source_file_changed_after_its_proof_is_refused(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files of the source wheel are proven by hashes taken streamed and copied later, in
    pieces: one changed in between (one no patch edits, so only the copy reads it again) is
    hashed again on the way, refused, and nothing is left (no wheel, no temp, no folder)."""
    unpacked = tmp_path / "uv" / "archive-v0" / "demo"
    with zipfile.ZipFile(demo.wheel) as zf:
        zf.extractall(unpacked)
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv"))
    monkeypatch.setenv("PIP_CACHE_DIR", str(tmp_path / "no-pip"))

    def then_changed(*args: Any, **kwargs: Any) -> WholeWheel:
        whole = whole_wheel(*args, **kwargs)
        (unpacked / "demo" / "__init__.py").write_bytes(b"changed after its proof\n")
        return whole

    monkeypatch.setattr(wheel_ops, "whole_wheel", then_changed)
    out = tmp_path / "out"
    code, _, err = demo.run("wheel", "demo-fix", "-o", str(out))
    assert code == 1 and "demo/__init__.py changed while compatkit read it" in err, err
    assert not out.exists()
    monkeypatch.setattr(wheel_ops, "whole_wheel", whole_wheel)
    (unpacked / "demo" / "__init__.py").write_bytes(DEMO_FILES["demo/__init__.py"])
    assert demo.run("wheel", "demo-fix", "-o", str(out))[0] == 0


def test_other_bytes_under_the_name_are_kept_and_no_temp_is_left(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wheel is written to a temp file first: refused over another wheel of the same
    name, it leaves that one as it was and no temp file beside it."""
    whl = built(demo, tmp_path / "out")
    before = whl.read_bytes()
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")  # other bytes, the same name
    code, _, err = build(demo, tmp_path / "out")
    assert code == 1 and "exists with other bytes" in err, err
    assert whl.read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [whl.name]
