"""Each command's ``--json`` document: its keys pinned (issue 35, item 5). A result renders
its own document; the project forms of ``apply`` and ``verify`` give one entry per patchset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import Demo

ENVELOPE = {"ok", "command"}
APPLIED = {"patchset", "version", "distribution", "dry_run", "action", "applied", "startup_code"}
APPLIED |= {"files", "excluded", "replaced_version"}
VERIFIED = {"name", "ok", "problems", "hashes_only"}

# (command line, keys of the document, keys of each "patchsets" entry or None)
CASES: dict[str, tuple[tuple[str, ...], set[str], set[str] | None]] = {
    "apply": (("apply", "demo-fix"), APPLIED, None),
    "apply-project": (("apply",), {"dry_run", "patchsets", "skipped"}, APPLIED | {"ok"}),
    "verify": (("verify", "demo-fix"), {"patchsets", "problems", "skipped"}, VERIFIED),
    "verify-project": (("verify",), {"patchsets", "problems", "skipped"}, VERIFIED),
    "verify-pristine": (
        ("verify", "--pristine", "demo"),
        {"distribution", "version", "problems", "error"},
        None,
    ),
    "revert": (("revert", "demo-fix"), {"patchset", "action", "files"}, None),
    "status": (("status", "demo-fix"), {"patchsets"}, None),
    "list": (("list",), {"patchsets", "conflicts"}, None),
    "recover": (("recover",), {"recovered"}, None),
    "constraints": (("constraints", "demo-fix"), {"patchset", "version", "constraints"}, None),
    "lint": (("lint", "demo-fix", "--offline"), {"patchsets"}, None),
    "names": (("_names", "patchsets"), {"names"}, None),
}


@pytest.fixture
def project(demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Demo:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text('[tool.compatkit]\npatchsets = ["demo-fix"]\n')
    monkeypatch.chdir(root)
    return demo


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_command_json_keys(project: Demo, case: str) -> None:
    argv, keys, entry = CASES[case]
    if case.startswith(("verify", "revert")) and case != "verify-pristine":
        assert project.run("apply", "demo-fix")[0] == 0
    if case == "verify-pristine":  # a patched file is not pristine: exit 1, its error keys
        assert project.run("apply", "demo-fix")[0] == 0
    code, out, err = project.run("--json", *argv)
    assert code in (0, 1), err
    doc = json.loads(out)
    assert set(doc) == ENVELOPE | keys, case
    if entry is not None:
        assert doc["patchsets"] and all(set(e) == entry for e in doc["patchsets"]), doc


def test_apply_with_no_name_reports_each_patchset_on_its_own(project: Demo) -> None:
    """Before: ``applied`` listed patchset names (not patch ids) and the document kept the
    last patchset's ``patchset``/``files`` keys at its top."""
    code, out, err = project.run("--json", "apply")
    assert code == 0, err
    doc = json.loads(out)
    assert "applied" not in doc and "files" not in doc
    (entry,) = doc["patchsets"]
    assert entry["patchset"] == "demo-fix" and entry["applied"] == ["patch-1", "patch-2"]
