"""Every command that resolves a patch's file names binds a traditional diff's differing
``---``/``+++`` names as ``apply`` does (issue 44): ``--- demo/util.py`` / ``+++
demo/util_new.py`` patches ``demo/util.py`` when only that file is in the distribution (git
would take the ``+++`` name), in lint's pristine-wheel check, in ``diff`` on top of it, and in
``rebase``, as in apply, status and verify."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compatkit.load.validate import load_patchset
from helpers import (
    DEMO_FILES,
    UTIL_LINE20_HUNK,
    Demo,
    build_wheel,
    patch_text,
    run_cli,
    write_patchset,
)

TRADITIONAL = patch_text(
    "patch-9",
    "--- demo/util.py\t2024-01-01 00:00:00.000000000 +0000\n"
    "+++ demo/util_new.py\t2024-01-01 00:00:00.000000000 +0000\n" + UTIL_LINE20_HUNK,
    "Line 20",
    smoke=2,
)


def _trad(base: Path) -> Path:
    return write_patchset(base, "trad", {"0001.patch": TRADITIONAL})


def test_the_status_apply_and_verify_baseline(demo: Demo) -> None:
    """What the other commands must agree with: apply patches the installed name."""
    _trad(demo.patchsets)
    code, out, err = demo.run("status", "trad")
    assert code == 0 and "applies cleanly" in out, out + err
    assert demo.run("apply", "trad")[0] == 0
    assert b"line20 = 200\n" in (demo.venv.site / "demo/util.py").read_bytes()
    assert demo.run("verify", "trad")[0] == 0


def test_lint_checks_the_pristine_wheel_on_the_installed_name(
    tmp_path: Path, wheels: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: 'does not apply to demo 1.0: demo/util_new.py ... does not exist'."""
    _trad(tmp_path / "ps")
    code, out, err = run_cli(capsys, "lint", "--patchset-dir", str(tmp_path / "ps"), "trad")
    assert code == 0, out + err
    assert "trad: ok" in out and "checked against demo 1.0" in out


def test_diff_on_top_of_a_patchset_with_differing_names(demo: Demo) -> None:
    """Before: diff re-derived what the applied patchset wrote on the unbound name, and failed."""
    _trad(demo.patchsets)
    assert demo.run("apply", "trad")[0] == 0
    greet = demo.venv.site / "demo/greet.py"
    copy = greet.with_name("greet.py.tmp")
    copy.write_bytes(greet.read_bytes().replace(b"'hello '", b"'good day '"))
    copy.replace(greet)  # a file of its own: never an edit through uv's hardlink
    where = ("--wheel-dir", str(demo.wheel.parent), "-o", str(demo.patchsets))
    code, out, err = demo.run("diff", "demo", *where, "--patchset", "trad", "--id", "patch-10")
    assert code == 0, out + err
    code, out, _ = demo.run("status", "trad", "--json")
    patches = json.loads(out)["patchsets"][0]["patches"]
    assert {p["id"]: p["status"] for p in patches} == {"patch-9": "applied", "patch-10": "applied"}
    assert demo.run("verify", "trad")[0] == 0


def test_rebase_ports_the_installed_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: 'does not apply to the old version' (it read demo/util_new.py from the wheel)."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    build_wheel(folder, "demo", "1.0", DEMO_FILES)
    moved = b"# moved\n# down\n" + DEMO_FILES["demo/util.py"]
    build_wheel(folder, "demo", "1.1", {**DEMO_FILES, "demo/util.py": moved})
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(tmp_path / "ck-cache"))
    monkeypatch.setenv("COMPATKIT_NO_INDEX", "1")
    base = tmp_path / "ps"
    _trad(base)
    code, out, err = run_cli(
        capsys, "rebase", "--patchset-dir", str(base), "--wheel-dir", str(folder),
        "trad", "--target", "demo==1.1", "--json",
    )  # fmt: skip
    assert code == 0, out + err
    (patch,) = json.loads(out)["patches"]
    assert patch["status"] == "offset" and patch["conflicts"] == [], patch
    ported = load_patchset(base / "trad-1.1")
    assert [(fd.path, fd.kind) for fd in ported.patches[0].files] == [("demo/util.py", "modify")]
