"""upstream on a release whose dependencies cannot be installed: the release alone (no
dependencies) is classified from its files, and the smoke tests that could not run say why
(issue 45: vLLM 0.34.0 pins a flashinfer-python the index does not serve)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import DEMO_FILES, PATCH_GREET, PATCH_UTIL, Demo, build_wheel, run_cli, write_patchset

# ckdemo 3.0: demo/greet.py as 1.0 has it, demo/util.py gone; its dependency is nowhere
DEMO_3 = {k: v for k, v in DEMO_FILES.items() if k != "demo/util.py"}
MISSING = "cklib-nowhere==9.9"


@pytest.fixture
def unresolvable(tmp_path: Path, demo: Demo) -> tuple[str, ...]:
    folder = tmp_path / "links"
    folder.mkdir()
    build_wheel(folder, "ckdemo", "3.0", DEMO_3, (MISSING,))
    patches = {"0001.patch": PATCH_GREET, "0002.patch": PATCH_UTIL}
    write_patchset(demo.patchsets, "ck-fix", patches, "==1.0", distribution="ckdemo")
    return (
        "--patchset-dir", str(demo.patchsets), "upstream", "ck-fix", "--target", "ckdemo==3.0",
        "--offline", "--wheel-dir", str(folder),
    )  # fmt: skip


def test_an_unresolvable_release_is_classified_from_its_files(
    demo: Demo, unresolvable: tuple[str, ...]
) -> None:
    code, out, err = run_cli(demo.capsys, "--json", *unresolvable)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["target"] == "ckdemo==3.0"
    smoke = doc["smoke_tests"]
    assert smoke["ran"] is False
    assert smoke["reason"].startswith("cannot install ckdemo==3.0 pytest: Because cklib-nowhere")
    assert "\n" not in smoke["reason"] and smoke["reason"].endswith("cannot be used."), smoke
    got = {p["id"]: p for p in doc["patches"]}
    assert (got["patch-1"]["files"], got["patch-1"]["state"]) == ("applies", "still needed")
    assert (got["patch-2"]["files"], got["patch-2"]["state"]) == ("files gone", "removed upstream")
    assert {p["smoke"] for p in doc["patches"]} == {"not run"}
    assert all(p["reason"] == smoke["reason"] for p in doc["patches"])


def test_the_terminal_says_on_one_line_that_smoke_tests_did_not_run(
    demo: Demo, unresolvable: tuple[str, ...]
) -> None:
    code, out, err = run_cli(demo.capsys, *unresolvable)
    assert code == 0, err
    lines = [line for line in out.splitlines() if line.startswith("smoke tests not run: ")]
    assert len(lines) == 1, out
    assert "cannot install ckdemo==3.0 pytest: Because cklib-nowhere" in lines[0]
    assert "verdicts from ckdemo 3.0's files only" in lines[0]
    assert "1/2 patches are removed upstream in ckdemo 3.0: patch-2 can retire" in out


def test_a_release_that_is_not_there_is_still_an_error(
    demo: Demo, unresolvable: tuple[str, ...]
) -> None:
    args = [a if a != "ckdemo==3.0" else "ckdemo==4.0" for a in unresolvable]
    code, _out, err = run_cli(demo.capsys, *args)
    assert code == 1 and err.count("\n") == 1, err
    assert err.startswith("compatkit: error: cannot install ckdemo==4.0 pytest: "), err


def test_a_matrix_cell_installed_without_dependencies(demo: Demo, tmp_path: Path) -> None:
    """``matrix run --smoke-not-run REASON`` (the noxfile passes the resolver's reason when a
    cell's packages cannot be installed with their dependencies): upstream cells classify from
    the files, apply cells apply, verify and revert; no smoke test runs (there is no pytest in
    this venv: running one would fail), and each entry carries the reason."""
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(
        '[[cell]]\nid = "up"\nmode = "upstream"\npackages = ["demo==1.0"]\n'
        'patchsets = ["demo-fix"]\n[cell.expect.demo-fix]\ndefault = "still needed/not run"\n'
        '[[cell]]\nid = "on"\npackages = ["demo==1.0"]\npatchsets = ["demo-fix"]\n'
        '[cell.expect.demo-fix]\ndefault = "applied/not run"\n'
    )
    uv = (
        "  x No solution found when resolving dependencies:\n  -> Because nothing-here was not "
        "found, we can conclude that\n     demo==1.0 cannot be used. And because you require "
        "demo==1.0, we can conclude that your requirements are unsatisfiable.\n"
    )
    first = "Because nothing-here was not found, we can conclude that demo==1.0 cannot be used."
    why = f"cannot install the cell's packages: {first}"
    before = demo.venv.snapshot()
    results = tmp_path / "results"
    for cell in ("up", "on"):
        args = ("matrix", "run", cell, "--matrix", str(matrix), "--results", str(results))
        code, out, err = demo.run(*args, "--smoke-not-run", uv)
        assert code == 0, (out, err)
        assert f"cell {cell}: smoke tests not run: {why} (files only)" in out
        doc = json.loads((results / f"{cell}.json").read_text())
        assert doc["smoke_tests"] == {"ran": False, "reason": why}
        entries = doc["patchsets"]["demo-fix"]
        assert [(e["smoke"], e["reason"]) for e in entries] == [("not run", why)] * 2
    assert demo.venv.snapshot() == before
    with pytest.raises(SystemExit) as exc:  # argparse's: jobs has no such option (issue 47)
        demo.run("matrix", "jobs", "--smoke-not-run", why)
    err = demo.capsys.readouterr().err
    assert exc.value.code == 2 and "unrecognized arguments: --smoke-not-run" in err
    assert "(see 'compatkit matrix jobs --help')" in err


@pytest.mark.real
@pytest.mark.slow
def test_vllm_0_34_from_its_files(capsys: pytest.CaptureFixture[str]) -> None:
    """The real case: vLLM 0.34.0 pins flashinfer-python==0.7.3, which the index does not
    serve. patch-14 (vllm#44485, unfixed in 0.34.0) still applies to its files."""
    args = ("--json", "upstream", "vllm033-hidden-states", "--target", "vllm==0.34.0")
    code, out, err = run_cli(capsys, *args)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["target"] == "vllm==0.34.0"
    reason = doc["smoke_tests"]["reason"]
    assert doc["smoke_tests"]["ran"] is False and "flashinfer-python==0.7.3" in reason, reason
    (patch,) = doc["patches"]
    assert (patch["id"], patch["state"], patch["smoke"]) == ("patch-14", "still needed", "not run")
    assert patch["files"] == "applies" and patch["textual"].startswith("applies")
