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
from helpers import PATCH_GREET, PATCH_UTIL, Demo, write_patchset

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


def test_patches_come_in_series_order_with_ordinals_and_diff_urls(
    demo: Demo, tmp_path: Path
) -> None:
    url = "https://example.org/demo/pull/7"
    first = PATCH_GREET.replace("Patch-Id: patch-1", f"Patch-Id: patch-10\nOrigin: backport, {url}")
    write_patchset(demo.patchsets, patches={"0001.patch": first, "0002.patch": PATCH_UTIL})
    assert demo.run("apply", "demo-fix")[0] == 0
    code, out, _ = demo.run("sbom")
    assert code == 0
    demo_c = _component(valid(out), "demo")
    patches = demo_c["pedigree"]["patches"]
    ids = [p["resolves"][0]["id"] for p in patches]
    assert ids == ["demo-fix:patch-10", "demo-fix:patch-2"], "the series' order, not sorted"
    props = {p["name"]: p["value"] for p in demo_c["properties"]}
    assert props["compatkit:ordinal:demo-fix:patch-10"] == "1"
    assert props["compatkit:ordinal:demo-fix:patch-2"] == "2"
    assert patches[0]["diff"]["url"] == url and "url" not in patches[1]["diff"]
    assert patches[0]["resolves"][0]["references"] == [url]


def _runtime_patches(doc: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    demo_c = _component(doc, "demo")
    ids = [p["resolves"][0]["id"] for p in demo_c.get("pedigree", {}).get("patches", [])]
    return ids, {p["name"]: p["value"] for p in demo_c.get("properties", [])}


def test_runtime_folders_patches_are_listed(demo: Demo, tmp_path: Path) -> None:
    root = tmp_path / "rt"
    assert demo.run("runtime", "install", "demo-fix", "--dir", str(root))[0] == 0
    assert _runtime_patches(valid(demo.run("sbom")[1]))[0] == [], "not active: not on a path"
    code, out, _ = demo.run("sbom", "--dir", str(root))
    ids, props = _runtime_patches(valid(out))
    assert code == 0 and ids == ["demo-fix:patch-1", "demo-fix:patch-2"]
    assert props["compatkit:delivery"] == f"runtime {root.resolve()}"
    assert (
        props["compatkit:built-in"] == "false"
        and props["compatkit:ordinal:demo-fix:patch-2"] == "2"
    )
    assert demo.run("runtime", "uninstall", "--dir", str(root))[0] == 0
    active = tmp_path / "rt-pth"
    code, _, err = demo.run("runtime", "install", "demo-fix", "--dir", str(active), "--pth")
    assert code == 0, err
    ids, props = _runtime_patches(valid(demo.run("sbom")[1]))
    assert ids == ["demo-fix:patch-1", "demo-fix:patch-2"], "the .pth starts it: active"
    code, _, err = demo.run("sbom", "--dir", str(tmp_path / "nothing"))
    assert code == 2 and "no such folder" in err, err
    (tmp_path / "empty").mkdir(mode=0o755)
    code, _, err = demo.run("sbom", "--dir", str(tmp_path / "empty"))
    assert code == 2 and "holds no compatkit runtime" in err, err


NO_EXTRA = """
import sys
sys.modules["cyclonedx"] = None  # compatkit writes SBOMs without cyclonedx-python-lib
from compatkit.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_sbom_needs_no_optional_library(demo: Demo, tmp_path: Path) -> None:
    assert demo.run("apply", "demo-fix")[0] == 0
    base = [sys.executable, "-c", NO_EXTRA, "--python", demo.venv.python]
    base += ["--patchset-dir", str(demo.patchsets)]
    env = {"PYTHONPATH": str(SRC_ROOT), "COMPATKIT_NO_INDEX": "1", "PATH": "/usr/bin:/bin"}
    run = subprocess.run([*base, "sbom"], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    doc = valid(run.stdout)
    assert len(_component(doc, "demo")["pedigree"]["patches"]) == 2


def test_an_output_in_a_missing_folder_is_one_usage_line(demo: Demo, tmp_path: Path) -> None:
    """``sbom -o DIR/x.json`` with no DIR was an internal error (exit 3) after the whole run."""
    target = tmp_path / "missing" / "bom.json"
    code, out, err = demo.run("sbom", "-o", str(target))
    assert (code, out) == (2, "")
    assert err.splitlines() == [f"compatkit: error: -o {target}: no folder {target.parent}"]
    assert not target.parent.exists()
    code, out, err = demo.run("--json", "sbom", "-o", str(target))
    assert code == 2 and "no folder" in err and not target.parent.exists()
