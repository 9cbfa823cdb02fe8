"""The pytest plugin gives ``compatkit verify``'s verdict: real pytest runs in a real venv.

One venv (demo 1.0, pytest, compatkit from this checkout) for the module; each test sets
demo-fix's state in it first, then runs that venv's ``pytest --compatkit-verify`` and its
``compatkit verify`` in a project folder, as a user would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import DEMO_FILES, UV, build_wheel, root_only, write_patchset

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(UV is None, reason="needs uv"),
]

ROOT = Path(__file__).resolve().parents[2]
DROP = ("VIRTUAL_ENV", "PYTHONPATH", "UV_PROJECT_ENVIRONMENT", "CONDA_PREFIX", "PYTEST_ADDOPTS")


class Project:
    def __init__(self, bin_: Path, root: Path) -> None:
        self.bin, self.root = bin_, root

    def run(
        self, tool: str, *args: str, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in DROP}
        cmd = [str(self.bin / tool), *args]
        return subprocess.run(cmd, cwd=cwd or self.root, capture_output=True, text=True, env=env)

    def pytest(self, *args: str) -> subprocess.CompletedProcess[str]:
        # not -q: the header, where the plugin says what it verified, is part of the test
        return self.run("pytest", "-p", "no:cacheprovider", "--compatkit-verify", *args)

    def demo_fix(self, applied: bool) -> None:
        """demo-fix applied, or not, in the venv (whatever the previous test left)."""
        patchsets = str(self.root.parent / "patchsets")
        verb = "apply" if applied else "revert"
        # from beside the project (no [tool.compatkit] found): the shared copy of demo-fix,
        # the same bytes as the project's own (same digest)
        ran = self.run(
            "compatkit", "--patchset-dir", patchsets, verb, "demo-fix", cwd=self.root.parent
        )
        assert ran.returncode == 0, ran.stderr


@pytest.fixture(scope="module")
def venv_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("plugin")
    wheel = build_wheel(base, "demo", "1.0", DEMO_FILES)
    root = base / "venv"
    subprocess.run([UV or "uv", "venv", "-q", "-p", sys.executable, str(root)], check=True)
    pip = [UV or "uv", "pip", "install", "-q", "--python", str(root / "bin" / "python")]
    subprocess.run([*pip, "pytest", "-e", str(ROOT)], check=True)
    subprocess.run([*pip, "--no-deps", "--link-mode", "copy", str(wheel)], check=True)
    write_patchset(base / "patchsets")
    write_patchset(base / "patchsets", name="for-vllm", requires=["vllm>=0.16"])
    write_patchset(base / "patchsets", name="stale", specifier="==2.0")
    return root / "bin"


def project(venv_bin: Path, name: str, patchsets: list[str] | None) -> Project:
    """A project folder with its own copy of the patchsets (``patchset-dirs`` are folders
    inside the project), with a passing test; ``[tool.compatkit]`` listing ``patchsets``
    (None: no table at all)."""
    root = venv_bin.parent.parent / name
    root.mkdir(exist_ok=True)
    shutil.copytree(root.parent / "patchsets", root / "patchsets", dirs_exist_ok=True)
    (root / "test_ok.py").write_text("def test_ok():\n    pass\n")
    text = '[tool.pytest.ini_options]\naddopts = ""\nnorecursedirs = ["patchsets"]\n'
    if patchsets is not None:
        names = ", ".join(f'"{n}"' for n in patchsets)
        text += f'[tool.compatkit]\npatchsets = [{names}]\npatchset-dirs = ["patchsets"]\n'
    (root / "pyproject.toml").write_text(text)
    return Project(venv_bin, root)


# (project's patchsets, demo-fix applied?): verify's verdict, pass or fail
CASES = [
    (["demo-fix"], True),
    (["demo-fix"], False),
    (["for-vllm"], True),  # fits nothing here: vllm is not installed
    (["stale"], True),  # its target version is not installed (on-mismatch = "strict")
    (None, True),  # no project: what is applied here
    (None, False),  # no project, nothing applied
]


@pytest.mark.parametrize(("patchsets", "applied"), CASES)
@pytest.mark.parametrize("allow_empty", [False, True])
def test_the_plugin_passes_exactly_when_verify_does(
    venv_bin: Path, patchsets: list[str] | None, applied: bool, allow_empty: bool
) -> None:
    proj = project(venv_bin, "same", patchsets)
    proj.demo_fix(applied)
    empty = ["--allow-empty"] if allow_empty else []
    verify = proj.run("compatkit", "verify", *empty)
    run = proj.pytest(*(["--compatkit-allow-empty"] if allow_empty else []))
    assert verify.returncode in (0, 1), verify.stderr
    assert run.returncode == (0 if verify.returncode == 0 else 4), run.stdout + run.stderr
    if verify.returncode:  # the same error, as compatkit verify words it (the option aside)
        first = verify.stderr.splitlines()[0].partition(" (name the patchsets")[0]
        assert run.stderr.count(first) == 1, run.stderr


def test_nothing_verified_fails_unless_allowed(venv_bin: Path) -> None:
    proj = project(venv_bin, "empty", ["for-vllm"])
    proj.demo_fix(True)
    run = proj.pytest()
    assert run.returncode == 4, run.stdout
    assert run.stderr.strip().splitlines() == [
        f"ERROR: compatkit: error: no patchset of {proj.root / 'pyproject.toml'} fits this "
        "environment: nothing was verified (name the patchsets, or pass "
        "--compatkit-allow-empty if an empty set is expected here)"
    ]
    assert "passed" not in run.stdout  # no test ran
    run = proj.pytest("--compatkit-allow-empty")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "skipped for-vllm: needs vllm>=0.16, which is not installed" in run.stdout
    assert (
        f"compatkit: no patchset of {proj.root / 'pyproject.toml'} fits this environment; "
        "nothing to verify (--compatkit-allow-empty)"
    ) in run.stdout, run.stdout


def test_a_target_mismatch_is_one_message_without_an_apply_that_fails(venv_bin: Path) -> None:
    proj = project(venv_bin, "mismatch", ["stale"])
    run = proj.pytest()
    assert run.returncode == 4
    out = run.stdout + run.stderr
    assert run.stderr.strip().splitlines() == [
        "ERROR: compatkit: error: 1 configured patchset(s) match nothing installed "
        f'({proj.root / "pyproject.toml"}; on-mismatch = "warn" to allow)',
        "  - stale: needs demo==2.0, found demo 1.0",
    ], out
    assert "missing patches" not in out and "compatkit apply" not in out
    assert proj.run("compatkit", "apply").returncode == 1  # an apply would fail too


def test_the_missing_patches_are_named_and_apply_restores(venv_bin: Path) -> None:
    proj = project(venv_bin, "named", ["demo-fix"])
    proj.demo_fix(False)
    run = proj.pytest()
    assert run.returncode == 4
    assert run.stderr.strip().splitlines() == [
        "ERROR: compatkit: error: verify failed: 1 problem(s)",
        "  - demo-fix is not applied to demo 1.0: the files match their RECORD, so a reinstall "
        "removed the patches or they were never applied",
        "  missing in demo-fix: patch-1 (not applied), patch-2 (not applied)",
        "run 'compatkit apply' to apply them, then pytest again",
    ], run.stdout + run.stderr
    assert proj.run("compatkit", "apply").returncode == 0  # the step named works
    run = proj.pytest()
    assert run.returncode == 0, run.stdout + run.stderr
    verified = "compatkit: verified demo-fix: fully applied, every patched file intact"
    assert verified in run.stdout and "1 passed" in run.stdout


@root_only
def test_the_projects_safe_environments_are_honoured_as_the_cli_honours_them(
    venv_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Root, and a venv whose folder another user (uid 12345) owns: the plugin refuses it as
    the command line does, until the project's ``[tool.compatkit] safe-environments`` names
    it (before: only ``$COMPATKIT_SAFE_ENVIRONMENTS`` counted, so a project that named its
    venv got the refusal from pytest and a pass from ``compatkit verify``)."""
    venv = venv_bin.parent
    proj = project(venv_bin, "foreign", ["demo-fix"])
    proj.demo_fix(True)
    table = (proj.root / "pyproject.toml").read_text()
    monkeypatch.delenv("COMPATKIT_SAFE_ENVIRONMENTS", raising=False)  # Project.run passes it
    os.chown(venv, 12345, 12345)
    try:
        run = proj.pytest()
        assert run.returncode == 4, run.stdout + run.stderr
        assert f"refusing the environment {venv}: {venv} is owned by uid 12345" in run.stderr
        (proj.root / "pyproject.toml").write_text(f'{table}safe-environments = ["{venv}"]\n')
        assert proj.run("compatkit", "verify").returncode == 0
        run = proj.pytest()
        assert run.returncode == 0, run.stdout + run.stderr
        assert "compatkit: verified demo-fix" in run.stdout, run.stdout
    finally:
        os.chown(venv, 0, 0)
