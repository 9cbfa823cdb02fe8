"""Fuzzing the parser, the engine and ``apply --dry-run`` / ``apply`` with hypothesis.

Every input must end in a clean error (exit 1 or 2, one ``compatkit: error:`` line plus one line
per listed problem, no traceback, no internal error) or a correct apply (``verify`` passes,
the files hold what the engine computes, ``revert`` gives back every byte). A refusal and a
dry run change zero bytes. ``COMPATKIT_FUZZ_EXAMPLES`` inputs per target (default 1,000;
10,000 with ``COMPATKIT_FULL=1``). The files in ``tests/fuzz_corpus/`` (seeds and every crasher
found so far) are replayed on every run.
"""

from __future__ import annotations

import difflib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from compatkit.engine.hunks import SeriesConflict, apply_file, apply_series
from compatkit.env.target import Environment
from compatkit.errors import CompatkitError
from compatkit.load.validate import load_patchset
from compatkit.model.diff import parse_diff
from compatkit.model.patchset import parse_patch
from helpers import DEMO_FILES, UV, Venv, build_wheel, write_patchset
from helpers.fuzzgen import bad_options, corpus_files, patch_bytes, project_toml
from helpers.reliability import AT_END, FULL, FUZZ_EXAMPLES, Result, run_inprocess, snapshot

FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    database=None,
    derandomize=not FULL,  # CI replays the same inputs; full mode draws new ones every run
    suppress_health_check=list(HealthCheck),
)
FUZZ_QUARTER = settings(FUZZ, max_examples=max(FUZZ_EXAMPLES // 4, 1))
COUNTS: dict[str, int] = {}


def _count(name: str) -> None:
    COUNTS[name] = COUNTS.get(name, 0) + 1


def _one_line(message: str) -> None:
    assert "\n" not in message and "\r" not in message, repr(message)


def check_parse(data: bytes) -> None:
    """parse_patch either returns a model or raises PatchFormatError with a one-line message."""
    try:
        patch = parse_patch(Path("fuzz.patch"), data)
    except CompatkitError as exc:
        _one_line(exc.message)
        return
    for fd in patch.files:
        assert fd.kind in ("modify", "create", "delete", "rename", "copy")
        for h in fd.hunks:
            assert all(kind in " +-" and "\n" not in text for kind, text in h.lines)


def check_engine(data: bytes) -> None:
    """The engine on the demo files: a result, or SeriesConflict with a one-line message."""
    try:
        patch = parse_patch(Path("fuzz.patch"), data)
    except CompatkitError:
        return
    files = {path: DEMO_FILES.get(path) for fd in patch.files for path in fd.paths}
    try:
        result = apply_series(files, [(patch.id, patch.files)])
    except SeriesConflict as exc:
        _one_line(exc.message)
        return
    assert set(result.contents) == set(files)


@pytest.mark.slow
@given(patch_bytes())
@FUZZ
def test_fuzz_parser_and_engine(data: bytes) -> None:
    _count("parser+engine")
    check_parse(data)
    check_engine(data)


# --- the engine against difflib: whatever difflib writes, apply gives b and reverse gives a ---

LINES = st.lists(
    st.sampled_from(["a", "b", "c", "", "  x", "y = 1", "\x00", "é", "\udcff"]), max_size=25
)


def _unified(a: list[str], b: list[str], a_eol: bool, b_eol: bool, context: int) -> str:
    """``diff -u`` text, with the ``\\ No newline at end of file`` markers difflib omits."""
    a_keep = [x + "\n" for x in a]
    b_keep = [x + "\n" for x in b]
    if a and not a_eol:
        a_keep[-1] = a[-1]
    if b and not b_eol:
        b_keep[-1] = b[-1]
    out = []
    for line in difflib.unified_diff(a_keep, b_keep, "a/m.py", "b/m.py", n=context):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


@pytest.mark.slow
@given(
    LINES, LINES, st.booleans(), st.booleans(), st.sampled_from(["\n", "\r\n"]), st.integers(0, 3)
)
@FUZZ
def test_fuzz_engine_round_trip(
    a: list[str], b: list[str], a_eol: bool, b_eol: bool, eol: str, context: int
) -> None:
    for lines, final in ((a, a_eol), (b, b_eol)):
        assume(final or not lines or lines[-1] != "")  # b"" is no lines, not one empty line
        # added lines take the file's dominant line ending; without one, "\n"
        assume(eol == "\n" or len(lines) - (not final) > 0)
    _count("engine round trip")
    text = _unified(a, b, a_eol, b_eol, context)
    if not text:
        return
    (fd,) = parse_diff(text, "rt.patch", unidiff_zero=context == 0)  # -U0: as Unidiff-Zero

    def raw(lines: list[str], final: bool) -> bytes:
        body = eol.join(lines) + (eol if lines and final else "")
        return body.encode("utf-8", "surrogateescape")

    old, new = raw(a, a_eol), raw(b, b_eol)
    assert apply_file(old, fd).data == new
    assert apply_file(new, fd.reversed()).data == old


# --- the CLI: apply --dry-run and apply in-process on one real venv, restored after each input ---


class FuzzEnv:
    def __init__(self, venv: Venv, patchsets: Path, outside: Path) -> None:
        self.venv, self.patchsets, self.outside = venv, patchsets, outside
        self.pristine = self.snap()

    def __repr__(self) -> str:  # hypothesis prints the fixture with every failing input
        return f"FuzzEnv({self.venv.root})"

    @property
    def base(self) -> list[str]:
        return ["--python", self.venv.python, "--patchset-dir", str(self.patchsets)]

    def run(self, *args: str) -> Result:
        return run_inprocess(*self.base, *args)

    def snap(self) -> dict[str, bytes]:
        return snapshot(self.venv.site, ("demo/",))

    def restore(self) -> None:
        """Put back the pristine tree (only after a failure, so one bug fails one input)."""
        site = self.venv.site
        now = self.snap()
        for rel in now.keys() - self.pristine.keys():
            (site / rel).unlink()
        for rel, data in self.pristine.items():
            if now.get(rel) != data:
                (site / rel).parent.mkdir(parents=True, exist_ok=True)
                (site / rel).write_bytes(data)


@pytest.fixture(scope="module")
def fuzz_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzEnv]:
    """demo 1.0 in one venv for all inputs, with bytecode, a symlinked dir and a symlinked file."""
    if UV is None:
        pytest.skip("needs uv")
    tmp = tmp_path_factory.mktemp("fuzz")
    wheel = build_wheel(tmp, "demo", "1.0", DEMO_FILES)
    venv = Venv(tmp / "venv")
    subprocess.run([UV, "venv", "-q", str(venv.root)], check=True)
    venv.install(wheel, "uv", "--link-mode", "copy")
    other = build_wheel(tmp, "other", "1.0", {"other/mod.py": b"x = 1\n"})
    venv.install(other, "uv", "--link-mode", "copy")
    subprocess.run([venv.python, "-m", "compileall", "-q", str(venv.site / "demo")], check=True)
    outside = tmp / "outside"
    outside.mkdir()
    (outside / "target.py").write_bytes(b"x = 1\n")
    os.symlink(outside, venv.site / "demo" / "link")
    os.symlink(outside / "target.py", venv.site / "demo" / "filelink.py")
    patchsets = tmp / "patchsets"
    write_patchset(patchsets, name="fuzz", patches={"0001.patch": ""})
    env = FuzzEnv(venv, patchsets, outside)
    probe = Environment.for_python(venv.python)  # the probe is not under test: run it once
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Environment, "for_python", classmethod(lambda cls, python: probe))
        yield env


def expected_files(env: FuzzEnv) -> dict[str, bytes | None]:
    ps = load_patchset(env.patchsets / "fuzz")
    paths = list(dict.fromkeys(path for p in ps.patches for fd in p.files for path in fd.paths))
    base = {p: env.pristine.get(p) for p in paths}
    return apply_series(base, [(p.id, p.files) for p in ps.patches]).contents


def check_cli(env: FuzzEnv, data: bytes, force: bool = False) -> str:
    """Run one patch file through status, dry-run, apply, verify and revert; return the outcome."""
    (env.patchsets / "fuzz/patches/0001.patch").write_bytes(data)
    extra = ("--force",) if force else ()
    try:
        status = env.run("status", "fuzz")
        status.check_clean()
        dry = env.run("apply", "fuzz", "--dry-run", *extra)
        dry.check_clean()
        assert env.snap() == env.pristine, "status or a dry run changed bytes"
        applied = env.run("apply", "fuzz", *extra)
        applied.check_clean()
        assert (dry.code == 0) == (applied.code == 0), (dry, applied)
        if applied.code:
            assert env.snap() == env.pristine, "a refused apply changed bytes"
            return "refused"
        now = env.snap()
        for path, data_after in expected_files(env).items():
            assert now.get(path) == data_after, path
        verify = env.run("verify", "fuzz")
        assert verify.code == 0, verify.err
        reverted = env.run("revert", "fuzz")
        assert reverted.code == 0, reverted.err
        assert env.snap() == env.pristine, "revert is not byte-exact"
        return "applied"
    except BaseException:
        env.restore()
        raise


OUTCOMES: dict[str, int] = {}


def _figures() -> dict[str, object] | None:
    """How many inputs each target got, for the end of the run (None: no fuzz test ran)."""
    if not COUNTS:
        return None
    return {"examples_per_target": FUZZ_EXAMPLES, "inputs": COUNTS, "cli_outcomes": OUTCOMES}


AT_END["fuzz"] = _figures


@pytest.mark.slow
@given(patch_bytes(), st.integers(0, 3))
@FUZZ
def test_fuzz_apply_dry_run_and_apply(fuzz_env: FuzzEnv, data: bytes, force: int) -> None:
    _count("cli apply")
    outcome = check_cli(fuzz_env, data, force=force == 0)
    OUTCOMES[outcome] = OUTCOMES.get(outcome, 0) + 1


@pytest.mark.parametrize("seed", corpus_files(), ids=lambda p: p.name)
def test_corpus_replay(fuzz_env: FuzzEnv, seed: Path) -> None:
    data = seed.read_bytes()
    check_parse(data)
    check_engine(data)
    outcome = check_cli(fuzz_env, data)
    if seed.name.startswith("ok-"):
        assert outcome == "applied"
        after = expected_files(fuzz_env)  # exit 0 with nothing changed is no success
        assert any(fuzz_env.pristine.get(p) != data for p, data in after.items()), "no change"
    elif seed.name.startswith("bad-"):
        assert outcome == "refused"


# --- issue 25: a project's [tool.compatkit] table and option values, in a real project folder ---


@pytest.fixture(scope="module")
def project(fuzz_env: FuzzEnv, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project folder: its own demo-fix patchset, a link out of it, a file, a folder, a FIFO."""
    folder = tmp_path_factory.mktemp("project")
    write_patchset(folder / "patches")
    (folder / "link-out").symlink_to(fuzz_env.patchsets)
    (folder / "a-file").write_text("keep me\n")
    (folder / "a-folder").mkdir()
    os.mkfifo(folder / "fifo")
    return folder


def _in_project(env: FuzzEnv, folder: Path, *args: str) -> Result:
    before = sorted(p.name for p in folder.iterdir())
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        result = env.run(*args)
    finally:
        os.chdir(cwd)
    result.check_clean()
    assert env.snap() == env.pristine, (args, "changed the environment")
    assert sorted(p.name for p in folder.iterdir()) == before, (args, "wrote into the project")
    assert (folder / "a-file").read_text() == "keep me\n"
    return result


@given(project_toml())
@FUZZ_QUARTER
def test_fuzz_project_config(fuzz_env: FuzzEnv, project: Path, data: bytes) -> None:
    """status, list and apply --dry-run under any [tool.compatkit] table: clean, no writes."""
    _count("project config")
    (project / "pyproject.toml").write_bytes(data)
    try:
        for args in (["status"], ["list"], ["apply", "--dry-run"]):
            _in_project(fuzz_env, project, *args)
    finally:
        (project / "pyproject.toml").unlink()


@given(bad_options())
@FUZZ_QUARTER
def test_fuzz_bad_option_values(fuzz_env: FuzzEnv, project: Path, args: list[str]) -> None:
    """An option value of the wrong kind is a usage error (exit 2), before any work."""
    _count("option values")
    result = _in_project(fuzz_env, project, *args)
    assert result.code == 2, (args, result.err)
