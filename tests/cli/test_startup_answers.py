"""packaging's answers remembered for the read-only commands (benchmark P1): a warm status,
verify, explain or list imports none of packaging's modules; a changed installed version, a new
folder name or a tampered entry is asked again; a command that writes always asks packaging."""

from __future__ import annotations

import marshal
import subprocess
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from test_startup import RUN, _env, pythonpath

from compatkit.env import checks
from compatkit.load import cache
from compatkit.model import answers
from helpers import DEMO_FILES, Venv, build_wheel, write_patchset

# what reading a requirement or a specifier imports (packaging's __init__ alone is its version)
PACKAGING = (
    "packaging.requirements",
    "packaging.specifiers",
    "packaging.markers",
    "packaging.utils",
    "packaging.version",
)


class Target:
    """A venv with demo 1.0 and otherlib, two patchsets that need otherlib, and a runner."""

    def __init__(self, tmp_path: Path, venv: Venv) -> None:
        self.tmp, self.venv = tmp_path, venv
        self.patchsets = tmp_path / "patchsets"
        write_patchset(self.patchsets, requires=["otherlib>=2,<3"])
        write_patchset(self.patchsets, "demo-any", specifier=">=0.9", requires=["otherlib"])
        self.cache = str(tmp_path / "cache")
        self.where = ["--patchset-dir", str(self.patchsets)]
        self.install("demo", "1.0", DEMO_FILES)
        self.install("otherlib", "1.0", {"otherlib/__init__.py": b""})

    def install(self, name: str, version: str, files: dict[str, bytes]) -> None:
        wheels = self.tmp / "wheels" / f"{name}-{version}"
        wheels.mkdir(parents=True)
        self.venv.install(build_wheel(wheels, name, version, files), "uv", "--link-mode", "copy")

    def run(self, *args: str) -> tuple[int, str, list[str]]:
        """compatkit ARGS in the venv's own interpreter: exit code, stdout and stderr, and
        packaging's modules it imported."""
        proc = subprocess.run(
            [self.venv.python, "-c", f"HEAVY = {PACKAGING!r}\n{RUN}", *args, *self.where],
            cwd=self.tmp,
            env={**_env(), "PYTHONPATH": pythonpath(self.tmp), "COMPATKIT_CACHE_DIR": self.cache},
            capture_output=True,
            text=True,
        )
        *err, loaded = proc.stderr.splitlines() or [""]
        assert loaded.startswith("LOADED"), proc.stdout + proc.stderr
        return proc.returncode, proc.stdout + "".join(f"{e}\n" for e in err), loaded.split()[1:]

    def entry(self) -> Path:
        (found,) = (Path(self.cache) / "answers").glob("*.bin")
        return found


@pytest.fixture
def target(tmp_path: Path, make_venv: Callable[..., Venv]) -> Target:
    return Target(tmp_path, make_venv())


READ_ONLY = (["status"], ["explain", "demo-fix:patch-1"], ["verify", "demo-fix"], ["list"])


def test_a_warm_read_only_command_imports_no_packaging(target: Target) -> None:
    first = {}
    for args in READ_ONLY:
        code, out, loaded = target.run(*args)
        first[tuple(args)] = (code, out)
        assert code in (0, 1), out  # verify: demo-fix is not applied
    assert "needs otherlib<3,>=2, found otherlib 1.0" in first[("status",)][1]
    assert "demo-any 1.0.0 → demo>=0.9 (found demo 1.0): not applied" in first[("status",)][1]
    for args in READ_ONLY:
        code, out, loaded = target.run(*args)
        assert (code, out) == first[tuple(args)], args  # the same answers
        assert loaded == [], f"a warm compatkit {' '.join(args)} imported {loaded}"


def test_a_changed_installed_version_is_asked_again(target: Target) -> None:
    target.run("status")
    assert target.run("status")[2] == []
    target.install("otherlib", "2.5", {"otherlib/__init__.py": b""})
    code, out, loaded = target.run("status")
    assert code == 0 and "demo-fix 1.0.0 → demo==1.0 (found demo 1.0): not applied" in out, out
    assert "found otherlib" not in out, out
    assert loaded, "otherlib 2.5 was answered without packaging"
    assert target.run("status")[1:] == (out, [])


def test_a_tampered_entry_is_ignored(target: Target) -> None:
    _, good, _ = target.run("status")
    entry = target.entry()
    raw = entry.read_bytes()
    head = len(cache.MAGIC) + cache.MAC_SIZE
    table = marshal.loads(raw[head:])
    assert table["requirement-contains\0otherlib>=2,<3\x001.0"] is False
    # every verdict turned round, the old MAC kept: not this user's compatkit's entry
    forged = {k: (not v) if isinstance(v, bool) else v for k, v in table.items()}
    entry.write_bytes(raw[:head] + marshal.dumps(forged))
    code, out, loaded = target.run("status")
    assert (code, out) == (0, good) and loaded, "the tampered entry was served"
    assert marshal.loads(entry.read_bytes()[head:]) == table  # stored again, whole
    entry.write_bytes(b"junk")
    assert target.run("status")[1] == good


def test_a_command_that_writes_asks_packaging_itself(target: Target) -> None:
    """An entry signed with the user's key (as if compatkit had stored it) that says otherlib
    1.0 meets ``>=2,<3``: status believes it (it is this user's cache), apply does not."""
    target.run("status")
    entry = target.entry()
    head = len(cache.MAGIC) + cache.MAC_SIZE
    table = marshal.loads(entry.read_bytes()[head:])
    table["requirement-contains\0otherlib>=2,<3\x001.0"] = True
    cache.write(target.cache, "answers", entry.name, marshal.dumps(table))
    code, out, _ = target.run("status", "demo-fix")
    assert "not applied" in out and "found otherlib" not in out, out
    code, out, loaded = target.run("apply", "demo-fix")
    assert code == 1, out
    assert "needs otherlib<3,>=2, found otherlib 1.0" in out, out
    assert "packaging.specifiers" in loaded
    code, out, _ = target.run("status", "demo-fix")
    assert "not applied" in out and "applied 2 patches" not in out, out


def test_the_compile_verdict_is_remembered_by_the_patched_text() -> None:
    compiled: list[bytes] = []

    def counting(source: bytes) -> bool:
        compiled.append(source)
        return real(source)

    real = checks._compiles
    files: tuple[Any, ...] = (
        SimpleNamespace(path="m.py"),
    )  # all _uncompilable reads of a FileDiff
    answers.use({})
    try:
        checks._compiles = counting
        assert checks._uncompilable({"m.py": b"x = 1\n"}, files) is None
        assert checks._uncompilable({"m.py": b"x = 1\n"}, files) is None
        assert checks._uncompilable({"m.py": b"x = (\n"}, files) == "m.py"
        assert checks._uncompilable({"m.py": b"x = (\n"}, files) == "m.py"
        assert compiled == [b"x = 1\n", b"x = (\n"]
        answers.use(None)  # off (every command that writes): compiled each time
        assert checks._uncompilable({"m.py": b"x = (\n"}, files) == "m.py"
        assert len(compiled) == 3
    finally:
        checks._compiles = real
        answers.use(None)
