"""compatkit sbom: CycloneDX documents with pedigree.patches, checked against the schema."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator

import compatkit
from conftest import Demo

SCHEMA = SchemaVersion.V1_6
SRC_ROOT = Path(compatkit.__file__).resolve().parent.parent


def valid(text: str) -> dict[str, Any]:
    errors = JsonStrictValidator(SCHEMA).validate_str(text)
    assert errors is None, errors
    doc: dict[str, Any] = json.loads(text)
    return doc


def test_the_validator_rejects_a_broken_document() -> None:
    bad = '{"bomFormat": "CycloneDX", "specVersion": "1.6", "components": [{"name": "x"}]}'
    assert JsonStrictValidator(SCHEMA).validate_str(bad) is not None


def _component(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in doc["components"] if c["name"] == name)


def test_environment_sbom_carries_the_applied_patches(demo: Demo, tmp_path: Path) -> None:
    code, out, _ = demo.run("sbom")
    doc = valid(out)
    assert code == 0 and "pedigree" not in _component(doc, "demo")
    assert demo.run("apply", "demo-fix")[0] == 0
    target = tmp_path / "bom.json"
    code, out, _ = demo.run("sbom", "--format", "cyclonedx", "-o", str(target))
    assert code == 0 and f"wrote {target}" in out and "1 patched" in out
    demo_c = _component(valid(target.read_text()), "demo")
    assert demo_c["purl"] == "pkg:pypi/demo@1.0"
    pedigree = demo_c["pedigree"]
    assert pedigree["ancestors"][0]["purl"] == "pkg:pypi/demo@1.0"
    patches = pedigree["patches"]
    assert [p["type"] for p in patches] == ["unofficial", "unofficial"]
    assert "+    return 'hi ' + name" in patches[0]["diff"]["text"]["content"]
    issue = patches[0]["resolves"][0]
    assert issue["id"] == "demo-fix:patch-1" and issue["name"] == "Greet politely"
    assert "Symptom: ValueError: impolite greeting" in issue["description"]
    props = {p["name"]: p["value"] for p in demo_c["properties"]}
    assert props["compatkit:patchset"] == "demo-fix 1.0.0"
    assert props["compatkit:built-in"] == "false"


def test_a_patchset_unknown_here_has_no_diff(demo: Demo, tmp_path: Path) -> None:
    assert demo.run("apply", "demo-fix")[0] == 0
    (demo.patchsets / "demo-fix" / "patchset.toml").unlink()
    target = tmp_path / "bom.json"
    code, out, _ = demo.run("sbom", "-o", str(target))
    assert code == 0 and "warning: demo-fix is not known here as applied" in out
    patches = _component(valid(target.read_text()), "demo")["pedigree"]["patches"]
    assert "diff" not in patches[0] and patches[0]["resolves"][0]["id"] == "demo-fix:patch-1"


def test_the_wheel_carries_its_sbom(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COMPATKIT_NO_INDEX", "1")
    args = ["-o", str(tmp_path / "o"), "--wheel-dir", str(demo.wheel.parent)]
    assert demo.run("wheel", "demo-fix", *args)[0] == 0
    (whl,) = (tmp_path / "o").glob("*.whl")
    version = whl.name.split("-")[1]
    with zipfile.ZipFile(whl) as zf:
        text = zf.read(f"demo-{version}.dist-info/sboms/compatkit.cdx.json").decode()
    root = valid(text)["metadata"]["component"]
    assert root["version"] == version and root["pedigree"]["ancestors"][0]["version"] == "1.0"
    assert len(root["pedigree"]["patches"]) == 2
    assert {p["name"]: p["value"] for p in root["properties"]}["compatkit:built-in"] == "true"


MISSING = """
import sys
sys.modules["cyclonedx"] = None  # as if compatkit[sbom] were not installed
from compatkit.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_without_the_extra_one_line_and_a_wheel_without_sbom(demo: Demo, tmp_path: Path) -> None:
    base = [sys.executable, "-c", MISSING, "--python", demo.venv.python]
    base += ["--patchset-dir", str(demo.patchsets)]
    env = {"PYTHONPATH": str(SRC_ROOT), "COMPATKIT_NO_INDEX": "1", "PATH": "/usr/bin:/bin"}
    run = subprocess.run([*base, "sbom"], capture_output=True, text=True, env=env)
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr == (
        "compatkit: error: compatkit sbom needs cyclonedx-python-lib: "
        "pip install 'compatkit[sbom]'\n"
    )
    out = tmp_path / "o"
    cmd = [*base, "wheel", "demo-fix", "-o", str(out), "--wheel-dir", str(demo.wheel.parent)]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    assert "no SBOM in the wheel (.dist-info/sboms/): pip install 'compatkit[sbom]'" in run.stdout
    (whl,) = out.glob("*.whl")
    assert not [n for n in zipfile.ZipFile(whl).namelist() if "/sboms/" in n]
