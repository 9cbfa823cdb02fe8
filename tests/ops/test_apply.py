"""apply / verify / revert / status on a real wheel installed in a real venv."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from helpers import PATCH_GREET, Demo, Venv, write_patchset


def test_apply_verify_revert_is_byte_exact(demo: Demo) -> None:
    before = demo.venv.snapshot()
    code, out, _ = demo.run("apply", "demo-fix")
    assert code == 0, out
    greet = (demo.venv.site / "demo/greet.py").read_text()
    assert "'hi ' + name" in greet
    assert (demo.venv.site / "demo/util.py").read_text().count("line20 = 200\n") == 1
    assert demo.run("verify", "demo-fix")[0] == 0
    record = (demo.venv.site / "demo-1.0.dist-info/RECORD").read_text()
    assert "demo-1.0.dist-info/compatkit/demo-fix.json,," in record
    assert demo.run("revert", "demo-fix")[0] == 0
    assert demo.venv.snapshot() == before


def test_apply_twice_is_a_noop(demo: Demo) -> None:
    assert demo.run("apply", "demo-fix")[0] == 0
    after_first = demo.venv.snapshot()
    code, out, _ = demo.run("apply", "demo-fix")
    assert code == 0 and "already applied" in out
    assert demo.venv.snapshot() == after_first


def test_dry_run_writes_nothing(demo: Demo) -> None:
    before = demo.venv.snapshot()
    code, out, _ = demo.run("apply", "demo-fix", "--dry-run")
    assert code == 0 and "would apply 2 patches" in out
    assert demo.venv.snapshot() == before


def test_version_mismatch_is_refused_unless_forced(demo: Demo) -> None:
    write_patchset(demo.patchsets, name="needs-two", specifier="==2.0")
    before = demo.venv.snapshot()
    code, _, err = demo.run("apply", "needs-two")
    assert code == 1
    assert "needs demo==2.0, found demo 1.0" in err
    assert demo.venv.snapshot() == before
    assert demo.run("apply", "needs-two", "--force")[0] == 0


def test_requirement_not_installed_is_refused(demo: Demo) -> None:
    write_patchset(demo.patchsets, name="needs-vllm", requires=["vllm>=0.16,<0.17"])
    code, _, err = demo.run("apply", "needs-vllm")
    assert code == 1 and "needs vllm<0.17,>=0.16, which is not installed" in err


def test_hand_edited_file_is_reported_not_patched(demo: Demo) -> None:
    util = demo.venv.site / "demo/util.py"
    util.write_bytes(util.read_bytes() + b"# local edit\n")
    before = demo.venv.snapshot()
    code, _, err = demo.run("apply", "demo-fix")
    assert code == 1
    assert "demo/util.py does not match its RECORD hash" in err
    assert demo.venv.snapshot() == before


def test_verify_lists_every_problem(demo: Demo) -> None:
    assert demo.run("apply", "demo-fix")[0] == 0
    (demo.venv.site / "demo/greet.py").write_text("edited\n")
    (demo.venv.site / "demo/util.py").unlink()
    code, _, err = demo.run("verify", "demo-fix")
    assert code == 1
    assert "demo/greet.py was edited after compatkit patched it" in err
    assert "demo/util.py is missing" in err


def test_revert_refuses_edited_files_unless_forced(demo: Demo) -> None:
    before = demo.venv.snapshot()
    assert demo.run("apply", "demo-fix")[0] == 0
    (demo.venv.site / "demo/greet.py").write_text("edited\n")
    code, _, err = demo.run("revert", "demo-fix")
    assert code == 1 and "changed since compatkit wrote it" in err
    assert demo.run("revert", "demo-fix", "--force")[0] == 0
    assert demo.venv.snapshot() == before


def test_edited_patchset_is_replaced_in_one_apply(demo: Demo) -> None:
    before = demo.venv.snapshot()
    assert demo.run("apply", "demo-fix")[0] == 0
    patch = demo.patchsets / "demo-fix/patches/0001.patch"
    patch.write_text(PATCH_GREET.replace("+    return 'hi ' + name", "+    return 'hey ' + name"))
    code, out, _ = demo.run("apply", "demo-fix")
    assert code == 0 and "replacing the applied 1.0.0" in out
    assert "'hey ' + name" in (demo.venv.site / "demo/greet.py").read_text()
    assert demo.run("verify", "demo-fix")[0] == 0
    assert demo.run("revert", "demo-fix")[0] == 0
    assert demo.venv.snapshot() == before


def test_exclude_applies_part_and_status_says_so(demo: Demo) -> None:
    code, _, _ = demo.run("apply", "demo-fix", "--exclude", "patch-2")
    assert code == 0
    assert "line20 = 20\n" in (demo.venv.site / "demo/util.py").read_text()
    code, out, _ = demo.run("status", "demo-fix", "--json")
    doc = json.loads(out)
    states = {p["id"]: p["status"] for p in doc["patchsets"][0]["patches"]}
    assert states == {"patch-1": "applied", "patch-2": "excluded"}
    assert demo.run("verify", "demo-fix")[0] == 1


def test_exclude_refused_when_later_patch_needs_its_context(demo: Demo) -> None:
    second = PATCH_GREET.replace("Patch-Id: patch-1", "Patch-Id: patch-3").replace(
        "-    return 'hello ' + name\n+    return 'hi ' + name",
        "-    return 'hi ' + name\n+    return 'hi there ' + name",
    )
    write_patchset(
        demo.patchsets, name="chain", patches={"0001.patch": PATCH_GREET, "0003.patch": second}
    )
    before = demo.venv.snapshot()
    code, _, err = demo.run("apply", "chain", "--exclude", "patch-1")
    assert code == 1
    assert "patch-3 does not apply" in err and "excluded patch-1" in err
    assert demo.venv.snapshot() == before


def test_unknown_patchset_and_id_are_usage_errors(demo: Demo) -> None:
    code, _, err = demo.run("apply", "nope")
    assert code == 2 and "unknown patchset 'nope'" in err
    code, _, err = demo.run("apply", "demo-fix", "--exclude", "patch-99")
    assert code == 2 and "has no patch patch-99" in err
    code, _, err = demo.run("explain", "patch-99")
    assert code == 2


def test_target_not_installed(demo: Demo) -> None:
    write_patchset(demo.patchsets, name="other", distribution="otherdist")
    code, _, err = demo.run("apply", "other")
    assert code == 1 and "otherdist==1.0, which is not installed" in err


def test_status_without_state_reports_what_would_happen(demo: Demo) -> None:
    _, out, _ = demo.run("status", "demo-fix", "--json")
    patches = json.loads(out)["patchsets"][0]["patches"]
    assert [p["detail"] for p in patches] == ["applies cleanly", "applies cleanly"]
    greet = demo.venv.site / "demo/greet.py"
    greet.write_text(greet.read_text().replace("'hello '", "'hi '"))
    _, out, _ = demo.run("status", "demo-fix", "--json")
    doc = json.loads(out)["patchsets"][0]
    assert doc["patches"][0]["detail"] == "its change is already present"
    assert doc["state"] == "partly applied (without compatkit)"


def test_json_output_is_one_document(demo: Demo) -> None:
    code, out, _ = demo.run("apply", "demo-fix", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["ok"] is True and doc["applied"] == ["patch-1", "patch-2"]
    code, out, _ = demo.run("--json", "verify", "nope")
    assert code == 2 and json.loads(out)["ok"] is False


def test_global_options_after_the_command(demo: Demo, tmp_path: Path) -> None:
    from helpers import run_cli

    code, out, _ = run_cli(
        demo.capsys,
        "status",
        "demo-fix",
        "--python",
        demo.venv.python,
        "--patchset-dir",
        str(demo.patchsets),
        "--json",
    )
    assert code == 0 and json.loads(out)["patchsets"][0]["name"] == "demo-fix"


def test_revert_of_a_deletion_restores_record_byte_for_byte(demo: Demo) -> None:
    """Rows of deleted files go back where they were, not after the rows that followed them."""
    delete_init = (
        "Patch-Id: patch-0\nTitle: t\nSymptom: s\nCause: c\nFix: f\n"
        "Smoke-Test: smoke/test_patch_1.py\n---\n--- a/demo/__init__.py\n+++ /dev/null\n"
        "@@ -1 +0,0 @@\n-from demo.greet import hello\n"
    )
    patches = {"0000.patch": delete_init, "0001.patch": PATCH_GREET}
    write_patchset(demo.patchsets, name="deleting", patches=patches)
    before = demo.venv.snapshot()
    assert demo.run("apply", "deleting")[0] == 0
    assert not (demo.venv.site / "demo/__init__.py").exists()
    assert demo.run("revert", "deleting")[0] == 0
    assert demo.venv.snapshot() == before


def _everything(venv: Venv) -> dict[str, bytes]:
    """Every file below site-packages, bytecode included."""
    site = venv.site
    return {str(p.relative_to(site)): p.read_bytes() for p in site.rglob("*") if p.is_file()}


def test_bytecode_moved_aside_and_back_through_reapplies(demo: Demo) -> None:
    """Apply moves the patched modules' pycs into the backup folder (one rename each); a
    re-apply of an edited or narrowed patchset, with pycs regenerated in between, and a
    revert give back every original byte, bytecode and RECORD included."""
    python = demo.venv.python
    subprocess.run([python, "-m", "compileall", "-q", str(demo.venv.site / "demo")], check=True)
    before = _everything(demo.venv)
    pycs = sorted(p for p in before if p.endswith(".pyc") and ("/greet." in p or "/util." in p))
    assert len(pycs) == 2
    assert demo.run("apply", "demo-fix")[0] == 0
    after = _everything(demo.venv)
    assert not [p for p in pycs if p in after]
    moved = [p for p in after if "/compatkit/demo-fix/pyc/" in p]
    assert sorted(after[p] for p in moved) == sorted(before[p] for p in pycs)
    record = (demo.venv.site / "demo-1.0.dist-info/RECORD").read_text()
    assert all(f"{p},," in record for p in moved)  # pip uninstall removes them
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for step in range(3):
        # import the patched modules: Python writes fresh pycs where the originals were
        subprocess.run([python, "-c", "import demo.greet, demo.util"], check=True, env=env)
        if step == 0:
            patch = demo.patchsets / "demo-fix/patches/0001.patch"
            patch.write_text(PATCH_GREET.replace("'hi ' + name", "'hey ' + name"))
            assert demo.run("apply", "demo-fix")[0] == 0
        elif step == 1:
            assert demo.run("apply", "demo-fix", "--exclude", "patch-1")[0] == 0
        else:
            assert demo.run("apply", "demo-fix")[0] == 0
        code, out, err = demo.run("verify", "demo-fix")
        assert code == (1 if step == 1 else 0), (step, out, err)  # 1: "applied without patch-1"
    assert demo.run("revert", "demo-fix")[0] == 0
    assert _everything(demo.venv) == before
