"""Big installed files for the tests of issue 36: sparse files (no disk blocks but the last),
their RECORD rows, and the peak memory of a compatkit command measured in a child process
(``resource.getrusage``), so that nothing the test process itself holds counts."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
from pathlib import Path

MIB = 1 << 20
# the child's address space is capped: a command that reads a whole 2 GB file then fails at
# once with MemoryError, instead of taking the memory of a machine shared by other jobs
ADDRESS_SPACE = 1 << 30


def record_hash(digest: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def streamed(path: Path) -> str:
    """The RECORD form of ``path``'s hash, by hashlib in chunks (not compatkit's code)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(8 * MIB), b""):
            h.update(block)
    return record_hash(h.digest())


def sparse(path: Path, size: int, tail: bytes = b"end") -> Path:
    """A sparse file of ``size`` bytes ending in ``tail``: no disk blocks but the last. An
    existing file is replaced (a new inode: never written through uv's hardlink)."""
    tmp = path.with_name(path.name + ".sparse-tmp")
    with open(tmp, "wb") as f:
        f.truncate(size - len(tail))
        f.seek(size - len(tail))
        f.write(tail)
    os.replace(tmp, path)
    return path


def add_to_record(site: Path, dist: str, rows: list[str]) -> None:
    """Put ``rows`` in ``dist``'s RECORD under ``site``: each replaces the row of the same
    path, or is appended (a new file, never through uv's hardlink)."""
    record = next(site.glob(f"{dist}-*.dist-info")) / "RECORD"
    new = {r.split(",", 1)[0]: r for r in rows}
    kept = [r for r in record.read_text().splitlines() if r.split(",", 1)[0] not in new]
    tmp = record.with_name("RECORD.tmp")
    tmp.write_text("".join(f"{r}\n" for r in [*kept, *rows]))
    os.replace(tmp, record)


# Linux keeps a process's peak RSS across execve, and a child starts with its parent's: a
# child of pytest (hundreds of MB after many tests) would report pytest's peak. So the child
# is started by a small Python, whose own peak is all it inherits.
_SPAWN = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"


def child_peak(body: str, *args: str, env: dict[str, str] | None = None) -> tuple[str, int]:
    """(the value ``body`` leaves in ``result``, its peak RSS in bytes: its own or its worker
    processes', the larger): ``body`` run in a child Python (``sys.argv[1:]``: ``args``), its
    address space capped at :data:`ADDRESS_SPACE`; ``result`` is "raised" when it raised."""
    result, peak, _ = child_run(body, *args, env=env)
    return result, peak


def child_run(
    body: str, *args: str, env: dict[str, str] | None = None
) -> tuple[str, int, list[str]]:
    """:func:`child_peak`, and the lines the child wrote to stderr (its own)."""
    indented = "".join(f"    {line}\n" for line in body.splitlines())
    code = (
        "import resource, sys\n"
        f"resource.setrlimit(resource.RLIMIT_AS, ({ADDRESS_SPACE}, resource.RLIM_INFINITY))\n"
        f"try:\n{indented}"
        "except BaseException:\n"
        "    import traceback\n"
        "    traceback.print_exc()\n"
        "    result = 'raised'\n"
        "who = (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)\n"
        "peak = max(resource.getrusage(w).ru_maxrss for w in who) * 1024\n"
        "print(result, peak, file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", _SPAWN, sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        check=False,
        env=None if env is None else {**os.environ, **env},
    )
    *err, last = proc.stderr.splitlines()
    result, peak = last.rsplit(" ", 1)
    return result, int(peak), err


def peak_rss(python: str, *args: str, env: dict[str, str] | None = None) -> tuple[int, int]:
    """(exit code, peak RSS in bytes) of ``compatkit --python PYTHON ARGS`` in a child
    (:func:`child_peak`; exit code -1: it raised)."""
    code, peak, _ = run_capped(python, *args, env=env)
    return code, peak


def run_capped(
    python: str, *args: str, env: dict[str, str] | None = None
) -> tuple[int, int, list[str]]:
    """:func:`peak_rss`, and what the command wrote to stderr, line by line."""
    body = "from compatkit.cli.main import main\nresult = main(sys.argv[1:])\n"
    result, peak, err = child_run(body, "--python", python, *args, env=env)
    return (-1 if result == "raised" else int(result)), peak, err
