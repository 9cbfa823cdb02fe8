"""``Needs:``: a patch whose code builds on an earlier patch of the series (it uses a name the
earlier one adds). Without the earlier patch it may apply cleanly and break the package
(transformers519-tokenizers' patch-18 on 5.19 without patch-17): apply refuses to leave the
need out, lint checks the ids and the order, and prove leaves the patch out with its need."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from helpers import UV, Demo

pytestmark = pytest.mark.skipif(UV is None, reason="needs uv")

NEEDS_GREET = """\
import demo.greet
import demo.util


def test_line20_through_the_greeting():
    assert demo.greet.hello("x") == "hi x", "the greeting is wrong"
    assert demo.util.line20 == 200
"""


def _needs(demo: Demo, value: str) -> Path:
    util = demo.patchsets / "demo-fix" / "patches" / "0002.patch"
    util.write_text(util.read_text().replace("Smoke-Test:", f"Needs: {value}\nSmoke-Test:"))
    return util


def test_apply_refuses_to_leave_out_a_need(demo: Demo) -> None:
    _needs(demo, "patch-1")
    before = demo.venv.snapshot()
    code, _, err = demo.run("apply", "demo-fix", "--exclude", "patch-1")
    assert code == 2, err
    assert err == (
        "compatkit: error: demo-fix: patch-2 cannot go without patch-1 (its Needs: field): "
        "exclude patch-2 too\n"
    )
    assert demo.venv.snapshot() == before
    code, _, err = demo.run("apply", "demo-fix", "--exclude", "patch-1", "--exclude", "patch-2")
    assert code == 0, err
    assert demo.run("apply", "demo-fix", "--exclude", "patch-2")[0] == 0  # a need alone is fine


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("patch-9", "patch-2: Needs names 'patch-9', not another patch"),
        ("patch-2", "patch-2: Needs names 'patch-2', not another patch"),
    ],
)
def test_lint_checks_needs(demo: Demo, value: str, problem: str) -> None:
    _needs(demo, value)
    code, out, err = demo.run("lint", "--offline")
    assert code == 1 and problem in out + err, out + err


def test_lint_wants_a_need_earlier_in_the_series(demo: Demo) -> None:
    greet = demo.patchsets / "demo-fix" / "patches" / "0001.patch"
    greet.write_text(greet.read_text().replace("Smoke-Test:", "Needs: patch-2\nSmoke-Test:"))
    code, out, err = demo.run("lint", "--offline")
    assert code == 1, out + err
    assert "patch-1: Needs names 'patch-2', a later patch (a need comes earlier" in out + err


@pytest.mark.slow
def test_prove_leaves_a_patch_out_with_its_need(demo: Demo, tmp_path: Path) -> None:
    """patch-2's test fails without patch-1; with ``Needs: patch-1`` the run "without
    patch-1" leaves patch-2 out too, so that failure is not blamed on a missing Smoke-Needs
    (before: exit 1, "add patch-1 to its Smoke-Needs")."""
    subprocess.run(
        [UV or "uv", "pip", "install", "-q", "--python", demo.venv.python, "pytest"], check=True
    )
    (demo.patchsets / "demo-fix" / "smoke" / "test_patch_2.py").write_text(NEEDS_GREET)
    _needs(demo, "patch-1")
    before = demo.venv.snapshot()
    code, out, err = demo.run("prove", "demo-fix", "-o", str(tmp_path / "r"))
    assert code == 0, (out, err)
    assert "whole series except patch-1 (and patch-2, which needs it)" in out + err
    rows = json.loads((tmp_path / "r" / "demo-fix.json").read_text())
    assert [(r["unpatched"], r["without"], r["patched"]) for r in rows] == [
        ("fail", "fail", "pass")
    ] * 2
    assert all(r["needs_missing"] == [] for r in rows)
    assert demo.venv.snapshot() == before
