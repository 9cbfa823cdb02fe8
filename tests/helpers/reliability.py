"""Shared helpers of the reliability suite: full mode, figures, CLI runs, the crash harness.

``COMPATKIT_FULL=1`` switches every reliability test to full mode (every crash point, 10,000
fuzz inputs per target); ``COMPATKIT_FUZZ_EXAMPLES=N`` overrides the fuzz count alone. With
``COMPATKIT_REPORT=FILE`` every test appends its figures to FILE as JSON lines.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from compatkit.cli.main import main
from compatkit.env import txn
from helpers import Venv

FULL = os.environ.get("COMPATKIT_FULL", "") not in ("", "0")
FUZZ_EXAMPLES = int(os.environ.get("COMPATKIT_FUZZ_EXAMPLES") or (10_000 if FULL else 1_000))

HANG = 60  # seconds: a child still running then has hung


def child(
    cmd: list[str], env: dict[str, str] | None = None, stdin: bytes | int | None = None
) -> tuple[int | None, bytes, bytes]:
    """Run ``cmd`` in a session of its own; after HANG seconds kill the whole session (a
    hung grandchild too) and return None as its exit code."""
    feed = stdin if isinstance(stdin, bytes) else None
    with subprocess.Popen(
        cmd,
        stdin=stdin if isinstance(stdin, int) else subprocess.PIPE if feed is not None else None,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(feed, timeout=HANG)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            return None, out, err
        return proc.returncode, out, err


def record(name: str, **figures: object) -> str:
    """The ``RELIABILITY {...}`` line of one test's figures, appended (JSON) to
    $COMPATKIT_REPORT if set."""
    line = json.dumps({"test": name, "full": FULL, **figures}, sort_keys=True)
    target = os.environ.get("COMPATKIT_REPORT")
    if target:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
    return f"RELIABILITY {line}"


def report(name: str, **figures: object) -> None:
    """Print the figures of one test and append them to $COMPATKIT_REPORT, if set."""
    print(record(name, **figures))


# Figures a module gathers over several tests, reported once at the end of the run (by
# conftest.py's pytest_terminal_summary): name -> the figures, or None when none of its tests ran.
AT_END: dict[str, Callable[[], dict[str, object] | None]] = {}


@dataclass
class Result:
    code: int
    out: str
    err: str

    def check_clean(self) -> None:
        """Exit 0, 1 or 2, and on failure one error line (plus one line per listed problem)."""
        assert self.code in (0, 1, 2), (self.code, self.err)
        assert "Traceback" not in self.err and "internal error" not in self.err, self.err
        for line in self.err.split("\n"):  # nothing that moves the cursor or paints
            assert all(ch.isprintable() or ch == "\t" for ch in line), repr(self.err)
        if self.code:
            lines = self.err.rstrip("\n").split("\n")
            assert lines and lines[0].startswith("compatkit: error: "), self.err
            assert all(line.startswith("  - ") for line in lines[1:]), self.err


def run_inprocess(*args: str) -> Result:
    """``compatkit ARGS`` in this process, with stdout/stderr as strict as a real UTF-8 tty's."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse usage errors
            code = int(exc.code or 0)
        out.flush()
        err.flush()
    texts = [s.buffer.getvalue().decode("utf-8", "replace") for s in (out, err)]
    return Result(code, texts[0], texts[1])


def snapshot(site: Path, pycache_under: Iterable[str] = ()) -> dict[str, bytes]:
    """Every file below site-packages; ``__pycache__`` only below the given folders."""
    keep = tuple(pycache_under)
    out = {}
    for p in sorted(site.rglob("*")):
        rel = str(p.relative_to(site))
        if p.is_file() and ("__pycache__" not in p.parts or rel.startswith(keep)):
            out[rel] = p.read_bytes()
    return out


def diff_keys(a: dict[str, bytes], b: dict[str, bytes]) -> list[str]:
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))


@dataclass
class CrashTarget:
    """One patchset on one venv, killed with SIGKILL at chosen write steps."""

    venv: Venv
    patchsets: Path
    name: str
    dist: str
    apply_args: tuple[str, ...] = ()
    pycache_under: tuple[str, ...] = ()
    pycache_prefix: Path | None = None
    figures: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def base(self) -> list[str]:
        return ["--python", self.venv.python, "--patchset-dir", str(self.patchsets)]

    def snap(self) -> dict[str, bytes]:
        return snapshot(self.venv.site, self.pycache_under)

    def args(self, command: str) -> list[str]:
        extra = self.apply_args if command == "apply" else ()
        return [command, self.name, *extra]

    def child(self, command: str, crash_at: int | None) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "COMPATKIT_CRASH_AT"}
        if self.pycache_prefix is not None:  # the child's own bytecode: start-up in ms
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(self.pycache_prefix)
        if crash_at is not None:
            env["COMPATKIT_CRASH_AT"] = str(crash_at)
        cmd = [sys.executable, "-m", "compatkit", *self.base, *self.args(command)]
        return subprocess.run(cmd, capture_output=True, text=True, env=env)

    def inproc(self, *args: str) -> Result:
        return run_inprocess(*self.base, *args)

    def count_steps(self, command: str) -> int:
        """Run ``command`` in this process and count its write steps."""
        before = txn._steps
        result = self.inproc(*self.args(command))
        assert result.code == 0, result.err
        return txn._steps - before

    def crash(
        self,
        command: str,
        start: dict[str, bytes],
        done: dict[str, bytes],
        points: Iterable[int],
    ) -> tuple[int, int]:
        """Kill ``command`` at each step in ``points``; check recovery after each kill."""
        tried = recovered = 0
        applied = done if command == "apply" else start
        pristine = start if command == "apply" else done
        undo = "revert" if command == "apply" else "apply"
        for step in points:
            proc = self.child(command, crash_at=step)
            assert proc.returncode == -signal.SIGKILL, (step, proc.returncode, proc.stderr)
            tried += 1
            status = self.inproc("status", self.name)  # the next command recovers
            assert status.code == 0, (step, status.err)
            now = self.snap()
            assert now in (start, done), (step, diff_keys(now, start), diff_keys(now, done))
            verify = self.inproc("verify", self.name)
            assert (verify.code == 0) == (now == applied), (step, verify.err)
            assert (self.inproc("pristine", self.dist).code == 0) == (now == pristine)
            assert not [p for p in self.venv.site.rglob("*") if "compatkit-" in p.name]
            recovered += 1
            if now != start:
                back = self.inproc(*self.args(undo))
                assert back.code == 0, back.err
                assert self.snap() == start
        self.figures[command] = {"tried": tried, "recovered": recovered}
        return tried, recovered

    def finishes_after(self, command: str, steps: int, expected: dict[str, bytes]) -> None:
        """With the crash point one past the last step, the run completes normally."""
        proc = self.child(command, crash_at=steps + 1)
        assert proc.returncode == 0, proc.stderr
        assert self.snap() == expected


def sample(total: int, every: int = 25, edge: int = 3) -> list[int]:
    """All of 1..total in full mode; else the first and last ``edge`` and every ``every``th."""
    if FULL:
        return list(range(1, total + 1))
    chosen = set(range(1, min(edge, total) + 1)) | set(range(max(1, total - edge + 1), total + 1))
    chosen |= set(range(every, total + 1, every))
    return sorted(chosen)


@contextlib.contextmanager
def env_var(name: str, value: str) -> Iterator[None]:
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old
