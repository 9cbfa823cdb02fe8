"""Start-up code: a patch touching a root ``*.pth`` or ``sitecustomize`` is refused unless the
patchset declares it (``[patchset] startup-code``), flagged by lint, marked by status/explain."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from compatkit.errors import PatchFormatError
from compatkit.model.startup_code import declared, is_startup_path
from helpers import DEMO_FILES, PATCH_GREET, Demo, build_wheel, run_cli, write_patchset

PTH_LINE = "import os; os.environ.get('CK_EVIL') and print('evil.pth ran')"
EVIL = f"""\
Patch-Id: patch-9
Title: Install a start-up hook
Symptom: nothing runs at start-up
Cause: c
Fix: a .pth file.
Smoke-Test: smoke/test_patch_1.py
---
diff --git a/evil.pth b/evil.pth
new file mode 100644
--- /dev/null
+++ b/evil.pth
@@ -0,0 +1 @@
+{PTH_LINE}
"""
DECLARE = '[patchset]\nstartup-code = ["evil.pth"]\n'


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("evil.pth", True),
        ("distutils-precedence.pth", True),
        (".hidden.pth", True),  # Python 3.11's site.py reads hidden ones too
        ("EVIL.PTH", True),  # case-insensitive: a false alarm costs one declaration
        ("sitecustomize.py", True),
        ("usercustomize.py", True),
        ("SiteCustomize.py", True),
        ("sitecustomize.pyc", True),  # sourceless module
        ("sitecustomize.cpython-311-x86_64-linux-gnu.so", True),
        ("sitecustomize/__init__.py", True),
        ("sitecustomize/helper.py", True),  # imported by its __init__, as a rule
        ("usercustomize/__init__.py", True),
        ("__pycache__/sitecustomize.cpython-311.pyc", True),
        ("pkg/evil.pth", False),  # site.py reads .pth files at a site root only
        ("pkg/sub/x.pth", False),
        ("pkg/sitecustomize.py", False),  # pkg.sitecustomize is not what site.py imports
        ("pkg/__pycache__/sitecustomize.cpython-311.pyc", False),
        ("__pycache__/other.cpython-311.pyc", False),
        ("sitecustomize.txt", False),
        ("sitecustomize_extra.py", False),
        ("evil.pth.txt", False),
        ("demo/greet.py", False),
        ("mypth", False),
    ],
)
def test_which_paths_are_start_up_code(path: str, expected: bool) -> None:
    assert is_startup_path(path) is expected


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (True, "must be a list of paths"),
        (["evil.pth", 3], "must be a list of paths"),
        (["pkg/evil.pth"], "is not start-up code"),
        (["../evil.pth"], "contains '..'"),
        (["a.pth", "a.pth"], "lists a path twice"),
    ],
)
def test_the_declaration_is_validated(value: object, error: str) -> None:
    with pytest.raises(PatchFormatError, match=error):
        declared({"startup-code": value}, "patchset.toml")
    assert declared({}, "x") == () and declared({"startup-code": ["a.pth"]}, "x") == ("a.pth",)


def _declare(root: Path) -> None:
    toml = root / "patchset.toml"
    toml.write_text(toml.read_text().replace("[patchset]\n", DECLARE))


def _evil(demo: Demo, declare: bool) -> Path:
    root = write_patchset(demo.patchsets, name="hook", patches={"0001.patch": EVIL})
    if declare:
        _declare(root)
    return root


def _ran(demo: Demo) -> str:
    """What a plain ``python -c pass`` in the venv prints."""
    env = {"PATH": "/usr/bin:/bin", "CK_EVIL": "1"}
    proc = subprocess.run([demo.venv.python, "-c", "pass"], env=env, capture_output=True, text=True)
    return proc.stdout


def test_undeclared_start_up_file_is_refused_and_nothing_changes(demo: Demo) -> None:
    _evil(demo, declare=False)
    before = demo.venv.snapshot()
    for args in (["apply", "hook"], ["apply", "hook", "--dry-run"], ["apply", "hook", "--force"]):
        code, out, err = demo.run(*args)
        assert code == 1, (args, out, err)
        assert (
            "patch-9: creates evil.pth, start-up code (runs at every interpreter start); "
            'if intended, declare it in patchset.toml: [patchset] startup-code = ["evil.pth"]'
        ) in err
        assert "outside demo's packages" not in err  # one line, the one that says what to do
        assert demo.venv.snapshot() == before
    assert not (demo.venv.site / "evil.pth").exists() and _ran(demo) == ""


def test_status_and_explain_mark_an_undeclared_start_up_patch(demo: Demo) -> None:
    _evil(demo, declare=False)
    code, out, _ = demo.run("status", "hook")
    assert code == 0 and "refused: creates evil.pth, start-up code" in out, out
    doc = json.loads(demo.run("status", "hook", "--json")[1])
    (patch,) = doc["patchsets"][0]["patches"]
    assert patch["status"] == "not applied" and patch["detail"].startswith("refused:")
    assert patch["startup_code"] == [{"path": "evil.pth", "change": "create", "declared": False}]
    code, out, _ = demo.run("explain", "hook:patch-9")
    assert code == 0 and "refused: creates evil.pth" in out, out
    match = json.loads(demo.run("explain", "hook:patch-9", "--json")[1])["matches"][0]
    assert match["startup_code"] == patch["startup_code"]
    # an ordinary patch carries no marker
    ordinary = json.loads(demo.run("status", "demo-fix", "--json")[1])["patchsets"][0]
    assert all(p["startup_code"] == [] for p in ordinary["patches"])
    assert "start-up" not in demo.run("status", "demo-fix")[1]


def test_declared_start_up_file_applies_runs_and_reverts(demo: Demo) -> None:
    _evil(demo, declare=True)
    before = demo.venv.snapshot()
    assert _ran(demo) == ""
    code, out, _ = demo.run("status", "hook")
    assert "applies cleanly; start-up code: creates evil.pth [declared]" in " ".join(out.split())
    code, out, err = demo.run("apply", "hook", "--dry-run")
    assert code == 0 and "warning: hook would change start-up code" in out, err
    assert demo.venv.snapshot() == before
    code, out, err = demo.run("apply", "hook")
    assert code == 0, err
    assert (
        "warning: hook changed start-up code, which runs at every interpreter start: "
        "patch-9 creates evil.pth (declared in [patchset] startup-code)"
    ) in out
    assert (demo.venv.site / "evil.pth").read_text() == PTH_LINE + "\n"
    assert "evil.pth ran" in _ran(demo)  # why it matters: every python start runs it
    assert demo.run("verify", "hook")[0] == 0
    status = json.loads(demo.run("status", "hook", "--json")[1])["patchsets"][0]["patches"][0]
    assert status["status"] == "applied"
    assert status["startup_code"] == [{"path": "evil.pth", "change": "create", "declared": True}]
    assert "start-up code: creates evil.pth [declared]" in demo.run("explain", "hook:patch-9")[1]
    assert demo.run("revert", "hook")[0] == 0
    assert demo.venv.snapshot() == before and _ran(demo) == ""


def test_a_later_start_up_file_needs_its_own_declaration(demo: Demo) -> None:
    second = EVIL.replace("patch-9", "patch-10").replace("evil.pth", "more.pth")
    root = write_patchset(
        demo.patchsets, name="hook", patches={"0001.patch": EVIL, "0002.patch": second}
    )
    _declare(root)
    before = demo.venv.snapshot()
    code, _, err = demo.run("apply", "hook")
    assert code == 1 and "patch-10: creates more.pth" in err and "patch-9" not in err, err
    assert demo.venv.snapshot() == before


def test_editing_an_owned_pth_is_start_up_code_too(demo: Demo, tmp_path: Path) -> None:
    folder = tmp_path / "w2"
    folder.mkdir()
    wheel = build_wheel(folder, "demo", "1.0", {**DEMO_FILES, "demo.pth": b"import demo\n"})
    demo.venv.install(wheel, "uv", "--link-mode", "copy", "--reinstall")
    edit = (
        "Patch-Id: patch-9\nTitle: t\nSymptom: s\nCause: c\nFix: f\n"
        "Smoke-Test: smoke/test_patch_1.py\n---\n--- a/demo.pth\n+++ b/demo.pth\n"
        "@@ -1 +1 @@\n-import demo\n+import demo.greet\n"
    )
    write_patchset(demo.patchsets, name="hook", patches={"0001.patch": edit})
    code, _, err = demo.run("apply", "hook")
    assert code == 1 and "patch-9: edits demo.pth, start-up code" in err, err


def test_lint_flags_start_up_code(
    tmp_path: Path, wheels: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path / "ps"
    root = write_patchset(
        base, name="hook", patches={"0001.patch": PATCH_GREET, "0002.patch": EVIL}
    )
    code, out, err = run_cli(capsys, "lint", "--patchset-dir", str(base))
    assert code == 1
    assert "patch-9: creates evil.pth, start-up code" in err
    assert "outside demo's packages" not in err
    _declare(root)
    toml = root / "patchset.toml"
    code, out, err = run_cli(capsys, "lint", "--patchset-dir", str(base))
    assert code == 0, err
    assert "note: patch-9: creates start-up code evil.pth (declared in startup-code)" in out
    # a declaration no patch uses, and one of the wrong type
    toml.write_text(toml.read_text().replace('["evil.pth"]', '["evil.pth", "stale.pth"]'))
    code, out, err = run_cli(capsys, "lint", "--patchset-dir", str(base))
    assert code == 1 and "startup-code lists stale.pth, no patch touches it" in err
    toml.write_text(toml.read_text().replace('["evil.pth", "stale.pth"]', "true"))
    code, out, err = run_cli(capsys, "lint", "--patchset-dir", str(base), "--json")
    problems = json.loads(out)["patchsets"][0]["problems"]
    assert any("'startup-code' must be a list of paths (strings)" in p for p in problems)
    assert any("patch-9: creates evil.pth" in p for p in problems)


def test_loading_refuses_a_bad_declaration(demo: Demo) -> None:
    root = _evil(demo, declare=True)
    toml = root / "patchset.toml"
    toml.write_text(toml.read_text().replace('["evil.pth"]', '["demo/evil.pth"]'))
    code, _, err = demo.run("apply", "hook")
    assert code == 1 and "startup-code entry 'demo/evil.pth' is not start-up code" in err, err


def test_json_apply_lists_the_start_up_files(
    demo: Demo, capsys: pytest.CaptureFixture[str]
) -> None:
    _evil(demo, declare=True)
    args = ("--python", demo.venv.python, "--patchset-dir", str(demo.patchsets))
    code, out, _ = run_cli(capsys, *args, "apply", "hook", "--json")
    assert code == 0
    assert json.loads(out)["startup_code"] == [
        {"patchset": "hook", "patch": "patch-9", "path": "evil.pth", "change": "create"}
    ]


@pytest.mark.slow
def test_sigkill_at_every_step_of_a_declared_start_up_file(demo: Demo) -> None:
    """A declared root .pth lies outside the distribution's packages: the journal of its
    apply (and revert) must still be recovered at every crash point, not refused."""
    from helpers.reliability import CrashTarget

    _evil(demo, declare=True)
    target = CrashTarget(demo.venv, demo.patchsets, "hook", "demo")
    pristine = target.snap()
    steps_apply = target.count_steps("apply")
    applied = target.snap()
    steps_revert = target.count_steps("revert")
    target.crash("apply", pristine, applied, range(1, steps_apply + 1))
    target.finishes_after("apply", steps_apply, applied)
    target.crash("revert", applied, pristine, range(1, steps_revert + 1))
    assert target.figures["apply"]["recovered"] == steps_apply > 0
    assert target.figures["revert"]["recovered"] == steps_revert > 0
