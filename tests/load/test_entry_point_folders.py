"""Issue 46 item 8: a ``compatkit.patchsets`` entry point names a package folder of its own
distribution, nothing else (``x = ..tmp.some.folder`` named /tmp/some/folder); the declaring
distribution's name is printed with its control characters escaped. Item 9: ``lint`` reports a
name two sources ship as ``list`` and ``apply`` do.

compatkit runs from its source in a bare venv (``PYTHONPATH``: the source and the test runner's
site-packages for its dependencies), so the venv's own site-packages, which the entry-point scan
reads, holds only the wheels a test installs."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from helpers import UV, build_wheel, needs_uv, write_patchset

SRC = Path(__file__).resolve().parents[2] / "src"


def _team_wheel(base: Path, value: str, name: str = "demo-team") -> Path:
    made = write_patchset(base / "made", name=name)
    files = {
        f"teamfix_patchsets/{name}/{p.relative_to(made)}": p.read_bytes()
        for p in sorted(made.rglob("*"))
        if p.is_file()
    }
    files["teamfix_patchsets/__init__.py"] = b""
    files["teamfix_patchsets-1.0.dist-info/entry_points.txt"] = (
        f"[compatkit.patchsets]\nteam = {value}\n".encode()
    )
    return build_wheel(base, "teamfix-patchsets", "1.0", files)


def _venv(root: Path, wheel: Path) -> Path:
    subprocess.run([UV or "uv", "venv", "-q", "-p", sys.executable, str(root)], check=True)
    python = root / "bin" / "python"
    install = [UV or "uv", "pip", "install", "-q", "--no-deps", "--link-mode", "copy"]
    subprocess.run([*install, "--python", str(python), str(wheel)], check=True)
    return python


def _compatkit(python: Path, *args: str) -> tuple[int, str, str]:
    path = os.pathsep.join([str(SRC), sysconfig.get_paths()["purelib"]])
    env = {**os.environ, "PYTHONPATH": path, "COLUMNS": "200"}
    proc = subprocess.run(
        [str(python), "-m", "compatkit", *args], capture_output=True, text=True, env=env
    )
    return proc.returncode, proc.stdout, proc.stderr


@needs_uv
@pytest.mark.parametrize("value", ["..tmp.some.folder", "other_pkg", "teamfix_patchsets/../x"])
def test_an_entry_point_outside_its_distribution_is_refused(value: str, tmp_path: Path) -> None:
    outside = tmp_path / "tmp" / "some" / "folder"
    write_patchset(outside, name="planted")  # what "..tmp.some.folder" named from site-packages
    python = _venv(tmp_path / "venv", _team_wheel(tmp_path, value))
    for command in ("list", "status"):
        code, out, err = _compatkit(python, command)
        assert code == 2 and "planted" not in out, (command, out, err)
        assert err.count("\n") == 1 and "names no package folder of its own" in err, err
        assert "teamfix-patchsets 1.0" in err, err


@needs_uv
def test_a_declaring_distributions_name_is_printed_escaped(tmp_path: Path) -> None:
    python = _venv(tmp_path / "venv", _team_wheel(tmp_path, "teamfix_patchsets"))
    code, out, err = _compatkit(python, "list")
    assert code == 0 and "package teamfix-patchsets 1.0" in out, (out, err)  # the control
    (metadata,) = (tmp_path / "venv").glob("lib/python*/site-packages/teamfix*/METADATA")
    text = metadata.read_text().replace("Name: teamfix-patchsets", "Name: team\x1b[2Jfix")
    metadata.write_text(text)
    code, out, err = _compatkit(python, "list")
    assert code == 0 and "\x1b" not in out + err, (out, err)
    assert "package team\\x1b[2Jfix 1.0" in out, out


@needs_uv
def test_lint_reports_a_name_a_package_ships_beside_the_bundled_one(tmp_path: Path) -> None:
    python = _venv(tmp_path / "venv", _team_wheel(tmp_path, "teamfix_patchsets", "gguf-q2-0"))
    outputs = {}
    commands = (["list"], ["apply", "gguf-q2-0"], ["lint", "--offline", "gguf-q2-0"], ["lint"])
    for command in commands:
        code, out, err = _compatkit(python, *command)
        clash = [line for line in (out + err).splitlines() if "gguf-q2-0" in line]
        outputs[command[0]] = clash
        assert code == 2 and len(clash) == 1, (command, code, out, err)
        assert "two sources" in clash[0] and "bundled" in clash[0], clash
        assert "package teamfix-patchsets 1.0" in clash[0], clash
    assert outputs["lint"] == outputs["apply"]
