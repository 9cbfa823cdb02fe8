"""compatkit lint: every problem at once, checked against a real wheel built in the test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import PATCH_GREET, PATCH_UTIL, run_cli, write_patchset

ROOT = Path(__file__).resolve().parents[2]


def lint(capsys: pytest.CaptureFixture[str], base: Path, *args: str) -> tuple[int, str, str]:
    return run_cli(capsys, "lint", "--patchset-dir", str(base), *args)


def test_a_good_patchset_passes(
    tmp_path: Path, wheels: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_patchset(tmp_path / "ps")
    code, out, err = lint(capsys, tmp_path / "ps")
    assert code == 0, err
    assert "demo-fix: ok" in out and "checked against demo 1.0" in out


def test_every_problem_is_listed_at_once(
    tmp_path: Path, wheels: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    no_symptom = PATCH_UTIL.replace("Symptom: AssertionError: line20 is wrong\n", "")
    todo = PATCH_GREET.replace("Cause: demo.greet.hello() changed in demo 1.0", "Cause: TODO: x")
    stale = PATCH_UTIL.replace("Patch-Id: patch-2", "Patch-Id: patch-4").replace(
        "-line20 = 20", "-line20 = 21"
    )
    dup = PATCH_GREET.replace("Smoke-Test: smoke/test_patch_1.py", "Smoke-Test: smoke/none.py")
    root = write_patchset(
        tmp_path / "ps",
        patches={
            "0001.patch": todo,
            "0002.patch": no_symptom,
            "0003.patch": "Patch-Id: patch-3\n---\n@@ garbage\n",
            "0004.patch": stale,
            "0005.patch": dup,
        },
    )
    (root / "patches/0099-forgotten.patch").write_text(PATCH_GREET)
    (root / "smoke/test_patch_2.py").write_text("import demo\n\nVALUE = 1\n")
    code, out, err = lint(capsys, tmp_path / "ps", "--json")
    assert code == 1
    problems = json.loads(out)["patchsets"][0]["problems"]
    expected = [
        "patch-1 (0001.patch): field Cause is still a TODO placeholder",
        "patch-2 (0002.patch): required field Symptom is missing or empty",
        "patch-2 (0002.patch): smoke test smoke/test_patch_2.py has no test_ function",
        "patches/0003.patch: does not parse",
        "patches/0099-forgotten.patch is not in the series",
        "duplicate patch id patch-1",
        "patch-1 (0005.patch): smoke test smoke/none.py is missing",
        "patch-4: does not apply to demo 1.0: demo/util.py: hunk #1",
    ]
    for text in expected:
        assert any(text in p for p in problems), (text, problems)
    assert "lint failed" in err


def test_a_version_that_does_not_exist(
    tmp_path: Path, wheels: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_patchset(tmp_path / "ps", specifier="==9.9")
    write_patchset(tmp_path / "ps", name="ranged", specifier=">=0.5,<2")
    code, out, err = lint(capsys, tmp_path / "ps")
    assert code == 1
    assert "demo 9.9 does not exist in the wheel directories" in err
    assert "ranged: ok" in out  # the newest matching version, 1.0, is checked


def test_offline_skips_the_wheel_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COMPATKIT_WHEEL_DIR", raising=False)
    write_patchset(tmp_path / "ps", specifier="==9.9")
    code, out, err = lint(capsys, tmp_path / "ps", "--offline")
    assert code == 0, err
    assert "--offline: the wheel checks" in out


def test_the_diff_stub_fails_lint_until_filled_in(
    tmp_path: Path, wheels: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from compatkit.load import authoring

    root = write_patchset(tmp_path / "ps", patches={"0001.patch": PATCH_GREET})
    text = (root / "patches/0001.patch").read_text()
    body = text[text.index("diff --git") :]
    (root / "patches/0001.patch").write_text(authoring.header("patch-1", None) + body)
    (root / "smoke/test_patch_1.py").write_text(authoring.smoke_stub("patch-1", ["demo.greet"]))
    code, _, err = lint(capsys, tmp_path / "ps")
    assert code == 1
    for field in ("Title", "Symptom", "Cause", "Fix", "Retire-When"):
        assert f"field {field} is still a TODO placeholder" in err
    assert "smoke/test_patch_1.py is still the generated stub" in err


def test_bundled_patchsets_pass_the_static_checks(capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run_cli(capsys, "lint", "--offline", "speculators-vllm016")
    assert code == 0, err


def test_pre_commit_hook_is_declared() -> None:
    text = (ROOT / ".pre-commit-hooks.yaml").read_text()
    assert "- id: compatkit-lint" in text and "entry: compatkit lint" in text


def test_every_toml_and_series_problem_is_listed_at_once(
    tmp_path: Path, wheels: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """patchset.toml's target, constraints and series, and the patches' Needs and
    Smoke-Needs, each wrong in its own way: one line each, all in one run, exit 1."""
    needs_later = PATCH_GREET.replace(
        "Smoke-Test:", "Needs: patch-2\nSmoke-Needs: patch-9\nSmoke-Test:"
    )
    root = write_patchset(
        tmp_path / "ps", patches={"0001.patch": needs_later, "0002.patch": PATCH_UTIL}
    )
    (tmp_path / "outside.patch").write_text(PATCH_UTIL)
    toml = (root / "patchset.toml").read_text()
    toml = toml.replace('specifier = "==1.0"', 'specifier = "=>1.0"')
    toml = toml.replace("requires = []", 'requires = ["demo>=="]')
    toml = toml.replace(
        'series = ["patches/0001.patch", "patches/0002.patch"]',
        'series = ["patches/0001.patch", "patches/0002.patch", "patches/gone.patch", '
        '"../outside.patch"]',
    )
    toml += (
        '\n[[constraints]]\npin = "numpy<<2"\nrationale = "r"\ncolour = "red"\n'
        '\n[[constraints]]\npin = "a\\nb"\nrationale = "two lines"\n'
    )
    (root / "patchset.toml").write_text(toml)
    code, out, err = lint(capsys, tmp_path / "ps", "--offline", "--json")
    assert code == 1, out + err
    problems = json.loads(out)["patchsets"][0]["problems"]
    expected = [
        "bad specifier: Invalid specifier: '=>1.0'",
        "bad requirement 'demo>==': ",  # packaging's reason follows
        "bad constraint 'numpy<<2': ",
        "unknown key 'colour' in constraints #1 (known: pin, rationale)",
        "[constraints #2] 'pin' must be one line",
        "series entry 'patches/gone.patch' does not exist",
        "series entry '../outside.patch' leaves the patchset directory",
        "patch-1: Smoke-Needs names 'patch-9', not another patch",
        "patch-1: Needs names 'patch-2', a later patch (a need comes earlier in the series)",
    ]
    for text in expected:
        assert any(p.startswith(text) for p in problems), (text, problems)
    assert len(problems) == len(expected), problems
    assert not [p for p in problems if "\n" in p]  # before: packaging's lines pointing at a column


def test_constraints_that_are_not_tables(
    tmp_path: Path, wheels: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_patchset(tmp_path / "ps")
    (root / "patchset.toml").write_text("constraints = 3\n" + (root / "patchset.toml").read_text())
    code, out, _ = lint(capsys, tmp_path / "ps", "--offline", "--json")
    assert code == 1
    problems = json.loads(out)["patchsets"][0]["problems"]
    assert problems == ["'constraints' must be an array of tables ([[constraints]])"], problems
