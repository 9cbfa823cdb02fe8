"""Issue 46, the newcomer's items 11 to 16: each command run as a user types it, against a real
venv with the demo wheel installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import TOML, UV, Demo, backports, needs_uv, run_cli, write_patchset

SRC = Path(__file__).resolve().parents[2] / "src"


def _constrained(base: Path) -> None:
    """demo-next: for demo 2.0, pinning demo==2.0 (so demo 1.0 breaks its constraint)."""
    root = write_patchset(base, name="demo-next", specifier="==2.0")
    toml = root / "patchset.toml"
    toml.write_text(toml.read_text() + '\n[[constraints]]\npin = "demo==2.0"\nrationale = "x"\n')


def test_status_gives_a_patchset_that_does_not_apply_one_line(demo: Demo) -> None:
    """Item 11: no second line for its unmet constraint."""
    _constrained(demo.patchsets)
    code, out, err = demo.run("status")
    assert code == 0, err
    lines = [line for line in out.splitlines() if "demo-next" in line]
    assert len(lines) == 1 and "not applicable" in lines[0], out
    code, out, err = demo.run("status", "demo-next")  # named: its table, and the constraint
    assert code == 0 and "constraint demo==2.0 unmet: found demo 1.0" in out, out


# 12: "not installed" names the interpreter and --python; smoke and prove see the missing
# --python before the missing pytest; matrix run says how to get the cell's environment


def test_not_installed_names_the_interpreter_and_python_option(
    demo: Demo, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run without --python: the target is compatkit's own environment, without demo."""
    # no venv active (nox and CI's .venv set one): the hint is then the generic one
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    ps = ["--patchset-dir", str(demo.patchsets)]
    for command in (
        ["exec", "demo-fix", "--", "true"],
        ["runtime", "install", "demo-fix", "--dir", str(tmp_path / "rt")],
        ["verify", "demo-fix"],
    ):
        code, out, err = run_cli(capsys, *ps, *command)
        assert code == 1, (command, out, err)
        assert f"the environment of {sys.executable}" in err, (command, err)
        assert "add --python PATH" in err, (command, err)
    assert not (tmp_path / "rt").exists()


def _bare_compatkit(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A venv with nothing installed whose python runs this checkout's compatkit (its
    dependencies linked onto PYTHONPATH, pytest not among them): (python, environment)."""
    import merge3
    import packaging
    import rich
    import shtab

    deps = tmp_path / "deps"
    deps.mkdir()
    for module in (packaging, rich, shtab, merge3):
        source = Path(str(module.__file__))
        source = source.parent if source.name == "__init__.py" else source
        (deps / source.name).symlink_to(source)
    backports(deps)
    venv = [UV or "uv", "venv", "-q", "-p", sys.executable, str(tmp_path / "v")]
    subprocess.run(venv, check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), str(deps)])
    return tmp_path / "v" / "bin" / "python", env


@needs_uv
def test_smoke_and_prove_without_python_say_so_not_install_pytest(
    demo: Demo, tmp_path: Path
) -> None:
    python, env = _bare_compatkit(tmp_path)
    for command in ("smoke", "prove"):
        args = [str(python), "-m", "compatkit", "--patchset-dir", str(demo.patchsets), command]
        proc = subprocess.run([*args, "demo-fix"], capture_output=True, text=True, env=env)
        err = proc.stderr
        assert proc.returncode == 1 and err.count("\n") == 1, (command, proc.stdout, err)
        assert "demo is not installed in the environment of" in err, (command, err)
        assert "add --python PATH" in err and "install pytest" not in err, (command, err)


def test_matrix_run_outside_the_cells_environment_says_how_to_get_it(
    demo: Demo, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "matrix", "run", "c1")
    assert code == 2 and "no such matrix file" in err and "--matrix FILE" in err, err
    matrix = tmp_path / "m.toml"
    matrix.write_text(
        '[[cell]]\nid = "c1"\npython = "3.11"\npackages = ["demo==2.0"]\nmode = "apply"\n'
        'patchsets = ["demo-fix"]\n[cell.expect.demo-fix]\ndefault = "applied/pass"\n'
    )
    args = ["--python", demo.venv.python, "--patchset-dir", str(demo.patchsets)]
    code, out, err = run_cli(capsys, *args, "matrix", "run", "c1", "--matrix", str(matrix))
    assert code == 1, (out, err)
    first = err.splitlines()[0]
    assert "differs from matrix.toml; this environment is not the cell's" in first, err
    assert "needs demo==2.0, found demo 1.0" in first and "--python" in first, err


# 13: short plain descriptions find the patches about them; README's generic example lists
# the closest ones


@pytest.mark.parametrize(
    ("text", "wanted", "sure"),
    [
        ("No module named 'vllm'", None, False),
        ("prefix caching", "vllm033-hidden-states:patch-14", True),
        ("more than 32 prompts", "speculators040-vllm016:patch-12", True),
    ],
)
def test_explain_a_plain_description(
    text: str, wanted: str | None, sure: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "--json", "explain", text)
    doc = json.loads(out)
    listed = [f"{c['patchset']}:{c['id']}" for c in doc.get("candidates", [])]
    assert listed, (text, out, err)
    assert code == (0 if sure else 1), (text, out, err)
    assert wanted is None or wanted in listed, (text, listed)


def test_status_names_the_runtime_hook_that_serves_a_patchset(demo: Demo, tmp_path: Path) -> None:
    """Item 14: not applied on disk, but served to every process by a ``--pth`` hook."""
    root = tmp_path / "rt"
    code, out, err = demo.run("runtime", "install", "demo-fix", "--dir", str(root), "--pth")
    assert code == 0, err
    proc = subprocess.run(
        [demo.venv.python, "-c", "import demo.greet; print(demo.greet.hello('x'))"],
        capture_output=True,
        text=True,
    )
    assert proc.stdout == "hi x\n", proc.stderr  # served indeed
    code, out, err = demo.run("status", "demo-fix")
    words = " ".join(out.split())  # the table's title may wrap
    assert code == 0 and "not applied on disk; served to every process by the runtime" in words
    assert f"runtime hook in {os.path.realpath(root)}" in words, out
    code, out, err = demo.run("--json", "status", "demo-fix")
    assert json.loads(out)["patchsets"][0]["runtime"] == os.path.realpath(root)
    assert demo.run("runtime", "uninstall", "--dir", str(root))[0] == 0
    code, out, err = demo.run("status", "demo-fix")
    assert code == 0 and "runtime hook" not in out, out


def test_exec_python_runs_the_target_interpreter(demo: Demo) -> None:
    """Item 15: ``exec --python X -- python ...`` runs X's python, as an activated venv would,
    even where another python comes first on PATH (here: the test runner's)."""
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    code = "import sys, os, demo.greet; print(sys.prefix, demo.greet.hello('x'))"
    proc = subprocess.run(
        [*demo.command("exec", "demo-fix", "--", "python", "-c", code)],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": path},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{demo.venv.root} hi x\n", proc.stdout


# 16: small things


def test_one_patch_is_one_patch(demo: Demo) -> None:
    code, out, _ = demo.run("apply", "demo-fix", "--exclude", "patch-2", "--dry-run")
    assert code == 0 and "would apply 1 patch:" in out and "1 patches" not in out, out
    code, out, _ = demo.run("apply", "demo-fix", "--exclude", "patch-2")
    assert code == 0 and "applied 1 patch to demo 1.0" in out, out


def test_a_version_range_prints_one_way_everywhere(demo: Demo) -> None:
    written = ">=0.33,<0.34"  # one way, in patchset.toml
    write_patchset(demo.patchsets, name="absent-fix", specifier=written, distribution="absent")
    outputs = [demo.run("list")[1], demo.run("status")[1], demo.run("apply", "absent-fix")[2]]
    outputs.append(demo.run("exec", "absent-fix", "--", "true")[2])
    for text in outputs:
        words = " ".join(text.split())
        assert "absent<0.34,>=0.33" in words and ">=0.33,<0.34" not in words, text


def test_runtime_uninstall_leaves_no_empty_pycache(demo: Demo, tmp_path: Path) -> None:
    cache = demo.venv.site / "__pycache__"
    assert not cache.exists()
    root = tmp_path / "rt"
    assert demo.run("runtime", "install", "demo-fix", "--dir", str(root), "--pth")[0] == 0
    subprocess.run([demo.venv.python, "-c", "import demo.greet"], check=True)
    code, _out, err = demo.run("runtime", "uninstall", "--dir", str(root))
    assert code == 0, err
    assert not cache.exists(), list(cache.iterdir())


@pytest.mark.slow
def test_the_bundled_smoke_conftest_leaves_nothing_in_the_temp_folder(tmp_path: Path) -> None:
    """speculators-vllm016's smoke conftest (which its two siblings share) gives remote-code
    tokenizers a folder of the run's own, removed when the run ends."""
    smoke = tmp_path / "smoke"
    smoke.mkdir()
    conftest = SRC.parent / "patchsets" / "speculators-vllm016" / "smoke" / "conftest.py"
    shutil.copy(conftest, smoke / "conftest.py")
    (smoke / "test_x.py").write_text(
        "import os\n\ndef test_x():\n    assert os.path.isdir(os.environ['HF_MODULES_CACHE'])\n"
    )
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "HF_MODULES_CACHE"}
    env["TMPDIR"] = str(temp)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    proc = subprocess.run([*cmd, str(smoke)], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert list(temp.iterdir()) == []


def test_the_tests_session_has_nox_for_the_demos_own_test() -> None:
    """tests/cli/test_newuser.py runs noxfile.py's demo session; ``nox -s tests`` installs
    ``.[test]``, which must hold nox, or that test cannot run there."""
    from importlib import import_module

    from packaging.requirements import Requirement

    project = import_module(TOML).loads((SRC.parent / "pyproject.toml").read_text())["project"]
    extra = [Requirement(r).name for r in project["optional-dependencies"]["test"]]
    assert "nox" in extra, extra
