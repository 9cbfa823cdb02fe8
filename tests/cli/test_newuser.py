"""A new user's first hour (issue 29): install and set-up lines that work on a PEP 668 Python,
tables that never split a name, explain's one story per id and its "no match", apply after
--exclude, the environment compatkit reads, hints, help texts, the JSON envelope, the demo."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest

from compatkit.cli.output import Output, plain_table
from compatkit.env.target import Environment
from helpers import UV, Demo, run_cli

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
GETTING_STARTED = (ROOT / "docs" / "getting-started.md").read_text()
EXIT_CODES = (ROOT / "docs" / "reference" / "exit-codes.md").read_text()
SYSTEM_PYTHON = Path("/usr/bin/python3")
NAMES = ["speculators-vllm016", "speculators040-vllm016", "patch-10", "1.0.2", "0.16.0"]


def _section(title: str, text: str = README) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", text, re.S | re.M)
    assert match, f"README lacks ## {title}"
    return match.group(1)


def _setup_commands(text: str = README, title: str = "Set-up: the two commands") -> list[str]:
    """README's two set-up commands (demo, tests); docs/getting-started.md repeats them."""
    found = re.findall(r"```sh\n\s*(.*?)\n\s*```", _section(title, text))
    assert len(found) == 2, found
    return found


# 1, 2, 15: install from source, set-up on a PEP 668 Python, CI runs README's line


def test_readme_installs_from_source_not_from_the_index() -> None:
    for text in (README, GETTING_STARTED):
        install = _section("Install", text)
        assert "not on the package index" in install and "uv tool install ." in install
    docs = [p.read_text() for p in (ROOT / "docs").rglob("*.md")]
    blocks = "\n".join(re.findall(r"```\w*\n(.*?)```", "\n".join([README, *docs]), re.S))
    blocks = blocks.replace("\\\n", " ")  # continued lines (a Dockerfile's RUN)
    installs = re.findall(r"(?:pip|uv tool|pipx) install((?:[ \t]+[^\s&|;#]+)*)", blocks)
    named = [a for args in installs for a in args.split() if re.match(r"'?compatkit\b", a)]
    assert installs and named == [], named


def test_ci_runs_readme_test_command_and_nothing_installs_into_the_system_python() -> None:
    demo, tests = _setup_commands()
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == tests
    assert _setup_commands(GETTING_STARTED, "The demo, and the tests") == [demo, tests]
    sessions = tests.split("nox -s ", 1)[1].split()
    assert sessions[0] == "tests" and "lint" in sessions and "proof" in sessions, sessions
    for command in (demo, tests):
        assert command.startswith("python3 -m venv .venv && . .venv/bin/activate && ")
        assert "python3 -m pip" not in command and "--break-system-packages" not in command
    assert "10 GB" in _section("Set-up: the two commands")


def test_the_tested_pythons_are_the_same_everywhere() -> None:
    """pyproject.toml's classifiers name exactly the Pythons noxfile.py tests (PYTHON runs
    everything, OTHER_PYTHONS the fast subset), README says so, CI runs both sessions, and the
    runtime hook knows each of them (compatkit.runtime.hook.KNOWN)."""
    from compatkit.runtime.hook import KNOWN

    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    prefix = "Programming Language :: Python :: "
    classified = [c[len(prefix) :] for c in meta["classifiers"] if c.startswith(prefix)]
    versions = [v for v in classified if re.fullmatch(r"3\.\d+", v)]
    nox_text = (ROOT / "noxfile.py").read_text()
    main = re.search(r'^PYTHON = "(3\.\d+)"$', nox_text, re.M)
    others = re.search(r"^OTHER_PYTHONS = \(([^)]*)\)$", nox_text, re.M)
    assert main and others, "noxfile.py: PYTHON or OTHER_PYTHONS not found"
    tested = sorted([main[1], *re.findall(r'"(3\.\d+)"', others[1])], key=lambda v: int(v[2:]))
    assert versions == tested, (versions, tested)
    assert meta["requires-python"] == f">={tested[0]}"
    assert all(KNOWN[0] <= (3, int(v[2:])) <= KNOWN[1] for v in tested)
    _, tests = _setup_commands()
    assert "tests" in tests.split() and "tests_versions" in tests.split()
    pythons = _section("Install", GETTING_STARTED).split("**Pythons.**", 1)[1].split("\n\n")[0]
    assert ", ".join(tested[:-1]) + f" and {tested[-1]}" in " ".join(pythons.split())


def _pep668() -> bool:
    if not SYSTEM_PYTHON.exists():
        return False
    code = "import sysconfig; print(sysconfig.get_path('stdlib'))"
    stdlib = subprocess.run([SYSTEM_PYTHON, "-c", code], capture_output=True, text=True)
    marker = Path(stdlib.stdout.strip(), "EXTERNALLY-MANAGED")
    venv = subprocess.run([SYSTEM_PYTHON, "-c", "import ensurepip"], capture_output=True)
    return marker.is_file() and venv.returncode == 0


@pytest.mark.skipif(not _pep668(), reason="needs a PEP 668 /usr/bin/python3 with venv")
def test_readme_setup_lines_install_on_a_pep668_python(tmp_path: Path) -> None:
    """The set-up line up to nox itself, with Debian's python3 first on PATH (the sessions are
    the 40-minute part): the old `python3 -m pip install nox uv` is refused there."""
    demo, _ = _setup_commands()
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = f"{SYSTEM_PYTHON.parent}:/bin"
    old = subprocess.run(
        ["python3", "-m", "pip", "install", "-q", "nox"], cwd=tmp_path, env=env, text=True,
        capture_output=True,
    )  # fmt: skip
    assert old.returncode != 0 and "externally-managed-environment" in old.stderr + old.stdout
    install, _, session = demo.rpartition(" && ")
    assert session == "nox -s demo"
    script = f"set -euo pipefail\n{install} && nox --version && command -v uv && nox --list"
    (tmp_path / "noxfile.py").write_text((ROOT / "noxfile.py").read_text())
    shutil.copy(ROOT / "matrix.toml", tmp_path)
    (tmp_path / "bench").mkdir()
    shutil.copy(ROOT / "bench" / "stacks.py", tmp_path / "bench")  # the noxfile loads it
    run = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, text=True,
                         capture_output=True, timeout=600)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert str(tmp_path / ".venv" / "bin" / "uv") in run.stdout and "demo" in run.stdout


def test_completion_install_lines_make_their_folder(demo: Demo, tmp_path: Path) -> None:
    match = re.search(r"<!-- workflow: completion -->\n```sh\n(.*?)```", GETTING_STARTED, re.S)
    assert match
    home = tmp_path / "home"
    home.mkdir()
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "compatkit").write_text(f'#!/bin/sh\nexec {sys.executable} -m compatkit "$@"\n')
    (shim / "compatkit").chmod(0o755)
    env = {**os.environ, "HOME": str(home), "PATH": f"{shim}:{os.environ['PATH']}"}
    run = subprocess.run(["bash", "-ec", match.group(1)], env=env, text=True, capture_output=True)
    assert run.returncode == 0, run.stderr
    bash = home / ".local/share/bash-completion/completions/compatkit"
    assert "_compatkit_patchsets" in bash.read_text()
    assert "#compdef compatkit" in (home / ".zfunc" / "_compatkit").read_text()


def test_pre_commit_snippets_pin_no_missing_tag() -> None:
    tags = subprocess.run(["git", "tag"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    for path in (ROOT / "docs" / "authoring.md", ROOT / ".pre-commit-hooks.yaml"):
        for rev in re.findall(r"rev:\s*(\S+)", path.read_text()):
            assert rev in tags or rev == "COMMIT", f"{path.name} pins {rev}, not a tag here"
    snippet = re.search(
        r"<!-- pre-commit -->\n```yaml\n(.*?)```", (ROOT / "docs/authoring.md").read_text(), re.S
    )
    assert (
        snippet
        and "repo: local" in snippet.group(1)
        and "entry: compatkit lint" in snippet.group(1)
    )


# 3: tables


def _rows() -> list[list[str]]:
    """The shape of `compatkit list`: names, versions, requirements, a free-text state."""
    return [
        [name, "1.1.0", "speculators==0.4.0", "vllm<0.17,>=0.16, transformers<5,>=4.56", "6",
         "not applicable (speculators is not installed)"]
        for name in ("speculators040-vllm016", "speculators-vllm016")
    ]  # fmt: skip


COLUMNS = ["name", "version", "target", "requires", "patches", "here"]


@pytest.mark.parametrize("width", [100, 80, 60, 40])
def test_plain_tables_never_split_a_name(width: int) -> None:
    text = plain_table("t", COLUMNS, _rows(), width=width)
    words = text.split()
    for name in ("speculators040-vllm016", "speculators-vllm016", "speculators==0.4.0", "1.1.0"):
        assert name in words, text
    if width >= 100:  # the names fit: the free text wraps instead
        assert max(len(line) for line in text.splitlines()) <= width, text


def test_piped_list_keeps_every_patchset_name_whole() -> None:
    for columns in ("", "60"):
        env = {**os.environ, "COLUMNS": columns}
        proc = subprocess.run([sys.executable, "-m", "compatkit", "list"], env=env,
                              capture_output=True, text=True)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        words = proc.stdout.split()
        for name in ("speculators-vllm016", "speculators-vllm017", "speculators040-vllm016"):
            assert name in words, proc.stdout


@pytest.mark.parametrize("width", [80, 60])
def test_terminal_tables_never_split_a_name(width: int) -> None:
    from rich.console import Console

    from compatkit.cli.commands.listing import list_patchsets
    from compatkit.load.registry import Registry
    from compatkit.ops.status import listing

    out = Output()
    buffer = StringIO()
    out.rich = True
    out._console = Console(file=buffer, width=width, color_system=None, highlight=False)
    list_patchsets(listing(Registry([]), Environment.current()), out)
    words = re.split(r"[\s│┃|]+", buffer.getvalue())
    whole = ("speculators-vllm016", "speculators040-vllm016", "transformers<5,>=4.56")
    for name in (*whole, "applicable"):  # nothing split, nothing cut off at the right
        assert name in words, buffer.getvalue()


# 4, 5, 6: explain


def test_explain_an_id_in_two_patchsets_tells_one_story(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "explain", "patch-6")
    assert code == 0 and out.count("Symptom:") == 1, out
    first = out.splitlines()[0]
    assert "speculators-vllm016" in first and "speculators-vllm017" in first, first
    code, out, _ = run_cli(capsys, "--json", "explain", "patch-6")
    (match,) = json.loads(out)["matches"]
    assert set(match["patchsets"]) == {"speculators-vllm016", "speculators-vllm017"}


def test_the_story_told_is_the_one_that_fits_here(demo: Demo) -> None:
    from helpers import write_patchset

    write_patchset(demo.patchsets, name="a-demo2", specifier="==2.0")  # sorts first, misfits
    code, out, _ = demo.run("explain", "patch-1")
    assert code == 0 and out.count("Symptom:") == 1
    first, second = out.splitlines()[:2]
    assert first.startswith("patch-1 is in a-demo2 1.0.0, demo-fix 1.0.0, ") and (
        "shown: demo-fix's (the others: explain a-demo2:patch-1, " in first
    ), first
    assert second == "patch-1: Greet politely"


@pytest.mark.parametrize(
    "text",
    ["ModuleNotFoundError: No module named 'vllm'", "ImportError: cannot import name 'x' from 'y'"],
)
def test_a_generic_error_matches_no_patch(capsys: pytest.CaptureFixture[str], text: str) -> None:
    code, out, err = run_cli(capsys, "explain", text)
    assert code == 1 and "Symptom:" not in out and err.count("\n") == 1, (out, err)
    assert "no patch matches this error text" in err and "the closest" in out
    code, out, _ = run_cli(capsys, "--json", "explain", text)
    doc = json.loads(out)
    assert code == 1 and doc["ok"] is False and doc["matches"] == [] and doc["candidates"]


def test_explain_dash_reads_standard_input() -> None:
    traceback = (ROOT / "tests" / "explain_corpus" / "patch-6-ambiguous-tensor.txt").read_text()
    cmd = [sys.executable, "-m", "compatkit", "--json", "explain", "-"]
    proc = subprocess.run(cmd, input=traceback, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert [m["id"] for m in json.loads(proc.stdout)["matches"]] == ["patch-6"]
    empty = subprocess.run(cmd[:3] + cmd[4:], input="", capture_output=True, text=True)
    assert empty.returncode == 2 and "nothing on standard input" in empty.stderr


# 7, 11: apply


def test_apply_after_an_exclusion_says_what_changed(demo: Demo) -> None:
    assert demo.run("apply", "demo-fix", "--exclude", "patch-2")[0] == 0
    code, out, _ = demo.run("apply", "demo-fix")
    assert code == 0 and "edited since" not in out, out
    assert "which excluded patch-2" in out, out


def test_a_patchset_that_does_not_fit_is_one_line_naming_force(demo: Demo) -> None:
    (demo.patchsets / "demo-fix" / "patchset.toml").write_text(
        (demo.patchsets / "demo-fix" / "patchset.toml")
        .read_text()
        .replace("requires = []", 'requires = ["otherdist==1.0", "thirddist>2"]')
    )
    code, _, err = demo.run("apply", "demo-fix")
    assert code == 1 and err.count("\n") == 1 and "--force" in err, err
    assert "otherdist==1.0" in err and "thirddist>2" in err


# 8, 9: which environment


def test_a_tool_installed_compatkit_targets_the_active_venv(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = tmp_path / "tool-env"
    tool.mkdir()
    monkeypatch.setattr(sys, "prefix", str(tool))
    monkeypatch.setenv("VIRTUAL_ENV", str(demo.venv.root))
    assert Environment.for_python(None).find("demo") is None  # no receipt: our own
    (tool / "uv-receipt.toml").write_text("[tool]\n")
    env = Environment.for_python(None)
    assert Path(env.executable).parent.parent == demo.venv.root
    assert env.find("demo") is not None
    assert Environment.for_python(sys.executable).executable != env.executable  # --python wins


def test_not_installed_names_the_interpreter_and_the_active_venv(
    demo: Demo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VIRTUAL_ENV", str(demo.venv.root))
    from compatkit.env.venvs import active_venv

    assert active_venv() is None  # the test runner is no tool environment
    code, _, err = run_cli(capsys, "pristine", "demo")
    assert code == 1 and err.count("\n") == 1, err
    assert sys.executable in err and f"add --python {demo.venv.root}" in err


def test_the_user_site_is_searched(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import site

    user = demo.venv.site  # stands in for ~/.local/lib/pythonX.Y/site-packages
    monkeypatch.setattr(site, "ENABLE_USER_SITE", True)
    monkeypatch.setattr(site, "getusersitepackages", lambda: str(user))
    env = Environment.current()
    assert env.paths[0] == str(user) and env.find("demo") is not None


@pytest.mark.skipif(not SYSTEM_PYTHON.exists() or UV is None, reason="needs /usr/bin/python3, uv")
def test_a_system_python_reads_its_user_site_and_dist_packages(
    demo: Demo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    base = tmp_path / "userbase"
    code = "import site; print(site.getusersitepackages())"
    monkeypatch.setenv("PYTHONUSERBASE", str(base))
    user = subprocess.run([SYSTEM_PYTHON, "-c", code], capture_output=True, text=True).stdout
    subprocess.run([UV or "uv", "pip", "install", "-q", "--no-deps", "--target", user.strip(),
                    str(demo.wheel)], check=True)  # fmt: skip  # as pip install --user would
    env = Environment.for_python(str(SYSTEM_PYTHON))
    assert user.strip() in env.paths
    assert run_cli(capsys, "--python", str(SYSTEM_PYTHON), "pristine", "demo")[0] == 0
    debian = Path("/usr/lib/python3/dist-packages")
    infos = sorted(debian.glob("*.dist-info")) if debian.is_dir() else []
    if infos:  # a Debian Python: its own packages live in dist-packages
        assert str(debian) in env.paths
        name = infos[0].name.split("-")[0]
        assert env.find(name) is not None, name


# 10: the pytest hint


@pytest.mark.skipif(UV is None, reason="needs uv")
def test_pytest_hint_in_a_uv_venv_uses_uv(demo: Demo) -> None:
    code, _, err = demo.run("smoke", "demo-fix")
    assert code == 1 and f"uv pip install --python {demo.venv.python} pytest" in err, err


# 11: one JSON envelope


@pytest.mark.parametrize(
    ("argv", "command", "ok"),
    [
        (["list"], "list", True),
        (["status", "demo-fix"], "status", True),
        (["explain", "patch-1"], "explain", True),
        (["verify", "demo-fix"], "verify", False),
        (["pristine", "demo"], "pristine", True),
        (["apply", "demo-fix", "--dry-run"], "apply", True),
        (["apply", "no-such"], "apply", False),
        (["completion", "bash"], "completion", True),
    ],
)
def test_every_command_has_the_envelope(
    demo: Demo, argv: list[str], command: str, ok: bool
) -> None:
    code, out, _ = demo.run("--json", *argv)
    doc = json.loads(out)
    assert list(doc)[:2] == ["ok", "command"] and doc["command"] == command
    assert doc["ok"] is ok and (code == 0) is ok


@pytest.mark.parametrize(
    ("argv", "command"), [([], None), (["statu"], None), (["status", "--jsn"], "status")]
)
def test_usage_errors_with_json_are_the_envelope(argv: list[str], command: str | None) -> None:
    proc = subprocess.run([sys.executable, "-m", "compatkit", "--json", *argv],
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.startswith("compatkit: error: ")
    doc = json.loads(proc.stdout)
    assert doc["ok"] is False and doc["command"] == command and doc["error"]


def test_completion_with_json_holds_the_script(demo: Demo) -> None:
    code, out, _ = demo.run("--json", "completion", "bash")
    assert code == 0 and "_compatkit_patchsets" in json.loads(out)["script"]


# 12: hints and exit codes


def test_a_mistyped_patchset_gets_did_you_mean(demo: Demo) -> None:
    code, _, err = demo.run("status", "demo-fx")
    assert code == 2 and "did you mean 'demo-fix'?" in err and err.count("\n") == 1


def test_a_mistyped_option_points_at_the_command_help() -> None:
    proc = subprocess.run([sys.executable, "-m", "compatkit", "status", "--jsn"],
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 2 and "(see 'compatkit status --help')" in proc.stderr


def test_a_missing_distribution_is_exit_1_everywhere(demo: Demo) -> None:
    write = demo.patchsets / "other"
    shutil.copytree(demo.patchsets / "demo-fix", write)
    toml = write / "patchset.toml"
    toml.write_text(toml.read_text().replace('"demo"', '"absent"').replace('"demo-fix"', '"other"'))
    pristine, apply = demo.run("pristine", "absent"), demo.run("apply", "other")
    assert (pristine[0], apply[0]) == (1, 1)
    for _, _, err in (pristine, apply):  # each names the environment it looked in
        assert f"not installed in the environment of {demo.venv.python}" in err, err
    assert "| 1 | expected failure" in EXIT_CODES and "not installed in the target" in EXIT_CODES


# 13: help texts


@pytest.mark.parametrize(
    ("command", "wanted"),
    [
        ("upstream", "the release to check"),
        ("sbom", "CycloneDX 1.6 JSON"),
        ("status", "the patchsets to show"),
        ("fleet status", "(default: 600)"),  # a sub-verb's own help (issue 47)
        ("exec", "-- COMMAND [ARG ...]"),
    ],
)
def test_help_texts(command: str, wanted: str) -> None:
    env = {**os.environ, "COLUMNS": "200"}
    cmd = [sys.executable, "-m", "compatkit", *command.split(), "--help"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert proc.returncode == 0 and wanted in " ".join(proc.stdout.split()), proc.stdout


# 14: the demo session


class _Recorder:
    """A stand-in nox session: records what the demo would run and log (the real session
    needs the 10 GB stack: its output was measured by hand, see the report)."""

    def __init__(self, site: Path) -> None:
        self.runs: list[tuple[tuple[str, ...], dict[str, object]]] = []
        self.logs: list[str] = []
        self.site = site

    def install(self, *args: str, **kw: object) -> None:
        self.runs.append((("install", *args), kw))

    def run(self, *args: str, **kw: object) -> str:
        self.runs.append((args, kw))
        return f"{self.site}\n" if "-c" in args else ""

    def log(self, text: str) -> None:
        self.logs.append(text)

    def error(self, text: str) -> None:
        raise AssertionError(text)


def test_the_demo_shows_each_step_once_and_hides_the_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run wherever the tests run: nox is a test dependency (pyproject.toml), never skipped."""
    sys.path.insert(0, str(ROOT))
    try:
        import noxfile
    finally:
        sys.path.remove(str(ROOT))
    site = tmp_path / "site"
    (site / "speculators-0.3.0.dist-info").mkdir(parents=True)
    (site / "speculators-0.3.0.dist-info" / "RECORD").write_text("")
    monkeypatch.setattr(noxfile, "ROOT", tmp_path)
    session = _Recorder(site)
    noxfile.demo(session)
    steps = [args for args, kw in session.runs if args[:1] == ("compatkit",)]
    assert len(steps) == 6 and all(
        kw.get("log") is False for args, kw in session.runs if args[:1] == ("compatkit",)
    )
    smoke = next(kw for args, kw in session.runs if args[1:2] == ("smoke",))
    assert smoke["env"] == {"PYTHONWARNINGS": "ignore::UserWarning"}  # speculators' warning
    shown = [line for line in session.logs if line.startswith("$ compatkit ")]
    assert [line.split()[2] for line in shown] == [s[1] for s in steps]  # each step once
    uv_install = next(kw for args, kw in session.runs if args[:3] == ("uv", "pip", "install"))
    assert uv_install["silent"] is True and uv_install["log"] is False  # no `+ pkg` lines
    probe = next(kw for args, kw in session.runs if "-c" in args)
    assert probe["log"] is False and probe["silent"] is True
