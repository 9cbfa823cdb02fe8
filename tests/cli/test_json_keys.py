"""Each command's ``--json`` document: its keys pinned (issue 35, item 5). A result renders
its own document; the project forms of ``apply`` and ``verify`` give one entry per patchset,
each with its own keys. The keys do not depend on the outcome (applied or already applied,
reverted or nothing to revert)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import PATCH_GREET, PATCH_UTIL, Demo, write_patchset

ENVELOPE = {"ok", "command"}
ERROR = {"error", "problems"}  # added by the CLI to a document whose command failed (exit 1)
APPLIED = {"patchset", "version", "distribution", "dry_run", "action", "applied", "startup_code"}
APPLIED |= {"files", "excluded", "replaced_version"}
VERIFIED = {"name", "ok", "problems", "hashes_only"}
STATUS = {"name", "version", "target", "installed", "state", "applied_version", "patches"}
STATUS |= {"unmet_constraints", "next_step", "runtime"}
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


# The commands of list..completion (issue 35, items 5 and 6). "{tmp}" and "{wheels}" are filled
# in: the test's folder and the demo wheel's. Each (command line, keys of the document).
WHEEL = {"patchset", "wheel", "distribution", "version", "base_version", "sha256", "applied"}
WHEEL |= {"files", "source", "proof", "sbom", "unchanged", "notes"}
WHEELS = ("--offline", "--wheel-dir", "{wheels}")
FAILED = {"error", "problems"}  # an error raised out of a command: its own document, no more
MORE: dict[str, tuple[tuple[str, ...], set[str]]] = {
    "explain": (("explain", "patch-1"), {"matches"}),
    "explain-unsure": (("explain", "greeting words"), {"matches", "candidates"} | FAILED),
    "exec": (
        ("exec", "demo-fix", "--", sys.executable, "-c", "pass"),
        {"patchsets", "runtime", "returncode"},
    ),
    "wheel": (("wheel", "demo-fix", "-o", "{tmp}/dist", "--wheel-dir", "{wheels}"), WHEEL),
    "sbom": (("sbom", "-o", "{tmp}/sbom.json"), {"path", "components", "patched", "unknown"}),
    "diff": (
        ("diff", "demo", "--patchset", "local", "--id", "patch-9", *WHEELS, "-o", "{tmp}/new"),
        {"patchset", "id", "files", "written", "pristine_from", "skipped_empty"},
    ),
    "completion": (("completion", "bash"), {"shell", "script"}),
    "matrix-report": (
        ("matrix", "report", "--results", "{tmp}/cells", "-o", "{tmp}/c.md"),
        {"cells", "rows"},
    ),
    "lint-failed": (("lint", "{tmp}/bad"), {"patchsets"} | FAILED),
}
ERRORS: dict[str, tuple[str, ...]] = {
    "list": ("list", "--patchset-dir", "{tmp}/missing"),
    "explain": ("explain", "patch-99"),
    "smoke": ("smoke", "nope"),
    "upstream": ("upstream", "demo-fix", "--target", "other==1.0"),
    "exec": ("exec", "nope", "--", "true"),
    "wheel": ("wheel", "nope"),
    "sbom": ("sbom", "-o", "/dev/null"),
    "fleet": ("fleet", "status", "demo-fix", "--force"),
    "matrix": ("matrix", "run"),
    "prove": ("prove", "nope"),
    "rebase": ("rebase", "demo-fix", "--target", "other==1.0"),
    "diff": ("diff", "demo", "--patchset", "x", "--id", "not an id"),
    "lint": ("lint", "nope"),
    "constraints": ("constraints", "nope"),
    "recover": ("recover", "not-installed"),
    "completion": ("completion", "fish"),
}
CELL = {
    "cell": "c1",
    "python": "3.11.9",
    "mode": "apply",
    "packages": ["demo==1.0"],
    "installed": {"demo": "1.0"},
    "note": "",
    "patchsets": {"demo-fix": [{"id": "patch-1", "state": "applied", "smoke": "pass"}]},
    "mismatches": [],
    "ok": True,
    "seconds": 1.0,
}


def _filled(argv: tuple[str, ...], tmp: Path, demo: Demo) -> list[str]:
    return [a.format(tmp=tmp, wheels=demo.wheel.parent) for a in argv]


@pytest.mark.parametrize("case", sorted(MORE))
def test_more_commands_json_keys(
    project: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    argv, keys = MORE[case]
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(tmp_path / "ck-cache"))
    monkeypatch.setenv("COMPATKIT_NO_INDEX", "1")
    if case == "diff":  # a hand edit (uv's copy replaced, never edited in place)
        greet = project.venv.site / "demo/greet.py"
        edited = greet.with_name("greet.tmp")
        edited.write_bytes(greet.read_bytes().replace(b"hello", b"hi"))
        edited.replace(greet)
    if case == "matrix-report":
        (tmp_path / "cells").mkdir()
        (tmp_path / "cells/c1.json").write_text(json.dumps(CELL))
    if case == "lint-failed":
        (tmp_path / "bad").mkdir()
        (tmp_path / "bad/patchset.toml").write_text('name = "bad"\n')
    code, out, err = project.run("--json", *_filled(argv, tmp_path, project))
    assert code == (1 if keys >= FAILED else 0), err
    doc = json.loads(out)
    assert set(doc) == ENVELOPE | keys, (case, sorted(doc))
    assert doc["ok"] is (code == 0) and doc["command"] == argv[0]


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_an_error_is_its_own_document(project: Demo, tmp_path: Path, case: str) -> None:
    """Before: main merged ``error`` and ``problems`` into whatever the command had written."""
    try:
        code, out, err = project.run("--json", *_filled(ERRORS[case], tmp_path, project))
    except SystemExit as exc:  # a usage error argparse found: exit 2, as argparse exits
        code, (out, err) = int(str(exc.code)), project.capsys.readouterr()
    assert code in (1, 2) and err.startswith("compatkit: error: "), (case, err)
    doc = json.loads(out)
    assert set(doc) == ENVELOPE | FAILED, (case, doc)
    assert doc["ok"] is False and doc["error"] in err


def test_fleet_json_keys() -> None:
    """fleet's document, from its result (a real cluster: tests/integrations/test_fleet.py)."""
    from compatkit.ops.fleet import FleetResult, NodeAnswer, NodeReport, PatchsetOnNode

    patchsets = [PatchsetOnNode("demo-fix", None, problems=["demo-fix: not installed"])]
    node = NodeReport("a" * 12, "10.0.0.1", NodeAnswer("/py", patchsets))
    doc = FleetResult("verify", "x", [node]).to_json()
    assert set(doc) == {"ok", "action", "address", "nodes", "dead_before", "rolled_back"}
    (entry,) = doc["nodes"]
    assert set(entry) == {"node_id", "address", "ok", "failure", "end_state", "end_reason"} | {
        "python",
        "patchsets",
    }
    assert set(entry["patchsets"][0]) == {"name", "state", "action", "ok", "problems", "patches"}


@pytest.mark.slow
def test_pytest_commands_json_keys(
    project: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """smoke, prove, upstream (with --python) and matrix run, which run pytest in the target."""
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(tmp_path / "ck-cache"))
    uv = shutil.which("uv") or "uv"
    subprocess.run([uv, "pip", "install", "-q", "--python", project.venv.python, "pytest"],
                   check=True)  # fmt: skip
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(
        '[[cell]]\nid = "c1"\npackages = ["demo==1.0"]\npatchsets = ["demo-fix"]\n'
        '[cell.expect.demo-fix]\ndefault = "applied/pass"\n'
    )
    cases = {
        ("smoke", "demo-fix"): {"patchset", "applied", "pytest_exit", "patches"},
        ("prove", "demo-fix", "-o", str(tmp_path / "proof")): {"patchset", "patches"},
        ("upstream", "demo-fix", "--target", "demo==1.0"): {"patchset", "target", "patches"}
        | {"unmet_requirements"},
        (
            "matrix",
            "run",
            "c1",
            "--matrix",
            str(matrix),
            "--results",
            str(tmp_path / "cells"),
        ): CELL.keys() - {"ok"},
    }
    for argv, keys in cases.items():
        _, out, err = project.run("--json", *argv)
        doc = json.loads(out)
        assert set(doc) == ENVELOPE | keys, (argv, sorted(doc), err)


def test_main_never_merges_an_error_into_a_result(
    project: Demo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command that gave its result and then raised: the error's own document, nothing of the
    result (before: main wrote ``ok``, ``error`` and ``problems`` into the command's)."""
    from compatkit.cli.commands import constraints
    from compatkit.errors import CompatkitError

    def gave_then_raised(args: object, ctx: Any) -> int:
        ctx.out.result({"ok": True, "partial": 1})
        raise CompatkitError("went wrong", ["one"])

    monkeypatch.setattr(constraints, "run", gave_then_raised)
    code, out, err = project.run("--json", "constraints", "demo-fix")
    assert code == 1 and err == "compatkit: error: went wrong\n  - one\n"
    doc = json.loads(out)
    assert doc == {"ok": False, "command": "constraints", "error": "went wrong"} | {
        "problems": ["one"]
    }


def test_a_command_gives_its_document_once() -> None:
    from compatkit.cli.output import Output

    out = Output(json_mode=True)
    out.result({"a": 1})
    with pytest.raises(RuntimeError, match="once"):
        out.result({"b": 2})
