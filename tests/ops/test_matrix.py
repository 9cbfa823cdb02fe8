"""matrix.toml, the cell expectations, the report and the GitHub Actions job list."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compatkit.env.target import Environment
from compatkit.errors import CompatkitError, PatchFormatError
from compatkit.model.matrix import load_matrix, parse_matrix
from compatkit.ops.matrix import installed_versions, mismatches
from compatkit.ops.matrix_report import report
from helpers import Demo, run_cli

ROOT = Path(__file__).resolve().parents[2]


def test_repository_matrix_has_the_required_cells() -> None:
    cells = {c.id: c for c in load_matrix(ROOT / "matrix.toml")}
    wanted = [
        ("speculators==0.3.0", "vllm==0.16.0"),
        ("speculators==0.3.0", "vllm==0.11.0"),
        ("speculators==0.3.0", "vllm==0.17.1"),
        ("speculators==0.4.0", "vllm==0.16.0"),
    ]
    for pair in wanted:
        assert any(set(pair) <= set(c.packages) for c in cells.values()), pair
    assert all(c.expect for c in cells.values()), "every cell states its expectations"


def test_bad_expectation_is_refused() -> None:
    with pytest.raises(PatchFormatError, match="bad expectation"):
        parse_matrix({"cell": [{"id": "a", "expect": {"p": {"default": "fine/ok"}}}]}, "m")


def test_mismatches_name_patch_and_reason() -> None:
    (cell,) = parse_matrix(
        {
            "cell": [
                {
                    "id": "a",
                    "patchsets": ["p"],
                    "expect": {"p": {"default": "applied/pass", "patch-2": "upstream/pass"}},
                }
            ]
        },
        "m",
    )
    results = {
        "p": [
            {"id": "patch-1", "state": "applied (offset +3)", "smoke": "pass"},
            {"id": "patch-2", "state": "still needed", "smoke": "fail", "reason": "boom"},
        ]
    }
    assert mismatches(cell, results) == [
        "p patch-2: expected upstream/pass, got still needed/fail (boom)"
    ]


@pytest.mark.slow
def test_cell_run_on_the_demo_patchset(demo: Demo, tmp_path: Path) -> None:
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(
        '[[cell]]\nid = "demo"\npackages = ["demo==1.0"]\npatchsets = ["demo-fix"]\n'
        '[cell.expect.demo-fix]\ndefault = "applied/pass"\n'
        '[[cell]]\nid = "wrong"\npackages = ["demo==1.0"]\npatchsets = ["demo-fix"]\n'
        '[cell.expect.demo-fix]\n"patch-2" = "upstream/pass"\n'
    )
    subprocess.run(
        [
            shutil.which("uv") or "uv",
            "pip",
            "install",
            "-q",
            "--python",
            demo.venv.python,
            "pytest",
        ],
        check=True,
    )
    before = demo.venv.snapshot()
    results = tmp_path / "results"
    code, _, err = demo.run(
        "matrix", "run", "demo", "--matrix", str(matrix), "--results", str(results)
    )
    assert code == 0, err
    doc = json.loads((results / "demo.json").read_text())
    assert [e["state"] for e in doc["patchsets"]["demo-fix"]] == ["applied", "applied"]
    assert [e["smoke"] for e in doc["patchsets"]["demo-fix"]] == ["pass", "pass"]
    assert demo.venv.snapshot() == before
    code, _, err = demo.run(
        "matrix", "run", "wrong", "--matrix", str(matrix), "--results", str(results)
    )
    assert code == 1 and "patch-2: expected upstream/pass, got applied/pass" in err
    docs = tmp_path / "compat.md"
    assert report(results, docs).cells[0]["cell"] == "demo"
    text = docs.read_text()
    assert "| demo-fix | patch-2 | applied / pass | applied / pass |" in text


def test_jobs_json_lists_every_cell(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "matrix", "jobs", "--matrix", str(ROOT / "matrix.toml"))
    include = json.loads(out)["include"]
    assert code == 0
    assert [j["cell"] for j in include] == [c.id for c in load_matrix(ROOT / "matrix.toml")]


@pytest.mark.slow
def test_github_workflow_is_valid() -> None:
    checker = str(Path(sys.executable).parent / "check-jsonschema")
    if not Path(checker).exists():
        pytest.skip("check-jsonschema is not installed")
    proc = subprocess.run(
        [
            checker,
            "--builtin-schema",
            "vendor.github-workflows",
            str(ROOT / ".github/workflows/matrix.yml"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = (ROOT / ".github/workflows/matrix.yml").read_text()
    assert "compatkit matrix jobs" in text and "fromJSON(needs.cells.outputs.matrix)" in text


def test_installed_entries_name_the_distribution_of_each_requirement() -> None:
    """Issue 47: a cell's ``installed`` is keyed by the requirement's name, whatever its
    operator (``~=``), extras or marker; a name that is not installed is None."""
    env = Environment.current()
    packaging, rich = env.require("packaging").version, env.require("rich").version
    packages = [
        "packaging~=24.0",
        "rich[jupyter]==1",
        "rich>=1",
        "pytest ; python_version > '3'",
        "no-such-dist-here>=1",
    ]
    assert installed_versions(env, packages) == {
        "no-such-dist-here": None,
        "packaging": packaging,
        "pytest": env.require("pytest").version,
        "rich": rich,
    }
    with pytest.raises(CompatkitError, match=r"'\./x\.whl' is not a requirement"):
        installed_versions(env, ["./x.whl"])
