"""[tool.compatkit]: apply/verify with no name, the pytest plugin, workflows, completion."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compatkit.errors import PatchFormatError, UsageError
from compatkit.load.config import find_config
from helpers import DEMO_FILES, UV, Demo, build_wheel, write_patchset
from helpers.wheelkit import local_index

ROOT = Path(__file__).resolve().parents[2]
needs_uv = pytest.mark.skipif(UV is None, reason="needs uv")


def _pyproject(
    folder: Path,
    patchsets: list[str],
    policy: str = "strict",
    dirs: tuple[str, ...] = ("patchsets",),
    extra: str = "",
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    names = ", ".join(f'"{n}"' for n in patchsets)
    dirs_toml = ", ".join(f'"{d}"' for d in dirs)
    (folder / "pyproject.toml").write_text(
        f"{extra}[tool.compatkit]\npatchsets = [{names}]\npatchset-dirs = [{dirs_toml}]\n"
        f'on-mismatch = "{policy}"\n'
    )
    return folder / "pyproject.toml"


def test_config_is_found_walking_up(tmp_path: Path) -> None:
    _pyproject(tmp_path, ["a"])
    deep = tmp_path / "x" / "y"
    deep.mkdir(parents=True)
    config = find_config(deep)
    assert config is not None and config.patchsets == ("a",)
    assert config.patchset_dirs == (tmp_path / "patchsets",)
    with pytest.raises(UsageError):
        find_config(deep, tmp_path / "missing.toml")
    (tmp_path / "pyproject.toml").write_text('[tool.compatkit]\non-mismatch = "maybe"\n')
    with pytest.raises(PatchFormatError, match="strict or warn"):
        find_config(deep)


@pytest.fixture
def project(demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "proj"
    write_patchset(root / "patchsets")
    write_patchset(root / "patchsets", name="for-vllm", requires=["vllm>=0.16"])
    write_patchset(root / "patchsets", name="stale", specifier="==2.0")
    monkeypatch.chdir(root)
    return root


def test_apply_with_no_name_applies_what_fits(demo: Demo, project: Path) -> None:
    _pyproject(project, ["demo-fix", "for-vllm"])
    code, out, err = demo.run("apply")
    assert code == 0, err
    assert "skipped for-vllm: needs vllm>=0.16, which is not installed" in out
    assert demo.run("verify")[0] == 0
    (demo.venv.site / "demo/greet.py").write_text("lost\n")
    code, _, err = demo.run("verify")
    assert code == 1 and "demo-fix" in err


def test_apply_dry_run_with_no_name_writes_nothing(demo: Demo, project: Path) -> None:
    """Before: the project form ignored --dry-run (and --force) and applied for real."""
    _pyproject(project, ["demo-fix"])
    before = demo.venv.snapshot()
    code, out, err = demo.run("apply", "--dry-run")
    assert code == 0 and "would" in out, (out, err)
    assert demo.venv.snapshot() == before
    code, _, err = demo.run("apply", "--exclude", "patch-1")
    assert code == 2 and "--exclude needs a patchset name" in err
    assert demo.venv.snapshot() == before


def test_strict_refuses_a_stale_patchset_and_warn_skips_it(demo: Demo, project: Path) -> None:
    _pyproject(project, ["demo-fix", "stale"])
    before = demo.venv.snapshot()
    code, _, err = demo.run("apply")
    assert code == 1 and "stale: needs demo==2.0, found demo 1.0" in err
    assert demo.venv.snapshot() == before, "nothing is applied when the config is stale"
    _pyproject(project, ["demo-fix", "stale"], policy="warn")
    code, out, _ = demo.run("apply")
    assert code == 0 and "warning: stale: needs demo==2.0" in out


def test_apply_with_no_name_and_no_config(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = demo.run("apply")
    assert code == 2 and "needs a patchset name, or a [tool.compatkit] table" in err


def _sh(
    cmd: list[str], cwd: Path, env_extra: dict[str, str] | None = None, **kw: object
) -> subprocess.CompletedProcess[str]:
    # nox's uv backend exports UV_PROJECT_ENVIRONMENT (its own venv): a user's shell has none
    drop = ("VIRTUAL_ENV", "PYTHONPATH", "UV_PROJECT_ENVIRONMENT", "CONDA_PREFIX")
    env = {k: v for k, v in os.environ.items() if k not in drop} | (env_extra or {})
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, **kw)  # type: ignore[call-overload,no-any-return]


SAMPLE_TEST = (
    "import demo.greet\n\ndef test_polite():\n    assert demo.greet.hello('x') == 'hi x'\n"
)


def _sample_project(tmp_path: Path) -> Path:
    root = tmp_path / "sample"
    wheels = root / "wheels"
    wheels.mkdir(parents=True)
    build_wheel(wheels, "demo", "1.0", DEMO_FILES)
    write_patchset(root / "patchsets")
    (root / "tests").mkdir()
    (root / "tests" / "test_app.py").write_text(SAMPLE_TEST)
    extra = (
        '[project]\nname = "sample"\nversion = "0"\nrequires-python = ">=3.10"\n'
        'dependencies = ["demo==1.0", "compatkit", "pytest"]\n\n'
        "[tool.uv]\npackage = false\n\n"
        f'[tool.uv.sources]\ndemo = {{ path = "wheels/demo-1.0-py3-none-any.whl" }}\n'
        f'compatkit = {{ path = "{ROOT}", editable = true }}\n\n'
        "[tool.pytest.ini_options]\ncompatkit_verify = true\n\n"
    )
    _pyproject(root, ["demo-fix"], extra=extra)
    return root


@pytest.mark.real
@pytest.mark.slow
@needs_uv
def test_uv_sync_round_trip_with_the_pytest_plugin(tmp_path: Path) -> None:
    root = _sample_project(tmp_path)
    uv = UV or "uv"
    bin_ = root / ".venv" / "bin"
    assert _sh([uv, "sync", "-q", "-p", sys.executable], root).returncode == 0
    assert _sh([str(bin_ / "compatkit"), "apply"], root).returncode == 0
    run = _sh([str(bin_ / "pytest"), "-q", "-p", "no:cacheprovider"], root)
    assert run.returncode == 0, run.stdout + run.stderr
    reinstall = _sh([uv, "sync", "-q", "--reinstall-package", "demo"], root)
    assert reinstall.returncode == 0, reinstall.stderr
    run = _sh([str(bin_ / "pytest"), "-q", "-p", "no:cacheprovider"], root)
    assert run.returncode == 4
    assert "demo-fix is not applied to demo 1.0" in run.stdout + run.stderr
    assert "run 'compatkit apply'" in run.stdout + run.stderr
    assert _sh([str(bin_ / "compatkit"), "apply"], root).returncode == 0
    run = _sh([str(bin_ / "pytest"), "-q", "-p", "no:cacheprovider"], root)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.real
@pytest.mark.slow
def test_fixture_requires_one_patchset(demo: Demo, tmp_path: Path) -> None:
    subprocess.run(
        [
            UV or "uv",
            "pip",
            "install",
            "-q",
            "--python",
            demo.venv.python,
            "pytest",
            "-e",
            str(ROOT),
        ],
        check=True,
    )
    proj = tmp_path / "fx"
    _pyproject(proj, ["demo-fix"], dirs=("patchsets",))  # inside the project (docs/security.md)
    write_patchset(proj / "patchsets")
    (proj / "test_fx.py").write_text(
        "def test_needs(compatkit_patchset):\n    compatkit_patchset('demo-fix')\n"
    )
    bin_ = Path(demo.venv.python).parent
    run = _sh([str(bin_ / "pytest"), "-q", "-p", "no:cacheprovider"], proj)
    assert run.returncode == 1 and "patchset demo-fix is not intact" in run.stdout
    assert demo.run("apply", "demo-fix")[0] == 0
    assert _sh([str(bin_ / "pytest"), "-q", "-p", "no:cacheprovider"], proj).returncode == 0


WORKFLOWS = {  # the pages that hold each tested workflow
    "uv": "howto/project.md", "pip": "howto/project.md", "tool": "howto/project.md",
    "docker": "howto/project.md", "uv-wheel": "howto/wheels.md", "docker-wheel": "howto/wheels.md",
}  # fmt: skip


def _workflow_text(title: str) -> str:
    text = (ROOT / "docs" / WORKFLOWS[title]).read_text()
    match = re.search(rf"<!-- workflow: {title} -->\n```\w*\n(.*?)```", text, re.S)
    assert match, f"docs/{WORKFLOWS[title]} lacks the {title} workflow"
    return match.group(1)


def _doc_block(title: str) -> list[str]:
    """The workflow's commands, comments and blank lines left out."""
    lines = _workflow_text(title).splitlines()
    return [ln for ln in lines if ln.strip() and not ln.startswith("#")]


@pytest.mark.real
@pytest.mark.slow
@needs_uv
@pytest.mark.parametrize("title", ["pip", "tool"])
def test_readme_workflows_run(title: str, tmp_path: Path) -> None:
    root = _sample_project(tmp_path)
    (root / "requirements.txt").write_text(f"{root}/wheels/demo-1.0-py3-none-any.whl\npytest\n")
    script = "\n".join(_doc_block(title))
    # compatkit is not on PyPI: the blocks install it from COMPATKIT_SRC, a clone (this one)
    env_setup = f"set -e\ncd {root}\n{sys.executable} -m venv .venv\n"
    if title == "pip":
        env_setup += ". .venv/bin/activate\n"
    tools = tmp_path / "tools"  # `uv tool install` (the tool block) puts compatkit here
    extra = {
        "COMPATKIT_SRC": str(ROOT),
        "UV_TOOL_DIR": str(tools / "envs"),
        "UV_TOOL_BIN_DIR": str(tools / "bin"),
        "PATH": f"{tools / 'bin'}:{Path(UV or 'uv').parent}:{os.environ['PATH']}",
    }
    run = _sh(["bash", "-c", env_setup + script], root, env_extra=extra)
    assert run.returncode == 0, run.stdout + run.stderr
    if title == "tool":
        assert (tools / "envs" / "compatkit" / "uv-receipt.toml").is_file()
    assert (
        "'hi ' + name"
        in next(root.glob(".venv/lib/python3*/site-packages/demo/greet.py")).read_text()
    )


def test_dockerfile_snippet_uses_the_tested_commands() -> None:
    docker = "\n".join(_doc_block("docker"))
    assert "-r requirements.txt" in docker and "compatkit apply" in docker
    # compatkit is not on PyPI: the image installs the clone the build context holds
    assert "COPY compatkit/ /opt/compatkit/" in docker and "/opt/compatkit \\" in docker
    assert "compatkit verify" in docker


def test_completion_scripts(demo: Demo) -> None:
    code, out, _ = demo.run("completion", "bash")
    assert code == 0 and "_compatkit_patchsets" in out and "--exclude" in out
    bash = shutil.which("bash")
    if bash:
        assert subprocess.run([bash, "-n"], input=out, text=True).returncode == 0
    code, out, _ = demo.run("completion", "zsh")
    assert code == 0 and "#compdef compatkit" in out
    code, out, _ = demo.run("_names", "patchsets")
    assert "demo-fix" in out.split()
    code, out, _ = demo.run("_names", "ids")
    assert {"patch-1", "patch-2", "demo-fix:patch-1"} <= set(out.split())


def _as_demo(lines: list[str]) -> str:
    """A README block for speculators, made to run on the sample project's demo."""
    text = "\n".join(lines)
    return text.replace("speculators-vllm016", "demo-fix").replace("speculators-0.3.0", "demo-1.0")


def _tool_env(root: Path, index: str) -> dict[str, str]:
    """compatkit from this checkout on PATH, as a tool environment would put it, with a local
    index (``wheelkit.local_index``) whose sha256 proves the pristine wheel, as PyPI's would."""
    tool_bin = str(Path(sys.executable).parent)
    return {
        "PATH": f"{tool_bin}:{os.environ['PATH']}",
        "COMPATKIT_WHEEL_DIR": str(root / "wheels"),
        "COMPATKIT_INDEX_URL": index,
        "PIP_NO_INDEX": "1",
        "UV_PYTHON": sys.executable,
    }


@pytest.mark.real
@pytest.mark.slow
@needs_uv
def test_readme_uv_wheel_workflow_locks_the_patched_wheel(tmp_path: Path) -> None:
    root = _sample_project(tmp_path)
    script = "set -e\n" + _as_demo(_doc_block("uv-wheel"))
    with local_index([root / "wheels" / "demo-1.0-py3-none-any.whl"]) as index:
        run = _sh(["bash", "-c", script], root, env_extra=_tool_env(root, index))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "applied (built in)" in run.stdout and "2 passed" in run.stdout
    (whl,) = (root / "wheels").glob("demo-1.0+ck.*.whl")
    lock = (root / "uv.lock").read_text()
    digest = hashlib.sha256(whl.read_bytes()).hexdigest()
    assert f"sha256:{digest}" in lock and whl.name in lock
    site = next(root.glob(".venv/lib/python3*/site-packages"))
    assert "'hi ' + name" in (site / "demo/greet.py").read_text()
    bin_ = root / ".venv" / "bin"
    test = _sh([str(bin_ / "pytest"), "-q", "-p", "no:cacheprovider"], root)
    assert test.returncode == 0, test.stdout + test.stderr  # the plugin verifies demo-fix
    again = _sh([UV or "uv", "sync", "-q", "--reinstall"], root)
    assert again.returncode == 0, again.stderr
    assert "'hi ' + name" in (site / "demo/greet.py").read_text(), "a reinstall keeps it"


def _dockerfile_runs(block: str) -> tuple[str, str]:
    """The shell command the block's RUN lines make, and the wheel build in its comment."""
    build = next(ln for ln in block.splitlines() if "compatkit wheel" in ln)
    joined = re.sub(r"\\\n", " ", block)
    runs = [ln[len("RUN ") :] for ln in joined.splitlines() if ln.startswith("RUN ")]
    return build.split(": ", 1)[1], " && ".join(runs)


@pytest.mark.real
@pytest.mark.slow
@needs_uv
def test_readme_docker_wheel_workflow_runs(tmp_path: Path) -> None:
    block = _workflow_text("docker-wheel")
    build, run_cmd = _dockerfile_runs(_as_demo([block]))
    assert "COPY wheels/ wheels/" in block and "compatkit verify" in run_cmd
    root = _sample_project(tmp_path)
    with local_index([root / "wheels" / "demo-1.0-py3-none-any.whl"]) as index:
        host = _sh(["bash", "-c", build], root, env_extra=_tool_env(root, index))
    assert host.returncode == 0, host.stderr
    app = tmp_path / "app"  # what the COPY lines put in the image
    (app / "wheels").mkdir(parents=True)
    for whl in (root / "wheels").glob("demo-1.0+ck.*.whl"):
        shutil.copy(whl, app / "wheels")
    (app / "requirements.txt").write_text("demo==1.0\n")
    assert "wheels/*.whl /opt/compatkit " in run_cmd
    assert "COPY compatkit/ /opt/compatkit/" in block
    run_cmd = run_cmd.replace("wheels/*.whl /opt/compatkit ", f"wheels/*.whl {ROOT} ")  # the clone
    script = f"set -e\n{sys.executable} -m venv /tmp/ck-img-{os.getpid()}\n"
    script += f". /tmp/ck-img-{os.getpid()}/bin/activate\n{run_cmd}\n"
    run = _sh(["bash", "-c", script], app)
    shutil.rmtree(f"/tmp/ck-img-{os.getpid()}", ignore_errors=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "verified: demo-fix fully applied" in run.stdout
