"""A target environment another user owns is refused until the user names it safe, as git
refuses a repository another user owns until ``safe.directory`` names it (issue 46, item 1;
docs/security.md, "Another user's environment"). The other user is a spare uid, 12345."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from compatkit.errors import PatchFormatError
from compatkit.load.config import parse_config
from helpers import Demo, root_only

OTHER = 12345


def _chown(path: Path, uid: int, below: bool = True) -> None:
    os.lchown(path, uid, uid)
    if below:
        for folder, dirs, files in os.walk(path):
            for name in [*dirs, *files]:
                os.lchown(os.path.join(folder, name), uid, uid)


@pytest.fixture(autouse=True)
def _no_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("COMPATKIT_SAFE_ENVIRONMENTS", raising=False)
    monkeypatch.chdir(tmp_path)  # no pyproject.toml of the repository's own
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(tmp_path / "cache"))


def _refusal(err: str, code: int) -> str:
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, (code, err)
    assert "COMPATKIT_SAFE_ENVIRONMENTS" in lines[0] and "safe-environments" in lines[0], err
    return lines[0]


@root_only
def test_root_refuses_another_users_venv_for_every_command(demo: Demo) -> None:
    """Before: root ran the venv's interpreter and wrote its site-packages, and nothing said
    whose it was. Now every command is refused (git refuses every command), nothing written."""
    _chown(demo.venv.root, OTHER)
    before = demo.venv.snapshot()
    for args in (["apply", "demo-fix"], ["status"], ["verify", "demo-fix"], ["revert", "demo-fix"]):
        code, _, err = demo.run(*args)
        line = _refusal(err, code)
        assert f"refusing the environment {demo.venv.root}" in line, line
        assert f"owned by uid {OTHER} (not you or root)" in line, line
    assert demo.venv.snapshot() == before


@root_only
def test_a_site_packages_another_user_owns_is_refused_even_in_roots_venv(demo: Demo) -> None:
    """The interpreter and the venv are root's, site-packages is uid 12345's: refused before
    the lock (he could swap any folder under it)."""
    assert demo.run("apply", "demo-fix")[0] == 0
    _chown(demo.venv.site, OTHER, below=False)
    code, _, err = demo.run("revert", "demo-fix")
    assert f"{demo.venv.site} is owned by uid {OTHER}" in _refusal(err, code)
    assert b"'hi '" in (demo.venv.site / "demo" / "greet.py").read_bytes()


@root_only
@pytest.mark.parametrize("how", ["venv", "site", "star", "config"])
def test_naming_it_safe_lets_root_act_on_it(
    demo: Demo, how: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The environment variable (the venv folder, its site-packages root, or ``*``) or the
    project's ``[tool.compatkit] safe-environments``: root applies and reverts."""
    _chown(demo.venv.root, OTHER)
    named = {"venv": str(demo.venv.root), "site": str(demo.venv.site), "star": "*"}
    if how == "config":
        (tmp_path / "pyproject.toml").write_text(
            f'[tool.compatkit]\nsafe-environments = ["/nowhere", "{demo.venv.root}"]\n'
        )
    else:
        monkeypatch.setenv("COMPATKIT_SAFE_ENVIRONMENTS", f"/nowhere:{named[how]}")
    if how == "site":  # the interpreter is judged before it runs: the venv must be named too
        code, _, err = demo.run("status")
        assert "refusing the environment" in _refusal(err, code)
        monkeypatch.setenv("COMPATKIT_SAFE_ENVIRONMENTS", f"{demo.venv.root}:{demo.venv.site}")
    for args in (["apply", "demo-fix"], ["verify", "demo-fix"], ["revert", "demo-fix"]):
        code, _, err = demo.run(*args)
        assert code == 0, (args, err)


@root_only
def test_another_environment_named_safe_does_not_count(
    demo: Demo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _chown(demo.venv.root, OTHER)
    monkeypatch.setenv("COMPATKIT_SAFE_ENVIRONMENTS", f"{demo.venv.root}-other")
    code, _, err = demo.run("apply", "demo-fix")
    _refusal(err, code)


def test_roots_own_venv_passes(demo: Demo) -> None:
    """The user's own environment (root's, run as root) needs no setting."""
    assert demo.run("apply", "demo-fix")[0] == 0


def test_safe_environments_entries_are_absolute_folders_or_a_star() -> None:
    path = Path("/p/pyproject.toml")
    ok = parse_config({"tool": {"compatkit": {"safe-environments": ["*", "/srv/v"]}}}, path)
    assert ok is not None and ok.safe_environments == ("*", "/srv/v")
    for bad in (["relative/venv"], "/srv/v", [1]):
        with pytest.raises(PatchFormatError, match="safe-environments"):
            parse_config({"tool": {"compatkit": {"safe-environments": bad}}}, path)
