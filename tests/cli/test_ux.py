"""What a new user hits: a CI gate that checks nothing, closed pipes, wide tables in logs,
a report that changes when results do not, and the small wording issues."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
from pathlib import Path

import pytest

from compatkit.cli.output import plain_table
from compatkit.ops.matrix_report import report
from helpers import Demo, run_cli


def test_verify_with_nothing_to_check_fails_closed(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: no [tool.compatkit] and nothing applied printed "nothing to verify", exit 0."""
    monkeypatch.chdir(tmp_path)  # no pyproject.toml above
    code, _, err = demo.run("verify")
    assert code == 1 and "nothing was verified" in err and "--allow-empty" in err, err
    code, out, err = demo.run("verify", "--allow-empty")
    assert code == 0 and "nothing to verify (--allow-empty)" in out, err
    assert demo.run("apply", "demo-fix")[0] == 0
    assert demo.run("verify")[0] == 0  # the applied patchsets are checked


def test_verify_of_a_project_whose_patchsets_all_skip_fails_closed(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.compatkit]\npatchsets = ["demo-fix"]\non-mismatch = "warn"\n'
    )
    toml = demo.patchsets / "demo-fix" / "patchset.toml"
    toml.write_text(toml.read_text().replace('specifier = "==1.0"', 'specifier = "==2.0"'))
    monkeypatch.chdir(tmp_path)
    code, _, err = demo.run("verify")
    assert code == 1 and "fits this environment: nothing was verified" in err, err
    assert demo.run("verify", "--allow-empty")[0] == 0


@pytest.mark.parametrize(
    "args",
    [("--json", "status"), ("status",), ("explain", "patch-10"), ("--json", "explain", "patch-6")],
)
def test_a_closed_pipe_is_no_error(demo: Demo, args: tuple[str, ...]) -> None:
    """Before: about one run in four printed a BrokenPipeError traceback, and the text form
    exited 1. Now: no traceback; the command's own code, or 141 if it was cut short. The
    pipe is shrunk to one page, so every one of these outputs outgrows it and the write
    after the reader has gone really fails."""
    for _ in range(4):
        read_end, write_end = os.pipe()
        fcntl.fcntl(read_end, fcntl.F_SETPIPE_SZ, 4096)
        with subprocess.Popen(
            demo.command(*args), stdout=write_end, stderr=subprocess.PIPE
        ) as proc:
            os.close(write_end)
            with os.fdopen(read_end, "rb") as reader:
                first = reader.readline()  # as `| head -1` does, then it goes away
            assert proc.stderr is not None
            err = proc.stderr.read().decode()
            code = proc.wait(timeout=60)
        assert first, err
        assert "Traceback" not in err and "BrokenPipe" not in err, err
        assert code in (0, 141), (code, err)


def test_tables_in_a_pipe_fit_the_width() -> None:
    rows = [["patch-1", "not applied", "x" * 250], ["patch-2", "applied", "short"]]
    text = plain_table("title", ["patch", "state", "detail"], rows, width=80)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "".join(line.split("  ")[-1].strip() for line in lines[3:-1]).count("x") == 250


def test_status_output_in_a_pipe_is_at_most_100_columns(demo: Demo) -> None:
    long_cause = "a" * 300
    greet = demo.patchsets / "demo-fix" / "patches" / "0001.patch"
    greet.write_text(greet.read_text().replace("Title: Greet politely", f"Title: {long_cause}"))
    env = {"COLUMNS": ""}
    proc = subprocess.run(demo.command("status"), capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert max(len(line) for line in proc.stdout.splitlines()) <= 100, proc.stdout


def test_a_plain_table_wraps_its_title_to_the_width() -> None:
    """A long patchset name and target in the title (transformers-config-fallback's is 115
    characters) used to run past the width the rows keep to."""
    title = "transformers-config-fallback 1.0.0 → transformers<=5.25.0,>=5.0.0 (not installed)"
    text = plain_table(title, ["patch", "state"], [["patch-15", "not applicable"]], width=40)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 40
    assert " ".join(lines[:3]) == title and lines[3].startswith("patch ")


def _cell(seconds: float, reason: str) -> dict[str, object]:
    entry = {"id": "patch-1", "state": "applied", "smoke": "fail", "reason": reason}
    return {
        "cell": "c", "mode": "apply", "installed": {"demo": "1.0"}, "note": "",
        "patchsets": {"p": [entry]}, "mismatches": [], "ok": True, "seconds": seconds,
    }  # fmt: skip


def test_the_report_changes_only_when_results_change(tmp_path: Path) -> None:
    """Before: every run rewrote docs/compatibility.md (timings, and a trailing space where
    the 200-character cut fell differently after temp paths were normalised)."""
    docs = []
    for n, (seconds, tmpdir) in enumerate([(12.3, "pytest-41"), (99.9, "pytest-7")]):
        results = tmp_path / f"run{n}"
        results.mkdir()
        reason = f"AssertionError: /tmp/pytest-of-root/{tmpdir}/t0/m <object at 0x7f{n}>"
        (results / "c.json").write_text(json.dumps(_cell(seconds, reason)))
        out = tmp_path / f"doc{n}.md"
        report(results, out)
        docs.append(out.read_text())
    assert docs[0] == docs[1]
    assert not [line for line in docs[0].splitlines() if line != line.rstrip()]


def test_help_says_what_compatkit_is(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        run_cli(capsys, "--help")
    out = capsys.readouterr().out
    assert "Versioned, explained, tested patches" in out and "argparse" not in out


def test_an_unknown_command_suggests_and_hides_internals(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as info:
        run_cli(capsys, "aply")
    err = capsys.readouterr().err
    assert info.value.code == 2 and "did you mean 'apply'?" in err and "_names" not in err, err


def test_wording_of_status_dry_run_reapply_and_revert(demo: Demo) -> None:
    code, out, _ = demo.run("--python", demo.venv.python, "status", "speculators-vllm016")
    assert "(speculators is not installed)" in out and "found speculators" not in out, out
    code, out, _ = demo.run("apply", "demo-fix", "--dry-run")
    assert "file changes (patched files, RECORD" in out and "writes)" not in out, out
    doc = json.loads(demo.run("apply", "demo-fix", "--dry-run", "--json")[1])
    assert doc["would_apply"] == ["patch-1", "patch-2"] and "applied" not in doc
    assert demo.run("apply", "demo-fix")[0] == 0
    greet = demo.patchsets / "demo-fix" / "patches" / "0001.patch"
    greet.write_text(greet.read_text().replace("Title: Greet politely", "Title: Greet nicely"))
    code, out, _ = demo.run("apply", "demo-fix")
    assert "(replacing the applied 1.0.0: the patchset was edited since)" in out, out
    (demo.venv.site / "demo" / "greet.py").write_bytes(b"# mine\n")
    code, _, err = demo.run("revert", "demo-fix")
    assert code == 1 and "revert --force restores the originals anyway" in err, err
