"""[[constraints]] in patchset.toml: pins with a rationale each; status and verify name an
unmet pin; `compatkit constraints PATCHSET` prints a file for `uv pip install -c`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from helpers import UV, Demo, build_wheel, run_cli, write_patchset

PINS = '''
[[constraints]]
pin = "cklib==2.0"
rationale = """
cklib 2.1 ships a file over demo's.
Pinning 2.0 keeps it out."""

[[constraints]]
pin = "absentlib<1"
rationale = "Not installed here: a constraint only limits what is installed."
'''


def _with_pins(demo: Demo, pins: str = PINS) -> None:
    toml = demo.patchsets / "demo-fix" / "patchset.toml"
    toml.write_text(toml.read_text() + pins)


def _install_cklib(demo: Demo, tmp_path: Path, version: str) -> None:
    wheel = build_wheel(tmp_path, "cklib", version, {"cklib/__init__.py": version.encode()})
    demo.venv.install(wheel, "uv", "--reinstall")


def test_constraints_prints_a_file_pip_and_uv_read(demo: Demo, tmp_path: Path) -> None:
    _with_pins(demo)
    code, out, err = demo.run("constraints", "demo-fix")
    assert (code, err) == (0, "")
    assert out == (
        "# constraints of patchset demo-fix 1.0.0 (compatkit constraints demo-fix)\n\n"
        "# cklib 2.1 ships a file over demo's.\n# Pinning 2.0 keeps it out.\ncklib==2.0\n\n"
        "# Not installed here: a constraint only limits what is installed.\nabsentlib<1\n"
    )
    # uv reads it: with the file as -c, the pin decides between two versions on offer
    links = tmp_path / "links"
    links.mkdir()
    for version in ("2.0", "2.1"):
        build_wheel(links, "cklib", version, {"cklib/__init__.py": b""})
    (tmp_path / "c.txt").write_text(out)
    cmd = [UV or "uv", "pip", "install", "-q", "--python", demo.venv.python]
    where = ["--no-index", "--find-links", str(links), "-c", str(tmp_path / "c.txt")]
    subprocess.run([*cmd, *where, "cklib"], check=True)
    assert (demo.venv.site / "cklib-2.0.dist-info").is_dir()


def test_status_and_verify_name_the_unmet_pin(demo: Demo, tmp_path: Path) -> None:
    _with_pins(demo)
    _install_cklib(demo, tmp_path, "2.1")
    assert demo.run("apply", "demo-fix")[0] == 0
    code, out, _ = demo.run("status", "demo-fix")
    assert code == 0
    assert "demo-fix: constraint cklib==2.0 unmet: found cklib 2.1" in out
    code, out, _ = demo.run("--json", "status", "demo-fix")
    unmet = json.loads(out)["patchsets"][0]["unmet_constraints"]
    assert unmet == ["constraint cklib==2.0 unmet: found cklib 2.1"]
    code, _, err = demo.run("verify", "demo-fix")
    assert code == 1
    assert "demo-fix: constraint cklib==2.0 unmet: found cklib 2.1" in err
    _install_cklib(demo, tmp_path, "2.0")
    assert demo.run("verify", "demo-fix")[0] == 0


def test_a_constraint_without_rationale_is_refused(demo: Demo) -> None:
    _with_pins(demo, '\n[[constraints]]\npin = "cklib==2.0"\n')
    code, out, err = demo.run("constraints", "demo-fix")
    assert code == 1 and out == ""
    assert "[constraints #1] 'rationale' must be a non-empty string" in err


def test_constraints_of_an_unknown_patchset(capsys) -> None:  # type: ignore[no-untyped-def]
    code, _, err = run_cli(capsys, "constraints", "no-such-patchset")
    assert code in (1, 2) and err.startswith("compatkit: error: ") and err.count("\n") == 1


def test_the_bundled_today_patchset_pins_the_cuda_pair(capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run_cli(capsys, "constraints", "vllm033-hidden-states")
    assert code == 0
    pins = [line for line in out.splitlines() if line and not line.startswith("#")]
    assert pins == ["cuda-python==13.4.4", "cuda-bindings==13.4.4"]


def test_lint_refuses_a_pin_that_does_not_parse(
    tmp_path: Path, wheels: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_patchset(tmp_path / "ps")
    toml = root / "patchset.toml"
    toml.write_text(toml.read_text() + '\n[[constraints]]\npin = "cklib=>2"\nrationale = "typo"\n')
    code, _, err = run_cli(capsys, "--patchset-dir", str(tmp_path / "ps"), "lint", "demo-fix")
    assert code == 1
    assert "bad constraint 'cklib=>2'" in err
