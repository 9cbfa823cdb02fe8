"""compatkit smoke and prove on the demo patchset, in a real target venv."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import PATCH_GREET, PATCH_UTIL, SMOKE_1, SMOKE_2, UV, Demo, write_patchset

pytestmark = pytest.mark.skipif(UV is None, reason="needs uv")


def _add_pytest(demo: Demo) -> None:
    subprocess.run(
        [UV or "uv", "pip", "install", "-q", "--python", demo.venv.python, "pytest"], check=True
    )


def test_missing_pytest_is_a_clear_error(demo: Demo) -> None:
    code, _, err = demo.run("smoke", "demo-fix")
    assert code == 1
    assert "pytest is not installed in the target environment" in err
    assert err.count("\n") == 1


@pytest.mark.slow
def test_smoke_reports_per_patch_and_exit_code(demo: Demo) -> None:
    _add_pytest(demo)
    code, out, _ = demo.run("smoke", "demo-fix", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["applied"] == []
    assert [p["result"] for p in doc["patches"]] == ["fail", "fail"]
    assert "assert 'hello x' == 'hi x'" in doc["patches"][0]["reason"]
    assert demo.run("apply", "demo-fix", "--exclude", "patch-2")[0] == 0
    code, out, _ = demo.run("smoke", "demo-fix", "--json")
    assert [p["result"] for p in json.loads(out)["patches"]] == ["pass", "fail"]
    code, out, _ = demo.run("smoke", "demo-fix", "--patch", "patch-1")
    assert code == 0 and "excluded: patch-2" in out


@pytest.mark.slow
def test_prove_demo_patchset(demo: Demo, tmp_path: Path) -> None:
    _add_pytest(demo)
    before = demo.venv.snapshot()
    code, _, err = demo.run("prove", "demo-fix", "-o", str(tmp_path / "r"))
    assert code == 0, err
    rows = json.loads((tmp_path / "r" / "demo-fix.json").read_text())
    assert [(r["unpatched"], r["without"], r["patched"]) for r in rows] == [
        ("fail", "fail", "pass")
    ] * 2
    assert demo.venv.snapshot() == before


@pytest.mark.slow
def test_prove_catches_a_smoke_test_that_cannot_fail(demo: Demo) -> None:
    _add_pytest(demo)
    (demo.patchsets / "demo-fix/smoke/test_patch_2.py").write_text("def test_ok():\n    pass\n")
    code, _, err = demo.run("prove", "demo-fix")
    assert code == 1 and "not proven both ways: patch-2" in err


@pytest.mark.slow
def test_upstream_classifies_by_smoke_test_and_by_diff(demo: Demo) -> None:
    _add_pytest(demo)
    code, out, err = demo.run("upstream", "demo-fix", "--target", "demo==1.0", "--json")
    assert code == 0, err
    verdicts = {p["id"]: (p["state"], p["textual"]) for p in json.loads(out)["patches"]}
    assert verdicts == {
        "patch-1": ("still needed", "applies cleanly"),
        "patch-2": ("still needed", "applies cleanly"),
    }
    # "upstream" ships patch-1's fix, and changes the lines patch-2 touches another way
    greet = demo.venv.site / "demo/greet.py"
    greet.write_text(greet.read_text().replace("'hello '", "'hi '"))
    util = demo.venv.site / "demo/util.py"
    util.write_text(util.read_text().replace("line20 = 20\n", "line20 = 20  # still wrong\n"))
    code, out, _ = demo.run("upstream", "demo-fix", "--target", "demo==1.0", "--json")
    verdicts = {p["id"]: (p["state"], p["textual"]) for p in json.loads(out)["patches"]}
    assert verdicts["patch-1"] == ("upstream", "its change is already present")
    assert verdicts["patch-2"][0] == "needs port"
    assert verdicts["patch-2"][1].startswith("conflict")
    code, _, err = demo.run("upstream", "demo-fix", "--target", "other==1.0")
    assert code == 2 and "targets demo" in err


@pytest.mark.slow
def test_smoke_from_a_sibling_patchset(demo: Demo) -> None:
    """A second patchset for the same fixes reuses demo-fix's smoke tests (no copy)."""
    _add_pytest(demo)
    write_patchset(demo.patchsets, name="demo-again", patches={"0001.patch": PATCH_GREET})
    twin = demo.patchsets / "demo-again"
    shutil.rmtree(twin / "smoke")
    toml = twin / "patchset.toml"
    toml.write_text(
        toml.read_text().replace("[patchset]\n", '[patchset]\nsmoke-from = "demo-fix"\n')
    )
    code, out, _ = demo.run("smoke", "demo-again", "--json")
    doc = json.loads(out)
    assert code == 1 and [p["result"] for p in doc["patches"]] == ["fail"]
    assert demo.run("apply", "demo-again")[0] == 0
    code, out, _ = demo.run("smoke", "demo-again", "--json")
    assert code == 0 and [p["result"] for p in json.loads(out)["patches"]] == ["pass"]
    code, out, err = demo.run("lint", "demo-again", "--offline")
    assert "smoke" not in out + err, out + err
    # a name that is not a sibling, or a smoke/ folder of its own as well: one-line errors
    good = toml.read_text()
    for bad, why in (
        ('"nowhere"', "no patchset with a smoke/ folder beside this one"),
        ('"../demo-fix"', "must name a sibling patchset"),
    ):
        toml.write_text(good.replace('"demo-fix"', bad))
        code, _, err = demo.run("status", "demo-again")
        assert code == 1 and why in err and err.count("\n") == 1, err
    toml.write_text(good)


@pytest.mark.slow
def test_smoke_from_plus_its_own_smoke_folder(demo: Demo, tmp_path: Path) -> None:
    """A smoke-from patchset with a patch the sibling lacks keeps that test in its own smoke/;
    the two folders run as one (the sibling's conftest.py serves both); a name in both is an
    error for smoke and lint; rebase merges the two into the new patchset's smoke/."""
    _add_pytest(demo)
    (demo.patchsets / "demo-fix/smoke/conftest.py").write_text(
        "import pytest\n\n@pytest.fixture\ndef expected():\n    return 200\n"
    )
    own_util = PATCH_UTIL.replace("smoke/test_patch_2.py", "smoke/test_own_2.py")
    write_patchset(
        demo.patchsets,
        name="demo-again",
        patches={"0001.patch": PATCH_GREET, "0002.patch": own_util},
    )
    twin = demo.patchsets / "demo-again"
    shutil.rmtree(twin / "smoke")
    (twin / "smoke").mkdir()
    (twin / "smoke/test_own_2.py").write_text(
        "import demo.util\n\ndef test_line20(expected):\n    assert demo.util.line20 == expected\n"
    )
    toml = twin / "patchset.toml"
    toml.write_text(
        toml.read_text().replace("[patchset]\n", '[patchset]\nsmoke-from = "demo-fix"\n')
    )
    code, out, err = demo.run("smoke", "demo-again", "--json")
    doc = json.loads(out)
    assert code == 1 and [p["result"] for p in doc["patches"]] == ["fail", "fail"], err
    assert "assert 20 == 200" in doc["patches"][1]["reason"]  # the sibling's fixture
    assert demo.run("apply", "demo-again")[0] == 0
    code, out, _ = demo.run("smoke", "demo-again", "--json")
    assert code == 0 and [p["result"] for p in json.loads(out)["patches"]] == ["pass", "pass"]
    code, out, err = demo.run("lint", "demo-again", "--offline")
    assert code == 0 and "smoke" not in out + err, out + err
    # rebase: one smoke/ holding both folders' files
    code, _, err = demo.run("rebase", "demo-again", "--target", "demo==1.0", "-o", str(tmp_path))
    merged = {f.name for f in (tmp_path / "demo-again-1.0" / "smoke").iterdir()}
    assert {"conftest.py", "test_patch_1.py", "test_own_2.py"} <= merged, (merged, err)
    # the same file name in both folders: one-line errors
    (twin / "smoke/test_patch_1.py").write_text(SMOKE_1)
    code, _, err = demo.run("smoke", "demo-again")
    assert code == 1 and "test_patch_1.py is both in its own smoke/" in err, err
    assert err.count("\n") == 1, err
    code, out, err = demo.run("lint", "demo-again", "--offline")
    assert code == 1 and "smoke/test_patch_1.py is both in its own smoke/" in out + err


NEEDS_GREET = """\
import demo.greet
import demo.util


def test_line20_through_the_greeting():
    # reaches the code patch-2 fixes only through patch-1's greeting
    assert demo.greet.hello("x") == "hi x", "the greeting is wrong"
    assert demo.util.line20 == 200
"""


@pytest.mark.slow
def test_a_smoke_test_blocked_by_a_missing_earlier_patch_says_so(demo: Demo) -> None:
    """Before: ``smoke --patch patch-2`` on an unpatched environment failed with patch-1's
    error ("the greeting is wrong"), a misleading verdict on patch-2."""
    _add_pytest(demo)
    root = demo.patchsets / "demo-fix"
    (root / "smoke" / "test_patch_2.py").write_text(NEEDS_GREET)
    util = root / "patches" / "0002.patch"
    util.write_text(util.read_text().replace("Smoke-Test:", "Smoke-Needs: patch-1\nSmoke-Test:"))
    code, out, _ = demo.run("smoke", "demo-fix", "--patch", "patch-2", "--json")
    (result,) = json.loads(out)["patches"]
    assert code == 1 and result["result"] == "fail" and result["blocked_by"] == ["patch-1"]
    assert result["reason"].startswith("blocked: needs patch-1 applied"), result["reason"]
    assert "so this may be their failure, not patch-2's; it failed with: " in result["reason"]
    assert demo.run("apply", "demo-fix", "--exclude", "patch-2")[0] == 0
    code, out, _ = demo.run("smoke", "demo-fix", "--patch", "patch-2", "--json")
    (result,) = json.loads(out)["patches"]
    assert result["blocked_by"] == [] and "line20" in result["reason"], result
    assert demo.run("apply", "demo-fix")[0] == 0
    assert demo.run("smoke", "demo-fix", "--patch", "patch-2")[0] == 0


@pytest.mark.slow
def test_prove_checks_smoke_needs_both_ways(demo: Demo, tmp_path: Path) -> None:
    """The series-but-one runs run every smoke test: patch-2's test fails without patch-1, so
    its Smoke-Needs must name patch-1 (else a release lacking patch-1 would blame patch-2);
    a named need the test passes without is reported as unused, not as a failure."""
    _add_pytest(demo)
    root = demo.patchsets / "demo-fix"
    util = root / "patches" / "0002.patch"
    header = util.read_text()
    (root / "smoke" / "test_patch_2.py").write_text(NEEDS_GREET)
    before = demo.venv.snapshot()
    code, out, err = demo.run("prove", "demo-fix", "-o", str(tmp_path / "r"))
    assert code == 1 and err.count("\n") == 1, err
    assert "Smoke-Needs does not name: patch-2 (patch-1)" in err, err
    assert "patch-2: its smoke test also fails without patch-1" in out, out
    rows = {r["id"]: r for r in json.loads((tmp_path / "r" / "demo-fix.json").read_text())}
    assert rows["patch-2"]["needs_missing"] == ["patch-1"] and not rows["patch-2"]["ok"]
    assert rows["patch-1"]["needs_missing"] == [] and rows["patch-1"]["ok"]
    assert "add patch-1 to its Smoke-Needs" in (tmp_path / "r" / "demo-fix.md").read_text()
    assert demo.venv.snapshot() == before

    util.write_text(header.replace("Smoke-Test:", "Smoke-Needs: patch-1\nSmoke-Test:"))
    code, out, err = demo.run("prove", "demo-fix")
    assert code == 0 and "Smoke-Needs" not in out, (out, err)

    (root / "smoke" / "test_patch_2.py").write_text(SMOKE_2)  # needs nothing of patch-1
    code, out, err = demo.run("prove", "demo-fix")
    assert code == 0, err
    assert "note: patch-2: Smoke-Needs names patch-1, but its test passes without it" in out


def test_smoke_needs_must_name_another_patch(demo: Demo) -> None:
    util = demo.patchsets / "demo-fix" / "patches" / "0002.patch"
    util.write_text(util.read_text().replace("Smoke-Test:", "Smoke-Needs: patch-9\nSmoke-Test:"))
    code, _, err = demo.run("lint", "--offline")
    assert code == 1 and "Smoke-Needs names 'patch-9', not another patch" in err, err


@pytest.mark.slow
def test_a_need_met_upstream_does_not_block(demo: Demo) -> None:
    """On a release that already has patch-1's fix (its smoke test passes unpatched),
    patch-2's failure is patch-2's own: reported as it is, not as blocked."""
    _add_pytest(demo)
    root = demo.patchsets / "demo-fix"
    (root / "smoke" / "test_patch_2.py").write_text(NEEDS_GREET)
    util = root / "patches" / "0002.patch"
    util.write_text(util.read_text().replace("Smoke-Test:", "Smoke-Needs: patch-1\nSmoke-Test:"))
    greet = demo.venv.site / "demo" / "greet.py"
    fixed = greet.with_name("greet.py.new")
    fixed.write_bytes(greet.read_bytes().replace(b"'hello '", b"'hi '"))
    os.replace(fixed, greet)  # a new inode: as if upstream had shipped the fix
    code, out, _ = demo.run("smoke", "demo-fix", "--json")
    assert code == 1  # patch-2 fails: its own reason
    results = {p["id"]: p for p in json.loads(out)["patches"]}
    assert results["patch-1"]["result"] == "pass"
    assert results["patch-2"]["blocked_by"] == [] and "line20" in results["patch-2"]["reason"]
