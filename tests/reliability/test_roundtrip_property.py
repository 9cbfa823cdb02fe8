"""Issue 38: apply → verify → revert gives back every byte, on generated distributions.

hypothesis draws a tiny distribution (empty files, root-level modules, a nested package, a
namespace folder, a folder of one file, CRLF and no-final-newline files, 0444 and 0755 files,
bytecode that RECORD lists or not) and a series of 1-3 patches over it (modify, create, delete,
every file of a folder, several files per patch), written as ``diff -u`` / ``git diff`` text. The
distribution is written straight into one real venv's site-packages (RECORD with real
hashes), and for each example:

- ``apply`` exits 0 and every touched file holds exactly the bytes the series makes (a modified
  file keeps its mode, a created one is 0644);
- ``verify`` exits 0;
- ``revert`` exits 0 and the tree (bytecode, RECORD, every file's mode, a deleted one's too) is
  byte-identical to before, and ``pristine`` passes;
- in the second test (slow), a real ``python -m compatkit apply`` and then ``revert`` are also
  SIGKILLed at a drawn write step; the next command must leave the tree byte-exact pristine
  or byte-exact applied.

Fast mode: ``ROUND_TRIPS`` and ``CRASHES`` examples, the same inputs every run.
``COMPATKIT_FULL=1``: a larger fixed budget, fresh inputs each run (the reliability session;
figures in docs/reliability.md).
"""

from __future__ import annotations

import difflib
import os
import shutil
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compatkit.env import txn
from compatkit.env.target import Environment
from helpers import UV, Venv, write_patchset
from helpers.reliability import FULL, Result, report, run_inprocess
from helpers.wheelkit import _hash

ROUND_TRIPS = 1000 if FULL else 10  # examples of apply → verify → revert
CRASHES = 250 if FULL else 8  # examples whose apply and revert are also SIGKILLed once each
NAME, DIST = "gen-fix", "gen"
INFO = "gen-1.0.dist-info"
HEAD = (
    "Patch-Id: patch-{n}\nTitle: t\nSymptom: s\nCause: c\nFix: f\n"
    "Smoke-Test: smoke/test_patch_1.py\n---\n"
)

# where a distribution's files may be: two root-level modules, a package with a nested one and
# a folder holding one file, a namespace folder (no __init__.py), a marker file
SLOTS = [
    "gen_mod.py",
    "gen_compat.py",
    "genpkg/__init__.py",
    "genpkg/core.py",
    "genpkg/py.typed",
    "genpkg/sub/__init__.py",
    "genpkg/sub/m.py",
    "genpkg/sub/deep/leaf.py",
    "gennsp/part/x.py",
    "gennsp/part/data.txt",
]
WORDS = ["a", "b", "x = 1", "", "    pass", "def f():", "# é", "\tt"]

Files = dict[str, bytes]


@st.composite
def contents(draw: st.DrawFn, eol: str | None = None) -> bytes:
    """A small text file: often empty, LF or CRLF, with or without its final newline."""
    if draw(st.integers(0, 4)) == 0:
        return b""
    lines = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6))
    eol = eol or draw(st.sampled_from(["\n", "\r\n"]))
    final = draw(st.booleans()) or lines[-1] == ""  # "a\n" + "" is "a\n": one line, not two
    return (eol.join(lines) + (eol if final else "")).encode()


def eol_of(data: bytes) -> str:
    return "\r\n" if b"\r\n" in data else "\n"


class Case:
    """One drawn example: the distribution, its modes and bytecode, the series' patches."""

    def __init__(self) -> None:
        self.files: Files = {}
        self.modes: dict[str, int] = {}
        self.pycs: dict[str, bool] = {}  # bytecode path -> listed in RECORD
        self.patches: list[str] = []
        self.expected: dict[str, bytes | None] = {}  # every touched path after the series
        self.kinds: dict[str, int] = {}

    def note(self, kind: str) -> None:
        self.kinds[kind] = self.kinds.get(kind, 0) + 1

    def __repr__(self) -> str:  # what hypothesis prints for a failing example
        return f"Case(files={self.files!r}, modes={self.modes!r}, patches={self.patches!r})"


def _unified(path: str, old: bytes | None, new: bytes | None, context: int, git: bool) -> str:
    """One file's diff: ``diff -u`` text from difflib (with the no-newline markers difflib
    leaves out), under a ``git diff`` header if ``git`` (an empty file created or deleted
    has the header alone: ``diff -N`` writes nothing for it)."""
    header = ""
    if git:
        header = f"diff --git a/{path} b/{path}\n"
        if old is None or new is None:
            header += f"{'new' if old is None else 'deleted'} file mode 100644\n"
        if not old and not new:
            return header
    a = (old or b"").decode().splitlines(keepends=True)
    b = (new or b"").decode().splitlines(keepends=True)
    source = "/dev/null" if old is None else f"a/{path}"
    target = "/dev/null" if new is None else f"b/{path}"
    out = []
    for line in difflib.unified_diff(a, b, source, target, n=context, lineterm="\n"):
        if line.startswith(("---", "+++")):
            line = line.rstrip() + "\n"  # difflib adds a trailing space when there is no date
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return header + "".join(out)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    case = Case()
    chosen = draw(st.lists(st.sampled_from(SLOTS), min_size=1, max_size=len(SLOTS), unique=True))
    for path in sorted(chosen):
        case.files[path] = b"" if path.endswith("py.typed") else draw(contents())
        case.modes[path] = draw(st.sampled_from([0o644, 0o644, 0o444, 0o755]))
        if path.endswith(".py") and draw(st.integers(0, 3)) == 0:
            folder, _, name = path.rpartition("/")
            pyc = f"{folder}/__pycache__/{name[:-3]}.cpython-311.pyc".lstrip("/")
            case.pycs[pyc] = draw(st.booleans())
    folders = sorted({p.rpartition("/")[0] for p in case.files if "/" in p})
    now: dict[str, bytes | None] = dict(case.files)
    for n in range(1, draw(st.integers(1, 3)) + 1):
        diffs: list[tuple[str, bytes | None, bytes | None, int]] = []
        touched: set[str] = set()
        for _ in range(draw(st.integers(1, 3))):
            present = sorted(p for p, d in now.items() if d is not None and p not in touched)
            kinds = ["create"] * bool(folders) + ["modify", "delete", "clear-folder"] * bool(
                present
            )
            if not kinds:
                break
            kind = draw(st.sampled_from(kinds))
            context = draw(st.integers(0, 3))
            paths: dict[str, bytes | None]
            if kind == "create":
                folder = draw(st.sampled_from(folders))
                sub = draw(st.sampled_from(["", "newsub/"]))
                path = f"{folder}/{sub}new_{n}_{len(touched)}.py"
                if path in touched or now.get(path) is not None:
                    continue
                paths = {path: draw(contents())}
            elif kind == "modify":
                path = draw(st.sampled_from(present))
                old = now[path]
                assert old is not None
                new = draw(contents(eol_of(old)))
                if new == old:
                    new = old + eol_of(old).encode() if old and not old.endswith(b"\n") else old
                    new += b"added" + eol_of(old).encode()
                paths = {path: new}
            elif kind == "delete":
                paths = {draw(st.sampled_from(present)): None}
            else:  # every file of one folder: the folder goes, and comes back on revert
                folder = draw(st.sampled_from(present)).rpartition("/")[0]
                paths = {p: None for p in present if p.rpartition("/")[0] == folder}
                kind = "clear-folder" if folder else "delete"
            for path, after in paths.items():
                diffs.append((path, now.get(path), after, context))
                now[path] = after
                case.expected[path] = after
                touched.add(path)
            case.note(kind)
        empty = any(not old and not new for _, old, new, _ in diffs)  # only git can say it
        git = empty or draw(st.booleans())
        if diffs:
            case.note("git diff" if git else "diff -u")
            text = "".join(_unified(*d, git=git) for d in diffs)
            zero = any(d[3] == 0 for d in diffs)  # -U0 hunks: git apply --unidiff-zero
            head = (
                HEAD.format(n=n).replace("---\n", "Unidiff-Zero: yes\n---\n")
                if zero
                else HEAD.format(n=n)
            )
            case.patches.append(head + text)
    for path, data in case.files.items():
        traits = [
            ("empty", data == b""),
            ("crlf", b"\r\n" in data),
            ("no-final-newline", data != b"" and not data.endswith(b"\n")),
            ("0444", case.modes[path] == 0o444),
            ("0755", case.modes[path] == 0o755),
            ("root-level", "/" not in path),
        ]
        for trait, has in traits:
            if has and path in case.expected:
                case.note(f"touched {trait}")
    return case


class Site:
    """One real venv for every example; each example's distribution is written into it."""

    def __init__(self, venv: Venv, patchsets: Path, pycache: Path) -> None:
        self.venv, self.patchsets, self.pycache = venv, patchsets, pycache
        self.root = venv.site
        self.initial = set(os.listdir(self.root))
        self.kinds: dict[str, int] = {}
        self.steps: dict[str, int] = {}
        self.crashes: dict[str, int] = {}
        self.examples = 0

    def __repr__(self) -> str:
        return f"Site({self.root})"

    def reset(self) -> None:
        self.kinds = {}
        self.steps = {"apply": 0, "revert": 0}
        self.crashes = {"apply": 0, "revert": 0, "rolled back": 0, "completed": 0}
        self.examples = 0

    def run(self, *args: str) -> Result:
        result = run_inprocess(
            "--python", self.venv.python, "--patchset-dir", str(self.patchsets), *args
        )
        result.check_clean()
        return result

    def child(self, command: str, crash_at: int) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(self.pycache)  # compatkit's own bytecode: start-up
        env["COMPATKIT_CRASH_AT"] = str(crash_at)
        base = ["--python", self.venv.python, "--patchset-dir", str(self.patchsets)]
        cmd = [sys.executable, "-m", "compatkit", *base, command, NAME]
        return subprocess.run(cmd, capture_output=True, text=True, env=env)

    def clean(self) -> None:
        for name in set(os.listdir(self.root)) - self.initial:
            shutil.rmtree(self.root / name, ignore_errors=True)
            if (self.root / name).exists() or (self.root / name).is_symlink():
                (self.root / name).unlink()

    def write(self, case: Case) -> None:
        """The distribution as an installer leaves it: files, METADATA, RECORD (real hashes)."""
        self.clean()
        shutil.rmtree(self.patchsets, ignore_errors=True)
        patches = {f"{i:04d}.patch": text for i, text in enumerate(case.patches, 1)}
        write_patchset(self.patchsets, name=NAME, patches=patches, distribution=DIST)
        everything = dict(case.files)
        everything |= {pyc: b"\x00bytecode of " + pyc.encode() for pyc in case.pycs}
        everything[f"{INFO}/METADATA"] = (
            f"Metadata-Version: 2.1\nName: {DIST}\nVersion: 1.0\n".encode()
        )
        everything[f"{INFO}/INSTALLER"] = b"uv\n"
        rows = [
            f"{p},{_hash(d)},{len(d)}\n" for p, d in everything.items() if case.pycs.get(p, True)
        ]
        everything[f"{INFO}/RECORD"] = "".join([*rows, f"{INFO}/RECORD,,\n"]).encode()
        for rel, data in everything.items():
            (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.root / rel).write_bytes(data)
            os.chmod(self.root / rel, case.modes.get(rel, 0o644))

    def snap(self) -> dict[str, tuple[bytes, int]]:
        """Every file and folder this example owns: bytes and permission bits."""
        out: dict[str, tuple[bytes, int]] = {}
        for name in sorted(set(os.listdir(self.root)) - self.initial):
            top = self.root / name
            for p in [top, *sorted(top.rglob("*"))] if top.is_dir() else [top]:
                st_ = p.lstat()
                data = p.read_bytes() if p.is_file() else b"<dir>"
                rel = str(p.relative_to(self.root))
                out[rel] = (data, stat.S_IMODE(st_.st_mode))
        return out

    def steps_of(self, *args: str) -> int:
        before: int = txn._steps
        result = self.run(*args)
        assert result.code == 0, result.err
        after: int = txn._steps
        return after - before

    def crash(self, command: str, fraction: float, steps: int, states: dict[str, object]) -> str:
        """SIGKILL ``command`` at a drawn step; the next command rolls it back or it had
        committed. Returns which state the tree is in afterwards."""
        point = 1 + int(fraction * steps)
        proc = self.child(command, point)
        assert proc.returncode == -signal.SIGKILL, (command, point, steps, proc.stderr)
        self.crashes[command] += 1
        assert self.run("status", NAME).code == 0  # recovers under the lock
        now = self.snap()
        found = [name for name, snap in states.items() if snap == now]
        assert found, (command, point, steps, "neither pristine nor applied")
        assert not [p for p in self.root.rglob("*compatkit-*")], "a temp file or journal is left"
        done = found[0] == ("applied" if command == "apply" else "pristine")
        self.crashes["completed" if done else "rolled back"] += 1
        return found[0]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    if UV is None:
        pytest.skip("needs uv")
    tmp = tmp_path_factory.mktemp("roundtrip")
    venv = Venv(tmp / "venv")
    subprocess.run([UV, "venv", "-q", "-p", sys.executable, str(venv.root)], check=True)
    probe = Environment.for_python(venv.python)  # the probe is not under test: run it once
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Environment, "for_python", classmethod(lambda cls, python: probe))
        yield Site(venv, tmp / "patchsets", tmp / "pycache")


def check(site: Site, case: Case, crash: tuple[float, float] | None) -> None:
    site.write(case)
    pristine = site.snap()
    steps_apply = site.steps_of("apply", NAME)
    applied = site.snap()
    for path, data in case.expected.items():
        on_disk = site.root / path
        assert (on_disk.read_bytes() if on_disk.exists() else None) == data, path
        if data is not None:  # a modified file keeps its mode, a created one is 0644
            assert stat.S_IMODE(on_disk.stat().st_mode) == case.modes.get(path, 0o644), path
    for path, data in case.files.items():
        if path not in case.expected:
            assert (site.root / path).read_bytes() == data, path
    verify = site.run("verify", NAME)
    assert verify.code == 0, verify.err
    steps_revert = site.steps_of("revert", NAME)
    assert site.snap() == pristine
    assert site.run("pristine", DIST).code == 0
    site.steps["apply"] += steps_apply
    site.steps["revert"] += steps_revert
    if crash is not None:
        states: dict[str, object] = {"pristine": pristine, "applied": applied}
        if site.crash("apply", crash[0], steps_apply, states) == "pristine":
            assert site.run("apply", NAME).code == 0
            assert site.snap() == applied  # a second apply writes the same bytes
        if site.crash("revert", crash[1], steps_revert, states) == "applied":
            assert site.run("revert", NAME).code == 0
        assert site.snap() == pristine
    site.examples += 1
    for kind, count in case.kinds.items():
        site.kinds[kind] = site.kinds.get(kind, 0) + count


def _run(site: Site, examples: int, crash: bool) -> None:
    @given(cases(), st.floats(0, 1, exclude_max=True), st.floats(0, 1, exclude_max=True))
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=not FULL,  # CI runs the same inputs; full mode draws new ones each run
        suppress_health_check=list(HealthCheck),
    )
    def one(case: Case, at_apply: float, at_revert: float) -> None:
        check(site, case, (at_apply, at_revert) if crash else None)

    site.reset()  # each test reports its own figures
    one()
    assert site.examples >= examples // 2  # fewer only if the space is that small


def test_apply_verify_revert_on_generated_distributions(site: Site) -> None:
    _run(site, ROUND_TRIPS, crash=False)
    report("roundtrip-property", examples=site.examples, write_steps=site.steps, kinds=site.kinds)


@pytest.mark.slow
def test_sigkill_in_apply_and_revert_on_generated_distributions(site: Site) -> None:
    _run(site, CRASHES, crash=True)
    report(
        "roundtrip-property/sigkill",
        examples=site.examples,
        sigkills=site.crashes,
        write_steps=site.steps,
        kinds=site.kinds,
    )
