"""Issue 37 item 4: a team ships patchsets as a package, through the ``compatkit.patchsets``
entry-point group. A real wheel, installed with compatkit into a real venv; that venv's
compatkit lists, applies, verifies and proves from it, and reads entry points in its own environment
only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import DEMO_FILES, UV, build_wheel, write_patchset

ROOT = Path(__file__).resolve().parents[2]
SOURCE = "package teamfix-patchsets 1.0"


def _team_wheel(base: Path, team: str = "teamfix") -> Path:
    """TEAM-patchsets 1.0: the folder TEAM_patchsets/ holding the patchset demo-team."""
    made = write_patchset(base / f"src-{team}", name="demo-team")
    files = {
        f"{team}_patchsets/demo-team/{p.relative_to(made)}": p.read_bytes()
        for p in sorted(made.rglob("*"))
        if p.is_file()
    }
    files[f"{team}_patchsets/__init__.py"] = b""
    files[f"{team}_patchsets-1.0.dist-info/entry_points.txt"] = (
        f"[compatkit.patchsets]\n{team} = {team}_patchsets\n".encode()
    )
    return build_wheel(base, f"{team}-patchsets", "1.0", files)


def _venv(root: Path, *wheels: Path, compatkit: bool) -> Path:
    subprocess.run([UV or "uv", "venv", "-q", "-p", sys.executable, str(root)], check=True)
    pip = [UV or "uv", "pip", "install", "-q", "--python", str(root / "bin" / "python")]
    if compatkit:
        subprocess.run([*pip, "-e", str(ROOT)], check=True)
    subprocess.run([*pip, "--no-deps", "--link-mode", "copy", *map(str, wheels)], check=True)
    return root / "bin"


def _run(cmd: list[str], cwd: Path) -> tuple[int, str]:
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.slow
def test_a_patchset_package_is_listed_applied_and_verified(tmp_path: Path) -> None:
    demo = build_wheel(tmp_path, "demo", "1.0", DEMO_FILES)
    team = _team_wheel(tmp_path)
    bin_ = _venv(tmp_path / "venv", demo, team, compatkit=True)
    here = tmp_path / "work"
    here.mkdir()
    compatkit = [str(bin_ / "compatkit")]

    code, out = _run([*compatkit, "list"], here)
    (row,) = [line for line in out.splitlines() if line.startswith("demo-team ")]
    assert code == 0 and row.endswith(SOURCE) and "speculators-vllm016" in out, out
    assert next(line for line in out.splitlines() if "speculators-vllm016" in line).endswith(
        "bundled"
    ), out

    code, out = _run([*compatkit, "apply", "demo-team"], here)
    assert code == 0, out
    code, out = _run([*compatkit, "verify", "demo-team"], here)
    assert code == 0, out
    (greet,) = (tmp_path / "venv").glob("lib/python*/site-packages/demo/greet.py")
    assert "'hi ' + name" in greet.read_text()

    # prove from the package: each smoke test fails unpatched and passes patched
    assert _run([*compatkit, "revert", "demo-team"], here)[0] == 0
    pip = [UV or "uv", "pip", "install", "-q", "--python", str(bin_ / "python")]
    subprocess.run([*pip, "pytest"], check=True)
    code, out = _run([*compatkit, "prove", "demo-team", "-o", str(tmp_path / "r")], here)
    assert code == 0, out
    rows = json.loads((tmp_path / "r" / "demo-team.json").read_text())
    assert [(r["unpatched"], r["without"], r["patched"]) for r in rows] == [
        ("fail", "fail", "pass")
    ] * 2, rows

    # the same name from a --patchset-dir: one line naming both sources, exit 2
    write_patchset(tmp_path / "mine", name="demo-team")
    code, out = _run([*compatkit, "--patchset-dir", str(tmp_path / "mine"), "list"], here)
    clash = [line for line in out.splitlines() if "demo-team" in line]
    assert code == 2 and len(clash) == 1, out
    assert SOURCE in clash[0] and "--patchset-dir" in clash[0], clash

    # ... unless the project names the one to use
    for choice, source in (("teamfix-patchsets", SOURCE), ("--patchset-dir", "--patchset-dir")):
        (here / "pyproject.toml").write_text(
            f'[tool.compatkit.patchset-source]\ndemo-team = "{choice}"\n'
        )
        code, out = _run([*compatkit, "--patchset-dir", str(tmp_path / "mine"), "list"], here)
        (row,) = [line for line in out.splitlines() if line.startswith("demo-team ")]
        assert code == 0 and row.endswith(source), out

    # two packages with the same name: one line naming both, until the project picks one
    (here / "pyproject.toml").unlink()
    other = _team_wheel(tmp_path, "otherteam")
    subprocess.run([*pip, "--no-deps", str(other)], check=True)
    code, out = _run([*compatkit, "list"], here)
    clash = [line for line in out.splitlines() if "demo-team" in line]
    assert code == 2 and len(clash) == 1 and "package otherteam-patchsets 1.0" in clash[0], out
    assert SOURCE in clash[0], clash
    code, out = _run([*compatkit, "apply", "demo-team"], here)
    assert code == 2 and "two sources" in out, out
    (here / "pyproject.toml").write_text(
        '[tool.compatkit.patchset-source]\ndemo-team = "OtherTeam_Patchsets"\n'
    )
    code, out = _run([*compatkit, "list"], here)
    (row,) = [line for line in out.splitlines() if line.startswith("demo-team ")]
    assert code == 0 and row.endswith("package otherteam-patchsets 1.0"), out


@pytest.mark.slow
def test_entry_points_are_read_in_compatkits_own_environment_only(tmp_path: Path) -> None:
    """A package in the --python target ships no patchsets to a compatkit installed elsewhere,
    and compatkit's own package ships them whatever the target."""
    demo = build_wheel(tmp_path, "demo", "1.0", DEMO_FILES)
    team = _team_wheel(tmp_path)
    with_team = _venv(tmp_path / "with-team", demo, team, compatkit=False)
    code, out = _run(
        [sys.executable, "-m", "compatkit", "--python", str(with_team / "python"), "list"],
        tmp_path,
    )
    assert code == 0 and "speculators-vllm016" in out and "demo-team" not in out, out

    own = _venv(tmp_path / "own", team, compatkit=True)
    target = _venv(tmp_path / "target", demo, compatkit=False)
    code, out = _run(
        [str(own / "compatkit"), "--python", str(target / "python"), "status", "demo-team"],
        tmp_path,
    )
    assert code == 0 and "demo-team 1.0.0 → demo==1.0 (found demo 1.0): not applied" in out, out


@pytest.mark.parametrize(
    "table",
    ['patchset-source = ["demo-team"]', "patchset-source = { demo-team = 1 }"],
)
def test_a_bad_patchset_source_is_one_line(
    table: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from helpers import run_cli

    (tmp_path / "pyproject.toml").write_text(f"[tool.compatkit]\n{table}\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "list")
    assert code == 1 and out == "", (code, out)
    assert err.count("\n") == 1 and "patchset-source] must map patchset names to strings" in err
