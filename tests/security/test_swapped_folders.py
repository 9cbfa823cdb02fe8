"""A folder of the target swapped for a link while compatkit writes is never written through
(issue 46, item 1; docs/security.md, "Another user's environment").

The attack: the owner of a venv swaps a package folder of its site-packages with a link to a
folder only root may write (``renameat2(RENAME_EXCHANGE)``, in a loop) while root applies or
reverts there. Before, apply and revert judged every path when they planned, then wrote by
path string: root wrote the patched file into the root-only folder and said "applied". Now
every write goes through folder descriptors opened from the root down
(:mod:`compatkit.env.beneath`), so a swapped folder fails the write (one line, rolled back).
"""

from __future__ import annotations

import ctypes
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from compatkit.env import txn
from helpers import DEMO_FILES, UV, Demo, Venv, build_wheel, root_only, run_cli, write_patchset
from helpers.reliability import FULL, report

ATTACKER = 12345
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_libc = ctypes.CDLL(None, use_errno=True)


def exchange(a: Path, b: Path) -> None:
    """Swap the names ``a`` and ``b`` in one step (``renameat2`` with ``RENAME_EXCHANGE``)."""
    if _libc.renameat2(_AT_FDCWD, bytes(a), _AT_FDCWD, bytes(b), _RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(a))


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every name below ``folder`` (files: their bytes; folders: their mode and mtime)."""
    found: dict[str, bytes | str] = {".": f"{folder.stat().st_mode:o} {folder.stat().st_mtime_ns}"}
    for path in sorted(folder.rglob("*")):
        st = path.lstat()
        rel = str(path.relative_to(folder))
        found[rel] = path.read_bytes() if path.is_file() else f"{st.st_mode:o} {st.st_mtime_ns}"
    return found


def root_only_folder(base: Path) -> Path:
    """A folder only root may write (0700), with a file in it."""
    folder = base / "root-only"
    folder.mkdir(mode=0o700)
    (folder / "secret.txt").write_text("root's own\n")
    return folder


def _swap_once_the_journal_is_in_force(
    monkeypatch: pytest.MonkeyPatch, site: Path, link: Path
) -> list[bool]:
    """Swap ``site/demo`` with ``link`` at the first write step after the journal is in force
    (the plan and every check are done): the existing test hook ``txn._step``."""
    real_step, swapped = txn._step, list[bool]()

    def step() -> None:
        real_step()
        if not swapped and (site / "demo-1.0.dist-info" / txn.JOURNAL).is_dir():
            exchange(site / "demo", link)
            swapped.append(True)

    monkeypatch.setattr(txn, "_step", step)
    return swapped


def test_a_folder_swapped_after_the_checks_is_never_written_through(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """demo/ is swapped with a link to another folder once apply's checks are done. Before:
    apply wrote demo/greet.py into that folder (and said "applied"). Now the writes go to the
    folder that was checked (held open since), wherever it was moved: the other folder is
    untouched, and once demo/ is put back the apply is whole."""
    site = demo.venv.site
    outside = root_only_folder(tmp_path)
    untouched = snapshot(outside)
    (site / "demo-link").symlink_to(outside)
    swapped = _swap_once_the_journal_is_in_force(monkeypatch, site, site / "demo-link")
    code, _, err = demo.run("apply", "demo-fix")
    assert swapped
    assert snapshot(outside) == untouched
    assert code == 0, err
    exchange(site / "demo", site / "demo-link")
    assert b"'hi '" in (site / "demo" / "greet.py").read_bytes()
    assert demo.run("verify", "demo-fix")[0] == 0


def test_a_folder_swapped_during_revert_is_never_written_through(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same during revert: before, the original greet.py landed in the other folder."""
    site = demo.venv.site
    pristine = demo.venv.snapshot()
    assert demo.run("apply", "demo-fix")[0] == 0
    outside = root_only_folder(tmp_path)
    untouched = snapshot(outside)
    link = tmp_path / "link-here"  # outside site-packages: the snapshots compare the rest
    link.symlink_to(outside)
    swapped = _swap_once_the_journal_is_in_force(monkeypatch, site, link)
    code, _, err = demo.run("revert", "demo-fix")
    assert swapped and snapshot(outside) == untouched
    assert code == 0, err
    exchange(site / "demo", link)
    assert demo.venv.snapshot() == pristine


def test_a_folder_swapped_before_the_writes_reach_it_is_refused(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Swapped after the plan, before the transaction opens the folder: one line, exit 1,
    nothing changed (and nothing written in the other folder)."""
    from compatkit.env.session import Session

    site = demo.venv.site
    outside = root_only_folder(tmp_path)
    untouched = snapshot(outside)
    link = tmp_path / "link-here"
    link.symlink_to(outside)
    pristine = demo.venv.snapshot()
    real_commit = Session.commit

    def commit(self: Session, changes: list[txn.Change]) -> None:
        exchange(site / "demo", link)
        real_commit(self, changes)

    monkeypatch.setattr(Session, "commit", commit)
    code, _, err = demo.run("apply", "demo-fix")
    assert snapshot(outside) == untouched
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert f"{site / 'demo'}: it is a symlink (was it swapped while compatkit ran?)" in err, err
    assert "nothing was changed" in err, err
    exchange(site / "demo", link)
    assert demo.venv.snapshot() == pristine


# -- the race: another uid swapping while root applies and reverts ---------------------------


@pytest.fixture
def shared() -> Iterator[Path]:
    """A root-owned 0755 folder another user can reach (pytest's tmp_path is root's 0700)."""
    if shutil.which("setpriv") is None or UV is None:
        pytest.skip("needs setpriv and uv")
    base = Path(tempfile.mkdtemp(prefix="compatkit-race-"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base)


def _chown_tree(root: Path, uid: int) -> None:
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            os.lchown(os.path.join(folder, name), uid, uid)
    os.lchown(root, uid, uid)


def _swapper(site: Path, link: Path) -> int:
    """A child that became uid 12345 (the venv's owner) and swaps ``site/demo`` with its link
    ``link`` in bursts (a swap and a swap back, as fast as it can, a few hundred times) with
    quiet gaps of 0 to 4 ms between them, until killed (or 600 s). Swapping without a pause
    made nearly every run see the link while it planned (6 applies in 400 here, none on CI's
    machine); the gaps let some runs through, so that both outcomes are met every time."""
    pid = os.fork()
    if pid:
        return pid
    try:  # the child: only os calls, then _exit
        os.setgroups([])
        os.setgid(ATTACKER)
        os.setuid(ATTACKER)
        a, b = bytes(site / "demo"), bytes(link)
        end = time.monotonic() + 600
        rng = random.Random(os.getpid())
        while time.monotonic() < end:
            for _ in range(rng.randrange(1, 400)):
                _libc.renameat2(_AT_FDCWD, a, _AT_FDCWD, b, _RENAME_EXCHANGE)
                _libc.renameat2(_AT_FDCWD, a, _AT_FDCWD, b, _RENAME_EXCHANGE)
            time.sleep(rng.uniform(0, 0.004))
    finally:
        os._exit(0)


def _pause(pid: int) -> None:
    os.kill(pid, signal.SIGSTOP)
    os.waitpid(pid, os.WUNTRACED)


@root_only
def test_another_user_swapping_a_folder_during_apply_and_revert_never_redirects_a_write(
    shared: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """uid 12345 owns the venv (root names it safe) and swaps demo/ with a link to a root-only
    folder in a loop while root applies and reverts, round after round: the root-only folder
    is never written (before: 2 applies in 40 wrote there and said "applied"), and every run
    either did its whole work or failed with one line, its files as before (after
    ``compatkit recover`` where a journal was kept). CI's reliability session runs it for a
    fixed time; ``COMPATKIT_FULL=1`` for longer."""
    budget, most = (120.0, 2000) if FULL else (25.0, 400)
    wheels = shared / "wheels"
    wheels.mkdir()
    wheel = build_wheel(wheels, "demo", "1.0", DEMO_FILES)
    venv = Venv(shared / "venv")
    subprocess.run([UV or "uv", "venv", "-q", "-p", sys.executable, str(venv.root)], check=True)
    venv.install(wheel, "uv", "--link-mode", "copy")
    patchsets = shared / "patchsets"
    write_patchset(patchsets)
    outside = root_only_folder(shared)
    untouched = snapshot(outside)
    site = venv.site
    link = site / ".demo-swap"
    link.symlink_to(outside)
    _chown_tree(venv.root, ATTACKER)
    monkeypatch.setenv("COMPATKIT_SAFE_ENVIRONMENTS", str(venv.root))
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(shared / "cache"))
    pristine = venv.snapshot()
    base = ["--python", venv.python, "--patchset-dir", str(patchsets)]

    def restore() -> None:
        if (site / "demo").is_symlink():
            exchange(site / "demo", link)

    def run(*args: str) -> tuple[int, str]:
        os.kill(pid, signal.SIGCONT)
        try:
            code, _, err = run_cli(capsys, *base, *args)
        finally:
            _pause(pid)
            restore()
        assert snapshot(outside) == untouched, (args, err, counts)
        lines = err.strip().splitlines()  # one line (and the problems it lists)
        assert code in (0, 1) and "Traceback" not in err, (args, code, err)
        assert all(line.startswith("  - ") for line in lines[1:]), err
        counts["swap_refused"] += "was it swapped while compatkit ran?" in err
        if code == 1 and (site / "demo-1.0.dist-info" / txn.JOURNAL).exists():
            assert run_cli(capsys, *base, "recover")[0] == 0
            counts["recovered"] += 1
        return code, err

    counts = dict.fromkeys(("rounds", "applied", "reverted", "refused", "swap_refused"), 0)
    counts["recovered"] = 0
    applied: dict[str, bytes] | None = None
    pid = _swapper(site, link)
    _pause(pid)
    start = time.monotonic()
    try:
        while time.monotonic() - start < budget and (
            counts["rounds"] < most or not counts["applied"] or not counts["refused"]
        ):
            counts["rounds"] += 1
            code, err = run("apply", "demo-fix")
            if code == 1:
                counts["refused"] += 1
                assert venv.snapshot() == pristine, err
                continue
            counts["applied"] += 1
            applied = applied or venv.snapshot()
            assert venv.snapshot() == applied
            while True:  # revert under the same race until it is done
                code, err = run("revert", "demo-fix")
                if code == 0:
                    break
                counts["refused"] += 1
                assert venv.snapshot() == applied, err
            counts["reverted"] += 1
            assert venv.snapshot() == pristine
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        restore()
    seconds = round(time.monotonic() - start, 1)
    report("security/swap-race", writes_outside=0, seconds=seconds, **counts)
    assert counts["applied"] > 0 and counts["refused"] > 0, counts  # he did get in the way
