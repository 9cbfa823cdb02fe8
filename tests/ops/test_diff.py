"""compatkit diff: hand edits of a real installed wheel become a patch recorded as applied."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from compatkit.load.validate import load_patchset
from helpers import DEMO_FILES, Demo, Venv, build_wheel, run_cli


@pytest.fixture(autouse=True)
def _no_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(tmp_path / "ck-cache"))
    monkeypatch.setenv("COMPATKIT_NO_INDEX", "1")


def _diff(demo: Demo, *args: str) -> tuple[int, str, str]:
    where = ("--wheel-dir", str(demo.wheel.parent), "-o", str(demo.patchsets))
    return demo.run("diff", "demo", *where, *args)


def _state(demo: Demo, name: str) -> dict[str, str]:
    code, out, _ = demo.run("status", name, "--json")
    assert code == 0
    return {p["id"]: p["status"] for p in json.loads(out)["patchsets"][0]["patches"]}


def test_one_edited_file_becomes_an_applied_patch(demo: Demo) -> None:
    before = demo.venv.snapshot()
    greet = demo.venv.site / "demo/greet.py"
    greet.write_text(greet.read_text().replace("'hello '", "'good day '"))
    edited = demo.venv.snapshot()
    code, _out, err = _diff(demo, "--patchset", "local", "--id", "patch-1", "--title", "Be formal")
    assert code == 0, err
    root = demo.patchsets / "local"
    patch = (root / "patches/patch-1-be-formal.patch").read_text()
    assert "Symptom: TODO" in patch and "Smoke-Test: smoke/test_patch_1.py" in patch
    assert "-    return 'hello ' + name\n+    return 'good day ' + name\n" in patch
    ps = load_patchset(root)
    assert str(ps.specifier) == "==1.0" and ps.distribution == "demo"
    assert [fd.path for fd in ps.patches[0].files] == ["demo/greet.py"]
    assert "import demo.greet" in (root / "smoke/test_patch_1.py").read_text()
    # the install still holds the edit, now owned by compatkit: applied without a re-apply
    assert {k: v for k, v in demo.venv.snapshot().items() if "dist-info" not in k} == {
        k: v for k, v in edited.items() if "dist-info" not in k
    }
    assert _state(demo, "local") == {"patch-1": "applied"}
    assert demo.run("verify", "local")[0] == 0
    assert demo.run("revert", "local")[0] == 0
    assert demo.venv.snapshot() == before


def test_several_files_a_new_file_and_stray_bytecode(demo: Demo) -> None:
    before = demo.venv.snapshot()
    site = demo.venv.site
    (site / "demo/greet.py").write_text("def hello(name):\n    return 'yo ' + name\n")
    util = site / "demo/util.py"
    util.write_text(util.read_text().replace("line30 = 30\n", "line30 = 'thirty'\n"))
    (site / "demo/extra.py").write_text("EXTRA = True\n")
    (site / "demo/__pycache__").mkdir(exist_ok=True)
    (site / "demo/__pycache__/stray.cpython-311.pyc").write_bytes(b"\0junk")
    code, _out, err = _diff(demo, "--patchset", "local", "--id", "patch-7")
    assert code == 0, err
    ps = load_patchset(demo.patchsets / "local")
    kinds = {fd.path: fd.kind for fd in ps.patches[0].files}
    assert kinds == {"demo/greet.py": "modify", "demo/util.py": "modify", "demo/extra.py": "create"}
    record = (site / "demo-1.0.dist-info/RECORD").read_text()
    assert "demo/extra.py,sha256=" in record
    assert _state(demo, "local") == {"patch-7": "applied"}
    assert demo.run("revert", "local")[0] == 0
    assert not (site / "demo/extra.py").exists()
    (site / "demo/__pycache__/stray.cpython-311.pyc").unlink()
    assert demo.venv.snapshot() == before


def test_crlf_and_no_final_newline(
    tmp_path: Path, make_venv: Callable[..., Venv], capsys: pytest.CaptureFixture[str]
) -> None:
    files = {
        "crlf/__init__.py": b"",
        "crlf/win.py": b"".join(b"v%d = %d\r\n" % (i, i) for i in range(12)),
        "crlf/tail.py": b"a = 1\nb = 2",
    }
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    venv = make_venv()
    venv.install(build_wheel(wheels, "crlf", "2.0", files), "uv", "--link-mode", "copy")
    before = venv.snapshot()
    win, tail = venv.site / "crlf/win.py", venv.site / "crlf/tail.py"
    win.write_bytes(win.read_bytes().replace(b"v5 = 5\r\n", b"v5 = 'five'\r\nv55 = 55\r\n"))
    tail.write_bytes(b"a = 1\nb = 3")
    (venv.site / "crlf/new_win.py").write_bytes(b"n = 1\r\nm = 2\r\n")  # created: kept exactly
    names = ("crlf/win.py", "crlf/tail.py", "crlf/new_win.py")
    edited = {p: venv.site.joinpath(p).read_bytes() for p in names}
    patchsets = tmp_path / "patchsets"
    args = ["--python", venv.python, "--patchset-dir", str(patchsets)]
    code, _, err = run_cli(
        capsys, "diff", "crlf", "--patchset", "w", "--id", "p-1", *args, "-o", str(patchsets),
        "--wheel-dir", str(wheels),
    )  # fmt: skip
    assert code == 0, err
    text = next((patchsets / "w/patches").glob("*.patch")).read_bytes()
    assert b"\\ No newline at end of file\n" in text
    assert text.count(b"\r") == 2 and b"+n = 1\r\n+m = 2\r\n" in text  # only the new file
    assert {p: venv.site.joinpath(p).read_bytes() for p in edited} == edited
    assert run_cli(capsys, "revert", "w", *args)[0] == 0
    assert venv.snapshot() == before
    assert run_cli(capsys, "apply", "w", *args)[0] == 0
    assert {p: venv.site.joinpath(p).read_bytes() for p in edited} == edited


def test_new_patch_on_top_of_an_applied_patchset(demo: Demo) -> None:
    before = demo.venv.snapshot()
    assert demo.run("apply", "demo-fix")[0] == 0
    greet = demo.venv.site / "demo/greet.py"
    greet.write_text(greet.read_text().replace("WHO = 'world'", "WHO = 'everyone'"))
    code, _, err = _diff(demo, "--patchset", "demo-fix", "--id", "patch-3", "--title", "Everyone")
    assert code == 0, err
    patch = (demo.patchsets / "demo-fix/patches/patch-3-everyone.patch").read_text()
    assert " def hello(name):\n-    return 'hi ' + name" not in patch  # relative to patch-1
    assert "-WHO = 'world'\n+WHO = 'everyone'\n" in patch
    assert _state(demo, "demo-fix") == {
        "patch-1": "applied",
        "patch-2": "applied",
        "patch-3": "applied",
    }
    assert demo.run("revert", "demo-fix")[0] == 0
    assert demo.venv.snapshot() == before


def test_no_edits_and_duplicate_ids_are_refused(demo: Demo) -> None:
    code, _, err = _diff(demo, "--patchset", "local", "--id", "patch-1")
    assert code == 1 and "no edited files" in err
    assert not (demo.patchsets / "local").exists()
    assert demo.run("apply", "demo-fix")[0] == 0
    (demo.venv.site / "demo/util.py").write_text("changed = 1\n")
    code, _, err = _diff(demo, "--patchset", "demo-fix", "--id", "patch-2")
    assert code == 2 and "already has a patch patch-2" in err


def test_a_cache_copy_edited_through_a_hardlink_is_not_trusted(
    tmp_path: Path,
    make_venv: Callable[..., Venv],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    venv = make_venv()
    venv.install(build_wheel(wheels, "demo", "1.0", DEMO_FILES), "uv", "--link-mode", "hardlink")
    greet = venv.site / "demo/greet.py"
    with greet.open("r+b") as fh:  # an in-place edit, as many editors do: uv's copy changes too
        fh.write(b"#")
    patchsets = tmp_path / "patchsets"
    args = ["--python", venv.python, "--patchset-dir", str(patchsets)]
    made = ("--patchset", "x", "--id", "p-1", "-o", str(patchsets))
    code, _, err = run_cli(capsys, "diff", "demo", *made, *args)
    assert code == 1 and "does not match the wheel's RECORD" in err
    assert not (patchsets / "x").exists()
    # with the real wheel at hand the same edit works
    code, _, err = run_cli(capsys, "diff", "demo", *made, *args, "--wheel-dir", str(wheels))
    assert code == 0, err


def _refused(demo: Demo, name: str, patch_id: str) -> tuple[int, str]:
    """diff into ``name`` refused before anything is read or written: (exit code, message)."""
    before = (demo.venv.snapshot(), sorted(p for p in demo.patchsets.rglob("*")))
    code, out, err = _diff(demo, "--patchset", name, "--id", patch_id)
    assert code != 0 and out == "", out
    assert (demo.venv.snapshot(), sorted(p for p in demo.patchsets.rglob("*"))) == before
    (line,) = err.strip().splitlines()
    return code, line


def test_diff_into_a_patchset_that_already_has_the_id(demo: Demo) -> None:
    assert _refused(demo, "demo-fix", "patch-1") == (
        2,
        "compatkit: error: demo-fix already has a patch patch-1",
    )


def test_diff_into_a_patchset_of_another_distribution(demo: Demo) -> None:
    from helpers import write_patchset

    write_patchset(demo.patchsets, "other", distribution="otherlib")
    assert _refused(demo, "other", "patch-9") == (
        2,
        "compatkit: error: other targets otherlib, not demo",
    )


def test_diff_into_a_patchset_changed_since_it_was_applied(demo: Demo) -> None:
    assert demo.run("apply", "demo-fix")[0] == 0
    toml = demo.patchsets / "demo-fix/patchset.toml"
    toml.write_text(toml.read_text().replace('version = "1.0.0"', 'version = "1.0.1"'))
    assert _refused(demo, "demo-fix", "patch-9") == (
        1,
        "compatkit: error: demo-fix changed since it was applied; run 'compatkit apply demo-fix'",
    )


def test_diff_into_an_applied_patchset_whose_folder_is_gone(demo: Demo, tmp_path: Path) -> None:
    assert demo.run("apply", "demo-fix")[0] == 0
    (demo.patchsets / "demo-fix").rename(tmp_path / "moved-away")
    assert _refused(demo, "demo-fix", "patch-9") == (
        1,
        "compatkit: error: demo-fix is applied here but its patchset directory is gone",
    )
