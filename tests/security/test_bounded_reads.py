"""Every read of a file compatkit does not own is non-blocking and bounded (issue 34: 5, 6, 8).

The environment's own files (RECORD, METADATA, INSTALLER, entry_points.txt, direct_url.json, a
``.pth``, pyvenv.cfg) are replaced, in a real venv, by a FIFO (a plain ``open`` waits for a writer
for ever), a symbolic link to ``/dev/zero`` (a plain ``read`` never ends) and a 2 GB sparse file;
then every command that reads the environment runs in a child process with a timeout (a hang
fails the test) and an address-space limit (a read without end fails fast instead of filling
the machine). Each ends in exit 0, or exit 1 with one line naming the file. ``explain -``'s
standard input gets the same treatment, and ``pristine`` a RECORD row that leaves the
environment.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from compatkit.model.records import hash_bytes
from compatkit.runtime.startfiles import BOOT_MODULE, PTH_NAME
from helpers import (
    DEMO_FILES,
    Demo,
    Venv,
    compatkit_command,
    install_demo,
    run_cli,
)
from helpers.reliability import HANG, child

ROOT = Path(__file__).resolve().parents[2]
INFO = "demo-1.0.dist-info"
SPARSE = 2 << 30  # 2 GiB, no block of it on disk

# The child: each command in this process (one interpreter start for all), its exit code and
# stderr as one JSON line each, under an address-space limit.
DRIVER = r"""
import contextlib, io, json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
from compatkit.cli.main import main
for args in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(args)
        except SystemExit as exc:
            code = exc.code
        except BaseException as exc:
            code = repr(exc)
    print(json.dumps([args, code, err.getvalue()]), flush=True)
"""


@dataclass
class Env:
    venv: Venv
    patchsets: Path
    wheels: Path
    tmp: Path

    def commands(self) -> list[list[str]]:
        """Every command that reads the environment, each exit 0 on a sound one."""
        base = ["--python", self.venv.python, "--patchset-dir", str(self.patchsets)]
        out = str(self.tmp / "out")
        os.makedirs(out, exist_ok=True)
        wheel = ["wheel", "demo-fix", "-o", out, "--wheel-dir", str(self.wheels), "--offline"]
        return [
            [*base, *args]
            for args in (
                ["status"],
                ["pristine", "demo"],
                ["pristine", "--all"],
                ["sbom", "-o", f"{out}/sbom.json"],
                wheel,
                ["apply", "demo-fix"],
                ["verify", "demo-fix"],
                ["revert", "demo-fix"],
            )
        ]

    def run_all(self) -> list[tuple[list[str], object, str]]:
        cmd = [sys.executable, "-c", DRIVER, json.dumps(self.commands())]
        code, out, err = child(cmd, self.environ())
        if code is None:
            ran = [json.loads(line)[0][4:] for line in out.decode().splitlines()]
            pytest.fail(f"hung for {HANG} s after {ran}")
        assert code == 0, err
        return [tuple(json.loads(line)) for line in out.decode().splitlines()]

    def environ(self) -> dict[str, str]:
        return {
            **os.environ,
            "COMPATKIT_CACHE_DIR": str(self.tmp / "ck-cache"),
            "COMPATKIT_NO_INDEX": "1",
            "UV_CACHE_DIR": str(self.tmp / "empty-uv"),
            "PIP_CACHE_DIR": str(self.tmp / "empty-pip"),
            "NO_COLOR": "1",
        }


@pytest.fixture
def env(tmp_path: Path, make_venv: Callable[..., Venv]) -> Iterator[Env]:
    """demo 1.0 with an entry_points.txt (so RECORD lists it), installed by uv in copy mode."""
    files = {**DEMO_FILES, f"{INFO}/entry_points.txt": b"[console_scripts]\ndemo = demo:hello\n"}
    venv, patchsets, wheel = install_demo(tmp_path, make_venv, files)
    yield Env(venv, patchsets, wheel.parent, tmp_path)


def _place(env: Env, name: str) -> Path:
    if name == "pyvenv.cfg":
        return env.venv.root / name
    if name.endswith(".pth"):
        return env.venv.site / name
    return env.venv.site / INFO / name


def _replace(path: Path, kind: str) -> None:
    """``path`` (not followed) becomes a FIFO, a link to /dev/zero, or a 2 GB sparse file."""
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        path.symlink_to("/dev/zero")
    else:
        with open(path, "wb") as f:
            f.truncate(SPARSE)


FILES = ["RECORD", "METADATA", "INSTALLER", "entry_points.txt", "direct_url.json"]
FILES += ["evil.pth", "pyvenv.cfg"]
KINDS = ("fifo", "zero", "sparse")
FAST = {("RECORD", "fifo"), ("METADATA", "zero"), ("evil.pth", "fifo"), ("pyvenv.cfg", "fifo")}
CASES = [
    pytest.param(f, k, marks=() if (f, k) in FAST else pytest.mark.slow, id=f"{f}-{k}")
    for f in FILES
    for k in KINDS
]


def test_every_command_passes_on_a_sound_environment(env: Env) -> None:
    """The baseline: each command of :meth:`Env.commands` exits 0 here."""
    for args, code, err in env.run_all():
        assert code == 0, (args[4:], err)


@pytest.mark.parametrize(("name", "kind"), CASES)
def test_no_environment_file_hangs_a_command(env: Env, name: str, kind: str) -> None:
    path = _place(env, name)
    _replace(path, kind)
    start = time.perf_counter()
    results = env.run_all()
    elapsed = time.perf_counter() - start
    assert len(results) == len(env.commands())
    named = 0
    for args, code, err in results:
        what = " ".join(args[4:])
        assert code in (0, 1), f"{what}: exit {code}: {err}"
        assert "Traceback" not in err and "internal error" not in err, (what, err)
        if code == 0:
            continue
        # one line, and one per problem under it (pristine --all: each with the
        # files it names indented below)
        lines = err.rstrip("\n").split("\n")
        assert lines[0].startswith("compatkit: error: "), (what, err)
        assert all(line.startswith(("  - ", "    ")) for line in lines[1:]), (what, err)
        if name in err:
            named += 1
        else:  # verify after a refused apply, revert of what was not applied
            assert what in ("verify demo-fix", "revert demo-fix"), (what, err)
    if (name, kind) != ("evil.pth", "sparse"):  # sbom reads a .pth's head only: never refused
        assert named, f"no command named {name}: {results}"
    assert elapsed < HANG


def test_bounded_read_never_opens_or_reads_more_than_asked(tmp_path: Path) -> None:
    from compatkit import bounded

    fifo, zero, big, small = (tmp_path / n for n in ("fifo", "zero", "big", "small"))
    os.mkfifo(fifo)
    zero.symlink_to("/dev/zero")
    with open(big, "wb") as f:
        f.truncate(SPARSE)
    small.write_bytes(b"x" * 10)
    start = time.perf_counter()
    for path, why in (
        (fifo, "not a regular file (a FIFO); not read"),
        (zero, "not a regular file (a character device); not read"),
        (big, f"larger than 1 MiB ({SPARSE} bytes); not read"),
        (tmp_path, "not a regular file (a folder); not read"),
    ):
        with pytest.raises(bounded.Refused) as info:
            bounded.read(path, bounded.MIB)
        assert info.value.why == why and str(path) in info.value.message
    assert time.perf_counter() - start < 2
    assert bounded.read(big, 4, head=True) == b"\0" * 4
    assert bounded.read(small, 10) == b"x" * 10
    with pytest.raises(bounded.Refused, match="larger than 9 bytes"):
        bounded.read(small, 9)
    with pytest.raises(bounded.Refused, match="a symbolic link"):
        bounded.read(zero, 10, follow=False)
    with pytest.raises(FileNotFoundError):
        bounded.read(tmp_path / "gone", 10)


# explain -: standard input


# compatkit under the same address-space limit as DRIVER
LIMITED = "import resource, runpy; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
LIMITED += "runpy.run_module('compatkit', run_name='__main__')"
EXPLAIN = [sys.executable, "-c", LIMITED, "explain", "-"]
TRACEBACK = (ROOT / "tests" / "explain_corpus" / "patch-6-ambiguous-tensor.txt").read_bytes()


def _explain(stdin: bytes | int, *options: str) -> tuple[int, bytes, bytes, float]:
    start = time.perf_counter()
    code, out, err = child([*EXPLAIN[:3], *options, *EXPLAIN[3:]], stdin=stdin)
    elapsed = time.perf_counter() - start
    assert code is not None, f"explain - hung for {HANG} s"
    return code, out, err, elapsed


def test_explain_refuses_dev_zero_at_once_with_its_envelope() -> None:
    with open("/dev/zero", "rb") as zero:
        code, out, err, elapsed = _explain(zero.fileno(), "--json")
    assert elapsed < 2 + 3, f"took {elapsed:.1f} s"  # 2 s, and a loaded machine's start-up
    assert code == 1, err
    assert err.decode().splitlines() == [
        "compatkit: error: explain -: standard input: binary, not text (a NUL byte); "
        "not read further"
    ]
    doc = json.loads(out)
    assert doc["ok"] is False and doc["command"] == "explain" and "NUL" in doc["error"]


@pytest.mark.parametrize("nul", [True, False], ids=["random", "random-without-nul"])
def test_explain_refuses_random_bytes(nul: bool) -> None:
    data = random.Random(34).randbytes(3 << 20)
    data = data if nul else data.replace(b"\0", b"")
    code, out, err, _ = _explain(data, "--json")
    assert code == 1, err
    assert b"binary, not text" in err and len(err.splitlines()) == 1
    assert json.loads(out)["ok"] is False


def test_explain_reads_a_50_mb_line_quickly() -> None:
    """One word of 50 MB (regular expressions tried at each of its characters took hours),
    then 50 MB of words in one line (the phrase match compared every pair of words)."""
    for line in (b"a" * (50 << 20), b"lorem ipsum dolor sit amet tensor " * (1_500_000)):
        code, _, err, elapsed = _explain(line + b"\n")
        assert code in (0, 1) and b"Traceback" not in err, err
        assert elapsed < 15, f"took {elapsed:.1f} s"


def test_explain_keeps_the_last_mib_of_standard_input() -> None:
    """A traceback after 5 MiB of log lines is still found: the log is read to its end and
    only its last MiB kept."""
    log = b"".join(b"INFO step %d: loss 0.%d\n" % (i, i) for i in range(250_000))
    assert len(log) > 5 << 20
    code, out, err, _ = _explain(log + TRACEBACK, "--json")
    assert code == 0, err
    assert [m["id"] for m in json.loads(out)["matches"]] == ["patch-6"]


# pristine: RECORD rows that leave the environment


def _rewrite_record(venv: Venv, extra: str) -> None:
    record = venv.site / INFO / "RECORD"
    tmp = record.with_name("RECORD.new")
    tmp.write_bytes(record.read_bytes() + extra.encode())
    tmp.replace(record)  # a new inode: never written through a link to uv's cache


def test_pristine_reports_a_record_row_outside_the_environment(
    env: Env, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = env.tmp / "outside"
    outside.mkdir()
    os.mkfifo(outside / "shadow")  # read, it would hang this test
    rel = os.path.relpath(outside / "shadow", env.venv.site)
    (env.venv.root / "bin" / "demo-tool").write_bytes(b"#!/bin/sh\n")
    tool = "../../../bin/demo-tool"  # an installer's script: stays in the environment
    rows = f"{rel},sha256=wrong,10\n/etc/passwd,sha256=wrong,10\n"
    _rewrite_record(env.venv, f"{tool},{hash_bytes(b'#!/bin/sh' + bytes([10]))},10\n{rows}")
    base = ("--python", env.venv.python)
    code, out, err = run_cli(capsys, *base, "--json", "pristine", "demo")
    assert code == 1, err
    (report,) = json.loads(out)["distributions"]
    assert report["outside_environment"] == [
        f"{rel!r}: {outside / 'shadow'}",
        "'/etc/passwd': /etc/passwd",
    ]
    for args in (["demo"], ["--all"]):
        code, out, err = run_cli(capsys, *base, "pristine", *args)
        assert code == 1
        assert err.splitlines()[1:] == [
            f"  - demo 1.0: 2 RECORD rows outside the environment, not read ({rel!r}: "
            f"{outside / 'shadow'}, and 1 more)"
        ]


# wheel: the note on a copy that is no zip archive


def test_wheel_names_a_skipped_non_zip_copy_when_nothing_else_is_left(env: Env) -> None:
    junk = env.tmp / "junk"
    junk.mkdir()
    (junk / "demo-1.0-py3-none-any.whl").write_bytes(b"<html>rate limited</html>\n")
    os.mkfifo(junk / "demo-1.0-py2.py3-none-any.whl")  # opened, it would hang
    args = ["--json", "wheel", "demo-fix", "-o", str(env.tmp / "o"), "--wheel-dir", str(junk)]
    code, out, err = child(compatkit_command(env.venv, env.patchsets, *args), env.environ())
    assert code == 1, err
    lines = err.decode().splitlines()
    assert lines[0] == "compatkit: error: cannot get the pristine wheel of demo 1.0"
    fifo, html = junk / "demo-1.0-py2.py3-none-any.whl", junk / "demo-1.0-py3-none-any.whl"
    assert sorted(lines[1:3]) == sorted(
        [
            f"  - skipped {fifo}: not a regular file (a FIFO); not read",
            f"  - skipped {html}: not a zip archive (File is not a zip file)",
        ]
    )
    assert lines[3:] == [
        "  - no other copy of the demo 1.0 wheel was found (offline: no download tried)"
    ]
    assert json.loads(out)["problems"] == [line[4:] for line in lines[1:]]
    assert not (env.tmp / "o").exists()


# runtime mode and patchsets: the .pth, its boot module, a runtime folder's own files


def _runtime_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return {**env, "COMPATKIT_CACHE_DIR": str(tmp / "cache")}


def _one_line(code: int | None, err: bytes, *words: str) -> None:
    """Exit 1, within HANG, with one line naming each of ``words``."""
    assert code is not None, f"hung for {HANG} s"
    text = err.decode()
    assert code == 1, text
    assert "Traceback" not in text and "internal error" not in text, text
    assert text.startswith("compatkit: error: "), text
    for word in words:
        assert word in text, (word, text)


@pytest.mark.parametrize("name", ["pth", "boot"])
@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_verify_runtime_never_hangs_on_the_start_up_files(
    demo: Demo, tmp_path: Path, name: str, kind: str
) -> None:
    """``runtime verify`` compares the ``.pth`` and its boot module (site-packages: the
    environment's files) with the manifest; a FIFO there hung it, a link to /dev/zero read
    until memory ran out."""
    root = tmp_path / "rt"
    code, _, err = demo.run("runtime", "install", "demo-fix", "--dir", str(root), "--pth")
    assert code == 0, err
    pth = demo.venv.site / f"{PTH_NAME}.pth"
    path = pth if name == "pth" else demo.venv.site / f"{BOOT_MODULE}.py"
    assert path.is_file()
    _replace(path, kind)
    cmd = [sys.executable, "-c", LIMITED, "runtime", "verify", "--dir", str(root)]
    status, _, said = child(cmd, _runtime_env(tmp_path))
    why = "is missing or unreadable" if name == "pth" else "is missing or not the start-up"
    _one_line(status, said, str(path), why)


@pytest.mark.parametrize("part", ["patchset.toml", "patches/0001.patch"])
def test_a_huge_patchset_file_is_refused_not_read(env: Env, part: str) -> None:
    """A patchset's files are read whole to be parsed: a 2 GB sparse one (under a 3 GiB
    address-space limit) ran out of memory; it is one line naming it, read no further."""
    path = env.patchsets / "demo-fix" / part
    _replace(path, "sparse")
    base = ["--python", env.venv.python, "--patchset-dir", str(env.patchsets)]
    for args in (["status"], ["lint"]):
        start = time.perf_counter()
        code, _, err = child([sys.executable, "-c", LIMITED, *base, *args], env.environ())
        assert code is not None, f"{args} hung for {HANG} s"
        text = err.decode()
        assert code == 1, (args, text)
        assert "Traceback" not in text and "internal error" not in text, text
        assert "larger than 64 MiB" in text, (args, text)
        assert time.perf_counter() - start < 20
