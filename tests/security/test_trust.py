"""Ownership boundaries (compatkit.load.trust): configuration found by walking up,
``--patchset-dir`` and ``patchset-dirs`` folders are obeyed only if the user or root owns them
and nobody else may write them. Each attack is staged with files another user (uid 12345) owns:
the tests run as root in CI, so "another user" is a ``chown``; the cases that need compatkit
itself to run as somebody else use ``setpriv``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from compatkit.load.trust import why_untrusted
from helpers import Demo, root_only, write_patchset

OTHER = 12345
SRC = Path(__file__).resolve().parents[2] / "src"


def _chown_tree(path: Path, uid: int = OTHER) -> None:
    for folder, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            os.lchown(os.path.join(folder, name), uid, uid)
    os.lchown(path, uid, uid)


def _project(folder: Path, patchsets: list[str], dirs: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    names = ", ".join(f'"{n}"' for n in patchsets)
    entries = ", ".join(f'"{d}"' for d in dirs)
    path = folder / "pyproject.toml"
    path.write_text(f"[tool.compatkit]\npatchsets = [{names}]\npatchset-dirs = [{entries}]\n")
    return path


def _one_line(err: str, code: int) -> str:
    lines = [line for line in err.splitlines() if not line.startswith("compatkit: warning:")]
    assert code in (1, 2) and len(lines) == 1 and "Traceback" not in err, (code, err)
    return lines[0]


def _refused(err: str, code: int) -> str:
    """The error line of a refusal that may list every part another user may change below it
    (``  - PATH: WHY`` lines)."""
    listed = [line for line in err.splitlines() if line.startswith("  - ")]
    rest = "\n".join(line for line in err.splitlines() if not line.startswith("  - "))
    line = _one_line(rest, code)
    assert len(listed) != 1, err  # one part is said on the line itself
    return line


@pytest.fixture
def attacker(demo: Demo, tmp_path: Path) -> Path:
    """A folder uid 12345 owns, with a pyproject.toml naming its own patchset ``evil`` (it
    applies cleanly to demo 1.0), and a root-owned project folder below it."""
    top = tmp_path / "shared"
    _project(top, ["evil"], ["patches"])
    write_patchset(top / "patches", name="evil")
    _chown_tree(top)
    victim = top / "victim"
    victim.mkdir()
    os.chown(victim, 0, 0)
    return victim


def test_policy() -> None:
    """The rule itself, on modes and owners (euid 1000)."""
    assert why_untrusted(0o40755, 1000, euid=1000) is None
    assert why_untrusted(0o40755, 0, euid=1000) is None  # root's parents are fine
    assert why_untrusted(0o40755, 1001, euid=1000) == "owned by uid 1001 (not you or root)"
    assert why_untrusted(0o40775, 1000, euid=1000) == "writable by its group"
    assert why_untrusted(0o100666, 1000, euid=1000) == "writable by others"
    assert why_untrusted(0o41777, 0, euid=1000) == "writable by others"  # in /tmp itself
    assert why_untrusted(0o41777, 0, euid=1000, above=True) is None  # /tmp above ours
    assert why_untrusted(0o40777, 0, euid=1000, above=True) == "writable by others"


@root_only
def test_a_parent_pyproject_of_another_user_is_not_obeyed(
    demo: Demo, attacker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: ``compatkit apply`` here applied the other user's ``evil`` patchset."""
    monkeypatch.chdir(attacker)
    before = demo.venv.snapshot()
    code, _, err = demo.run("apply")
    assert "warning: ignoring" in err and f"owned by uid {OTHER}" in err, err
    assert "needs a patchset name" in _one_line(err, code)
    assert demo.venv.snapshot() == before
    code, _, err = demo.run("verify")  # the project set is not taken from there either
    assert "evil" not in err.replace(str(attacker.parent), ""), err


@root_only
@pytest.mark.parametrize("how", ["file owner", "file mode", "folder mode", "sticky folder"])
def test_a_pyproject_others_may_change_is_not_obeyed(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    folder = tmp_path / "proj"
    path = _project(folder, ["demo-fix"], [])
    if how == "file owner":
        os.chown(path, OTHER, OTHER)
    elif how == "file mode":
        path.chmod(0o666)
    else:  # anybody may put a pyproject.toml in there: /tmp itself, or a 0777 folder
        folder.chmod(0o1777 if how == "sticky folder" else 0o777)
        os.chown(path, OTHER, OTHER)
    monkeypatch.chdir(folder)
    before = demo.venv.snapshot()
    code, _, err = demo.run("apply")
    assert f"compatkit: warning: ignoring {path}" in err, err
    assert "needs a patchset name" in _one_line(err, code)
    assert demo.venv.snapshot() == before


@root_only
def test_a_project_below_a_sticky_folder_is_obeyed(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Like ~/proj below /tmp: the walk stops at the sticky folder, after finding ours."""
    shared = tmp_path / "tmp"
    shared.mkdir(mode=0o1777)
    shared.chmod(0o1777)
    folder = shared / "proj"
    _project(folder, ["demo-fix"], [])
    _project(shared, ["evil"], [])  # above ours: never reached
    monkeypatch.chdir(folder)
    code, _, err = demo.run("apply")
    assert code == 0 and "warning" not in err, err
    assert "hi " in (demo.venv.site / "demo" / "greet.py").read_text()


@root_only
@pytest.mark.parametrize("how", ["owner", "patchset owner", "group-writable", "inside 0777"])
def test_a_patchset_dir_others_may_change_is_refused(demo: Demo, tmp_path: Path, how: str) -> None:
    top = tmp_path / "top"
    folder = top / "ps"
    write_patchset(folder, name="evil")
    if how == "owner":
        _chown_tree(folder)
    elif how == "patchset owner":
        _chown_tree(folder / "evil")
    elif how == "group-writable":
        folder.chmod(0o775)
    else:
        top.chmod(0o777)
    before = demo.venv.snapshot()
    code, _, err = demo.run("--patchset-dir", str(folder), "apply", "evil")
    line = _refused(err, code)
    assert code == 2 and "refused" in line and "could be anyone's" in line, err
    assert demo.venv.snapshot() == before
    top.chmod(0o1777)  # a sticky folder above is fine (nobody may replace ours)
    if how == "inside 0777":
        assert demo.run("--patchset-dir", str(folder), "apply", "evil")[0] == 0


@root_only
def test_a_patchset_dirs_entry_of_another_user_is_refused(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "proj"
    _project(folder, ["evil"], ["patches"])
    write_patchset(folder / "patches", name="evil")
    _chown_tree(folder / "patches")
    monkeypatch.chdir(folder)
    before = demo.venv.snapshot()
    code, _, err = demo.run("apply")
    line = _refused(err, code)
    assert "patchset-dirs entry 'patches'" in line and f"uid {OTHER}" in err, err
    assert demo.venv.snapshot() == before


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ("/etc", "is absolute"),
        ("~/patches", "is absolute"),
        ("../patches", "contains '..'"),
        ("sub/../../patches", "contains '..'"),
        ("", "is empty or not printable"),
        ("a\\u001b[31m", "is empty or not printable"),
        ("link", "resolves outside the project folder"),
        ("x" * 5000, "File name too long"),
        ("/".join(["d"] * 3000), "No such file or directory"),
    ],
)
def test_patchset_dirs_entries_stay_inside_the_project(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str, why: str
) -> None:
    """The documented rule (docs/security.md): relative to the pyproject.toml, no ``..``, and
    inside the project folder once links are resolved; use --patchset-dir for elsewhere."""
    outside = tmp_path / "patches"
    write_patchset(outside, name="evil")
    folder = tmp_path / "proj"
    _project(folder, ["evil"], [entry])
    (folder / "link").symlink_to(outside)
    monkeypatch.chdir(folder)
    before = demo.venv.snapshot()
    code, _, err = demo.run("apply")
    line = _one_line(err, code)
    assert why in line and len(line) < 400, err
    assert demo.venv.snapshot() == before


def test_a_pyproject_nested_thousands_deep(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    deep = "[tool.compatkit]\npatchsets = " + "[" * 5000 + "]" * 5000 + "\n"
    (folder / "pyproject.toml").write_text(deep)
    monkeypatch.chdir(folder)
    code, _, err = demo.run("status")
    assert code == 1 and "nested too deeply" in _one_line(err, code)
    table = "[tool.compatkit]\nx = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n"
    (folder / "pyproject.toml").write_text(table)
    code, _, err = demo.run("status")
    assert code == 1 and "pyproject.toml" in _one_line(err, code)


def test_a_pyproject_that_is_a_fifo_does_not_hang(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    fifo = folder / "pyproject.toml"
    os.mkfifo(fifo)
    monkeypatch.chdir(folder)
    code, _, err = demo.run("status")  # found walking up: not a file, passed over
    assert code == 0, err
    code, _, err = demo.run("--config", str(fifo), "status")
    assert code == 2 and str(fifo) in _one_line(err, code)


# --- compatkit itself run as another user (setpriv) ---------------------------------------


def _as_other(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m compatkit ARGS`` as uid/gid 12345 with no groups, or skip."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv")
    drop = ["setpriv", "--reuid", str(OTHER), "--regid", str(OTHER), "--clear-groups"]
    site = [p for p in sys.path if p.endswith("site-packages")]
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": os.pathsep.join([str(SRC), *site]),
        "COMPATKIT_NO_CACHE": "1",
        "HOME": str(cwd),
    }
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    for python in (sys.executable, f"/usr/bin/{version}", f"/usr/local/bin/{version}"):
        probe = [*drop, python, "-c", "import compatkit.cli.main"]
        if subprocess.run(probe, env=env, cwd=cwd, capture_output=True).returncode == 0:
            command = [*drop, python, "-m", "compatkit", *args]
            return subprocess.run(
                command, env=env, cwd=cwd, capture_output=True, text=True, timeout=120
            )
    pytest.skip(f"no Python {version} that uid {OTHER} may run")


@pytest.fixture
def world() -> Iterator[Path]:
    """A root-owned 0755 folder uid 12345 may enter (pytest's own tmp_path is 0700)."""
    top = Path(tempfile.mkdtemp(prefix="compatkit-trust-"))
    top.chmod(0o755)
    yield top
    shutil.rmtree(top)


def test_a_root_owned_parent_is_fine_for_another_user(world: Path) -> None:
    home = world / "home"
    _project(home, ["mine"], ["patches"])
    write_patchset(home / "patches", name="mine")
    _chown_tree(home)
    result = _as_other("--json", "list", cwd=home)
    assert result.returncode == 0 and '"mine"' in result.stdout, result.stderr
    assert "warning" not in result.stderr


def test_root_owned_config_of_another_uid_is_not_obeyed_by_a_user(world: Path) -> None:
    """uid 12345 under a folder of uid 12346: that user's pyproject.toml is passed over."""
    theirs = world / "theirs"
    _project(theirs, ["evil"], ["patches"])
    write_patchset(theirs / "patches", name="evil")
    _chown_tree(theirs, OTHER + 1)
    mine = theirs / "mine"
    mine.mkdir()
    _chown_tree(mine)
    theirs.chmod(0o755)
    result = _as_other("--json", "list", cwd=mine)
    assert result.returncode == 0, result.stderr
    assert '"evil"' not in result.stdout and f"owned by uid {OTHER + 1}" in result.stderr


@pytest.mark.parametrize("mode", [0o000, 0o300, 0o600])
def test_an_unreadable_patchset_dir_as_another_user(world: Path, mode: int) -> None:
    """Its own folder, but without read or search permission (root would read it anyway)."""
    folder = world / "ps"
    write_patchset(folder, name="mine")
    _chown_tree(folder)
    folder.chmod(mode)
    result = _as_other("--patchset-dir", str(folder), "status", "mine", cwd=world)
    assert result.returncode == 2, result.stderr
    assert _one_line(result.stderr, 2).startswith("compatkit: error: ")
    assert "Permission denied" in result.stderr


def test_an_unreadable_patch_file_as_another_user(world: Path) -> None:
    folder = world / "ps"
    write_patchset(folder, name="mine")
    _chown_tree(folder)
    (folder / "mine" / "patches" / "0001.patch").chmod(0o000)
    (folder / "mine").chmod(0o700)
    result = _as_other("--patchset-dir", str(folder), "status", "mine", cwd=world)
    assert result.returncode in (1, 2) and "Permission denied" in result.stderr, result.stderr
    _one_line(result.stderr, result.returncode)
