"""Each command's ``--json`` document: its keys pinned (issue 35, item 5). A result renders
its own document; the project forms of ``apply`` and ``verify`` give one entry per patchset,
each with its own keys. The keys do not depend on the outcome (applied or already applied,
reverted or nothing to revert)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import PATCH_GREET, PATCH_UTIL, Demo, write_patchset

ENVELOPE = {"ok", "command"}
ERROR = {"error", "problems"}  # added by the CLI to a document whose command failed (exit 1)
APPLIED = {"patchset", "version", "distribution", "dry_run", "action", "applied", "startup_code"}
APPLIED |= {"files", "excluded", "replaced_version"}
VERIFIED = {"name", "ok", "problems", "hashes_only"}
STATUS = {"name", "version", "target", "installed", "state", "applied_version", "patches"}
STATUS |= {"unmet_constraints", "next_step"}
PATCH = {"id", "status", "detail", "startup_code"}
LISTED = {"name", "version", "patches", "target", "requires", "state", "path", "source"}
LISTED |= {"summary"}
REPORT = {"distribution", "version", "overwritten_by", "patched_by", "missing"}
REPORT |= {"match_no_record", "outside_environment", "not_read", "files"}
REPORT_FILES = {"overwritten_by", "patched_by", "missing", "match_no_record"}
RT_STATUS = {"name", "version", "state", "patches"}
RT_PATCH = {"id", "status", "detail"}
RT_VERIFIED = {"name", "version", "ok", "problems"}

# name: (set-up, command line, keys of the document, {path of a list or dict: its keys});
# set-up: "applied" (apply demo-fix first), "runtime" (a runtime folder for demo-fix at DIR)
Nested = dict[str, set[str]]
CASES: dict[str, tuple[str, tuple[str, ...], set[str], Nested]] = {
    "apply": ("", ("apply", "demo-fix"), APPLIED, {}),
    "apply-again": ("applied", ("apply", "demo-fix"), APPLIED, {}),
    "apply-project": (
        "",
        ("apply",),
        {"dry_run", "patchsets", "skipped"},
        {"patchsets": APPLIED | {"ok"}},
    ),
    "verify": ("applied", ("verify", "demo-fix"), {"patchsets", "problems", "skipped"}, {}),
    "verify-project": (
        "applied",
        ("verify",),
        {"patchsets", "problems", "skipped"},
        {"patchsets": VERIFIED},
    ),
    "pristine": ("", ("pristine", "demo"), {"checked", "distributions"}, {}),
    "pristine-off": (
        "applied",
        ("pristine", "demo"),
        {"checked", "distributions"} | ERROR,
        {"distributions": REPORT, "distributions.files": REPORT_FILES},
    ),
    "pristine-all": (
        "applied",
        ("pristine", "--all"),
        {"checked", "distributions"} | ERROR,
        {"distributions": REPORT, "distributions.files": REPORT_FILES},
    ),
    "revert": ("applied", ("revert", "demo-fix"), {"patchset", "action", "files"}, {}),
    "revert-nothing": ("", ("revert", "demo-fix"), {"patchset", "action", "files"}, {}),
    "status": (
        "",
        ("status", "demo-fix"),
        {"patchsets", "project_mismatches"},
        {"patchsets": STATUS, "patchsets.patches": PATCH},
    ),
    "status-all": (
        "applied",
        ("status",),
        {"patchsets", "project_mismatches"},
        {"patchsets": STATUS, "patchsets.patches": PATCH},
    ),
    "list": ("", ("list",), {"patchsets", "conflicts"}, {"patchsets": LISTED}),
    "runtime-install": (
        "",
        ("runtime", "install", "demo-fix", "--dir", "DIR"),
        {"dir", "patchsets", "pth"},
        {},
    ),
    "runtime-status": (
        "runtime",
        ("runtime", "status", "--dir", "DIR"),
        {"dir", "patchsets"},
        {"patchsets": RT_STATUS, "patchsets.patches": RT_PATCH},
    ),
    "runtime-verify": (
        "runtime",
        ("runtime", "verify", "--dir", "DIR"),
        {"dir", "patchsets", "problems"},
        {"patchsets": RT_VERIFIED},
    ),
    "runtime-uninstall": (
        "runtime",
        ("runtime", "uninstall", "--dir", "DIR"),
        {"dir", "removed"},
        {},
    ),
    "recover": ("", ("recover",), {"recovered"}, {}),
    "constraints": ("", ("constraints", "demo-fix"), {"patchset", "version", "constraints"}, {}),
    "lint": ("", ("lint", "demo-fix", "--offline"), {"patchsets"}, {}),
    "names": ("", ("_names", "patchsets"), {"names"}, {}),
}


@pytest.fixture
def project(demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Demo:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text('[tool.compatkit]\npatchsets = ["demo-fix"]\n')
    monkeypatch.chdir(root)
    return demo


def _entries(doc: object, path: str) -> list[dict[str, object]]:
    """The dicts at ``path`` (``patchsets.patches``: every patch of every patchset); a dict
    of dicts (``overwritten_by``) is not walked into."""
    found: list[object] = [doc]
    for key in path.split("."):
        found = [v[key] for v in found if isinstance(v, dict)]
        found = [x for v in found for x in (v if isinstance(v, list) else [v])]
    dicts = [v for v in found if isinstance(v, dict)]
    assert dicts and len(dicts) == len(found), (path, doc)
    return dicts


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_command_json_keys(project: Demo, tmp_path: Path, case: str) -> None:
    setup, argv, keys, nested = CASES[case]
    where = str(tmp_path / "rt")
    if setup == "applied":
        assert project.run("apply", "demo-fix")[0] == 0
    if setup == "runtime":
        assert project.run("runtime", "install", "demo-fix", "--dir", where)[0] == 0
    code, out, err = project.run("--json", *(where if a == "DIR" else a for a in argv))
    assert code == (1 if keys >= ERROR else 0), err
    doc = json.loads(out)
    assert set(doc) == ENVELOPE | keys, case
    for path, entry in nested.items():
        assert all(set(e) == entry for e in _entries(doc, path)), (path, doc)


def test_the_project_forms_give_one_entry_per_patchset(project: Demo) -> None:
    """Two patchsets in the project's set: ``apply`` and ``verify`` with no name give each its
    own entry, its own patch ids and files. Before: ``applied`` listed patchset names and the
    document kept the last patchset's ``patchset``/``files`` keys at its top."""
    write_patchset(project.patchsets, "demo-greet", {"0001.patch": PATCH_GREET})
    write_patchset(project.patchsets, "demo-util", {"0002.patch": PATCH_UTIL})
    (Path.cwd() / "pyproject.toml").write_text(
        '[tool.compatkit]\npatchsets = ["demo-greet", "demo-util"]\n'
    )
    code, out, err = project.run("--json", "apply")
    assert code == 0, err
    doc = json.loads(out)
    assert set(doc) == ENVELOPE | {"dry_run", "patchsets", "skipped"}
    got = [(e["patchset"], e["applied"], sorted(e["files"])) for e in doc["patchsets"]]
    assert got == [
        ("demo-greet", ["patch-1"], ["demo/greet.py"]),
        ("demo-util", ["patch-2"], ["demo/util.py"]),
    ]
    code, out, err = project.run("--json", "verify")
    assert code == 0, err
    doc = json.loads(out)
    assert [(e["name"], e["ok"]) for e in doc["patchsets"]] == [
        ("demo-greet", True),
        ("demo-util", True),
    ]
    code, out, err = project.run("--json", "status")
    states = {e["name"]: (e["state"], len(e["patches"])) for e in json.loads(out)["patchsets"]}
    assert states["demo-greet"] == states["demo-util"] == ("applied", 1), states
    assert states["demo-fix"] == ("already present", 2), states
