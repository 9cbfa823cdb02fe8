"""Real faults under a real transaction: a read-only remount mid-run, a small full tmpfs.

Both need root and mount namespaces (``unshare -m``): each test runs a shell script in its
own mount namespace that bind-mounts (or mounts a tmpfs over) the venv's site-packages, so the
host's mounts are never touched, and the mounts vanish with the namespace.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compatkit.env import txn
from helpers import Demo, can_unshare
from helpers.reliability import CrashTarget, report, snapshot

pytestmark = pytest.mark.skipif(not can_unshare(), reason="needs root and mount namespaces")


def _in_namespace(script: str, tmp: Path) -> str:
    """Run ``script`` (bash) in a new mount namespace; return what it printed."""
    path = tmp / "scenario.sh"
    path.write_text("set -u\n" + script)
    proc = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "bash", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    return proc.stdout


def _cmd(demo: Demo, *args: str) -> str:
    return shlex.join(demo.command(*args))


_DUMP = """
import hashlib, json, pathlib, sys
sys.path.insert(0, sys.argv[1])
from helpers.reliability import snapshot
tree = snapshot(pathlib.Path(sys.argv[2]))
pathlib.Path(sys.argv[3]).write_text(json.dumps({k: hashlib.sha256(v).hexdigest()
                                                 for k, v in tree.items()}))
"""


def _dump(site: Path, out: Path) -> str:
    """A shell command writing the SHA-256 of every file below ``site`` to ``out`` (JSON)."""
    here = str(Path(__file__).parents[1])
    return shlex.join([sys.executable, "-c", _DUMP, here, str(site), str(out)])


def test_read_only_remount_mid_apply_then_recover(demo: Demo, tmp_path: Path) -> None:
    """The disk turns read-only after the first file is written: the apply and its rollback
    both fail; one line says so and what to do; the journal is kept; once the mount is
    writable again, ``compatkit recover`` gives back every byte."""
    site = demo.venv.site
    target = CrashTarget(demo.venv, demo.patchsets, "demo-fix", "demo")
    pristine = target.snap()
    steps = target.count_steps("apply")
    assert target.inproc("revert", "demo-fix").code == 0
    go = tmp_path / "go"
    pause = steps - 2  # the journal is in force and the first files are written
    script = f"""
mount --bind {site} {site}
COMPATKIT_PAUSE_AT={pause}:{go} {_cmd(demo, "apply", "demo-fix")} > {tmp_path}/o1 2> {tmp_path}/e1 &
child=$!
for i in $(seq 1 600); do [ -e {go}.waiting ] && break; sleep 0.05; done
mount -o remount,ro,bind {site}
touch {go}
wait $child; echo "apply=$?"
{_cmd(demo, "status", "demo-fix")} > {tmp_path}/o2 2> {tmp_path}/e2; echo "status=$?"
mount -o remount,rw,bind {site}
{_cmd(demo, "recover")} > {tmp_path}/o3 2> {tmp_path}/e3; echo "recover=$?"
"""
    codes = dict(line.split("=") for line in _in_namespace(script, tmp_path).split())
    assert codes == {"apply": "1", "status": "1", "recover": "0"}, codes
    for err in ((tmp_path / "e1").read_text(), (tmp_path / "e2").read_text()):
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in err, err
        assert "Read-only file system" in err and "compatkit recover demo" in err, err
        assert "the journal" in err and "is kept" in err, err
    assert "rolled back an interrupted compatkit run" in (tmp_path / "o3").read_text()
    assert target.snap() == pristine
    assert not (site / "demo-1.0.dist-info" / txn.JOURNAL).exists()


@pytest.mark.slow
def test_a_full_small_tmpfs_never_leaves_a_mixed_tree(demo: Demo, tmp_path: Path) -> None:
    """site-packages on a 1 MiB tmpfs, filled to leave 0, 4, 8, ... 96 KiB free: every apply
    either completes (then reverts byte-exactly) or is refused with one line and nothing
    changed. Never exit 3, never a mixed tree, never a journal left behind."""
    site = demo.venv.site
    saved = tmp_path / "saved"
    shutil.copytree(site, saved, symlinks=True)
    lines = []
    for kib in range(0, 100, 4):
        lines.append(f"""
mount -t tmpfs -o size=1m tmpfs {site}
cp -a {saved}/. {site}/
fill=$(( $(df -k --output=avail {site} | tail -1) - {kib} ))
[ $fill -gt 0 ] && head -c $((fill * 1024)) /dev/zero > {site}/zz-filler 2>/dev/null
{_cmd(demo, "apply", "demo-fix")} > /dev/null 2> {tmp_path}/err-{kib}
code=$?
rm -f {site}/zz-filler
{_dump(site, tmp_path / f"tree-{kib}.json")}
if [ $code -eq 0 ]; then
  {_cmd(demo, "revert", "demo-fix")} > /dev/null 2>&1; echo "rev-{kib}=$?"
  {_dump(site, tmp_path / f"back-{kib}.json")}
fi
echo "apply-{kib}=$code"
umount {site}
""")
    out = _in_namespace("".join(lines), tmp_path)
    codes = dict(line.split("=") for line in out.split())
    pristine = {k: hashlib.sha256(v).hexdigest() for k, v in snapshot(saved).items()}
    applied = refused = 0
    for free_kib in range(0, 100, 4):
        code = codes[f"apply-{free_kib}"]
        tree = json.loads((tmp_path / f"tree-{free_kib}.json").read_text())
        assert not [k for k in tree if "compatkit-journal" in k or "compatkit-tmp" in k]
        if code == "0":
            applied += 1
            assert tree != pristine
            assert codes[f"rev-{free_kib}"] == "0"
            assert json.loads((tmp_path / f"back-{free_kib}.json").read_text()) == pristine
            continue
        refused += 1
        err = (tmp_path / f"err-{free_kib}").read_text()
        assert code == "1" and "No space left on device" in err, (free_kib, code, err)
        assert "nothing was changed" in err and len(err.strip().splitlines()) == 1, err
        assert tree == pristine, free_kib
    assert applied and refused, (applied, refused)
    report("faults/full-tmpfs", applied=applied, refused=refused)
