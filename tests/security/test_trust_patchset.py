"""Every part of a patchset obeys the trust rule, and the folder checked is the folder read
(issue 34, items 1 and 2; docs/security.md, "Configuration and patchset folders").

Another user is uid 12345: his files are a ``chown`` (the tests run as root), and the user who
flips a link while root loads the patchset is a forked child that became him.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from compatkit.errors import UsageError
from compatkit.load.registry import Registry
from compatkit.load.validate import validate
from helpers import PATCH_GREET, UV, Demo, root_only, run_cli, write_patchset

OTHER = 12345
EVIL_GREET = PATCH_GREET.replace("'hi ' + name", "'pwned ' + name")
MARK = "compatkit-trust-test-ran-as-root"


def _chown_tree(path: Path, uid: int = OTHER) -> None:
    for folder, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            os.lchown(os.path.join(folder, name), uid, uid)
    os.lchown(path, uid, uid)


def _refusal(err: str, code: int) -> tuple[str, list[str]]:
    """The error line of a refusal and the paths it lists (one: on the line itself)."""
    lines = err.splitlines()
    assert code == 2 and lines and lines[0].startswith("compatkit: error: "), (code, err)
    assert "Traceback" not in err and "refused" in lines[0], err
    listed = [line[4:].rsplit(": ", 1)[0] for line in lines[1:]]
    assert all(line.startswith("  - ") for line in lines[1:]), err
    return lines[0], listed


def _fix(line: str) -> str:
    """The command a refusal says fixes every part it names."""
    match = re.search(r"; fix: (.*?)(?:; then move .*)?$", line)
    assert match is not None, line
    return match.group(1)


def _greet(demo: Demo) -> str:
    return (demo.venv.site / "demo" / "greet.py").read_text()


@pytest.fixture
def umask_002() -> Iterator[None]:
    old = os.umask(0o002)
    try:
        yield
    finally:
        os.umask(old)


def _made_under_umask_002(base: Path) -> Path:
    """A patchset ``tk`` in ``base`` made as ``umask 002`` leaves it: every folder 775, every
    file 664 (what a shared build account's default gives)."""
    old = os.umask(0o002)
    try:
        base.mkdir()
        write_patchset(base, name="tk")
    finally:
        os.umask(old)
    return base / "tk"


@root_only
def test_umask_002_every_part_at_once_and_one_fix_is_enough(demo: Demo, tmp_path: Path) -> None:
    """The issue's case: the old refusal named only ``ps`` and ``ps/tk``; after ``chmod g-w
    ps ps/tk``, apply wrote the group-writable patches into site-packages. Now every part is
    named at once, and running the printed command once gives a patchset that applies."""
    base = tmp_path / "ps"
    tk = _made_under_umask_002(base)
    before = demo.venv.snapshot()
    parts = [
        base,
        tk,
        tk / "patchset.toml",
        tk / "patches",
        tk / "patches" / "0001.patch",
        tk / "patches" / "0002.patch",
        tk / "smoke",
        tk / "smoke" / "test_patch_1.py",
        tk / "smoke" / "test_patch_2.py",
    ]
    code, _, err = demo.run("--patchset-dir", str(base), "apply", "tk")
    line, listed = _refusal(err, code)
    assert sorted(listed) == sorted(map(str, parts)), err
    assert demo.venv.snapshot() == before

    subprocess.run(["chmod", "g-w", str(base), str(tk)], check=True)  # the old advice
    code, _, err = demo.run("--patchset-dir", str(base), "apply", "tk")
    line, listed = _refusal(err, code)
    assert sorted(listed) == sorted(map(str, parts[2:])), err
    assert "writable by its group" in err and "chmod g-w,o-w" in line
    assert demo.venv.snapshot() == before

    subprocess.run(_fix(line), shell=True, check=True)  # the advice, followed once
    code, _, err = demo.run("--patchset-dir", str(base), "apply", "tk")
    assert code == 0, err
    assert "hi " in _greet(demo)


def _add_pytest(demo: Demo) -> None:
    if UV is None:
        pytest.skip("needs uv")
    cmd = [UV, "pip", "install", "-q", "--python", demo.venv.python, "pytest"]
    subprocess.run(cmd, check=True)


def _evil_smoke(marker: Path) -> str:
    return f"open({str(marker)!r}, 'w').write('ran')\n\ndef test_polite():\n    pass\n"


@root_only
@pytest.mark.slow
def test_a_group_writable_smoke_test_never_runs(demo: Demo, tmp_path: Path) -> None:
    """Before: a group member rewrote ``smoke/test_patch_1.py`` (group-writable under umask
    002, after the advised ``chmod g-w ps ps/tk``) and ``compatkit smoke`` ran it as root."""
    _add_pytest(demo)
    base = tmp_path / "ps"
    tk = _made_under_umask_002(base)
    subprocess.run(["chmod", "g-w", str(base), str(tk)], check=True)
    marker = tmp_path / MARK
    (tk / "smoke" / "test_patch_1.py").write_text(_evil_smoke(marker))
    code, _, err = demo.run("--patchset-dir", str(base), "smoke", "tk")
    _, listed = _refusal(err, code)
    assert str(tk / "smoke" / "test_patch_1.py") in listed, err
    assert not marker.exists()


@root_only
@pytest.mark.slow
def test_a_conftest_above_the_patchset_never_runs(demo: Demo, tmp_path: Path) -> None:
    """Before: pytest ran with ``-c /dev/null``, which loads a ``conftest.py`` from every folder
    up to ``/``: another user's in a sticky shared folder above the patchsets ran as root."""
    _add_pytest(demo)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # like /tmp: our own folder in it is fine
    mine = shared / "mine"
    write_patchset(mine)
    marker = tmp_path / MARK
    (shared / "conftest.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    os.chown(shared / "conftest.py", OTHER, OTHER)
    code, _, err = run_cli(
        demo.capsys, "--python", demo.venv.python, "--patchset-dir", str(mine), "smoke",
        "demo-fix",
    )  # fmt: skip
    assert code in (0, 1) and "Traceback" not in err, err
    assert not marker.exists()


@root_only
def test_a_project_whose_patches_folder_is_another_users(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``patchset-dirs`` project: the folders are root's, the patchset's ``patches/`` (and
    what is in it) is uid 12345's. Before: applied; now refused with the ``chown`` that fixes
    it, and after that the project applies."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[tool.compatkit]\npatchsets = ["mine"]\npatchset-dirs = ["patchsets"]\n'
    )
    mine = write_patchset(project / "patchsets", name="mine")
    (mine / "patches" / "0001.patch").write_text(EVIL_GREET)  # what he made of it
    _chown_tree(mine / "patches")
    monkeypatch.chdir(project)
    before = demo.venv.snapshot()
    code, _, err = run_cli(demo.capsys, "--python", demo.venv.python, "apply")
    line, listed = _refusal(err, code)
    patches = mine / "patches"
    assert sorted(listed) == sorted(map(str, [patches, *patches.iterdir()])), err
    assert f"owned by uid {OTHER}" in err and "chown root" in line, err
    assert demo.venv.snapshot() == before
    (patches / "0001.patch").write_text(PATCH_GREET)  # root looked at it
    subprocess.run(_fix(line), shell=True, check=True)
    code, _, err = run_cli(demo.capsys, "--python", demo.venv.python, "apply")
    assert code == 0, err
    assert "hi " in _greet(demo)


@root_only
def test_a_foreign_and_a_writable_part_one_command_for_both(tmp_path: Path) -> None:
    """A smoke test another user owns and a patch file anybody may write: one refusal names
    both, its command (``chown`` and ``chmod``) fixes both; a sibling's own untrusted part
    does not stand in the way of this one."""
    base = tmp_path / "ps"
    one, two = write_patchset(base, name="one"), write_patchset(base, name="two")
    os.chown(one / "smoke" / "test_patch_2.py", OTHER, OTHER)
    (one / "patches" / "0002.patch").chmod(0o666)
    (two / "smoke" / "test_patch_1.py").chmod(0o664)
    with pytest.raises(UsageError) as refused:
        Registry([base]).get("one")
    listed = [p.rsplit(": ", 1)[0] for p in refused.value.problems]
    assert sorted(listed) == [
        str(one / "patches" / "0002.patch"),
        str(one / "smoke" / "test_patch_2.py"),
    ]
    line = refused.value.message
    assert "chown root" in line and "chmod g-w,o-w" in line, line
    subprocess.run(_fix(line), shell=True, check=True)
    assert Registry([base]).get("one").ids == ["patch-1", "patch-2"]
    with pytest.raises(UsageError, match=r"test_patch_1\.py is writable by its group"):
        Registry([base]).get("two")


@root_only
def test_parts_that_are_links_or_foreign_are_each_refused(tmp_path: Path) -> None:
    """``patchset.toml`` or a file in ``smoke/`` that is a link (pytest would follow it), a
    ``__pycache__`` another user owns, a patch file writable by others: each named."""
    root = write_patchset(tmp_path / "ps")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "helper.py").write_text("x = 1\n")
    (root / "smoke" / "helper.py").symlink_to(elsewhere / "helper.py")
    cache = root / "smoke" / "__pycache__"
    cache.mkdir()
    os.chown(cache, OTHER, OTHER)
    (root / "patches" / "0001.patch").chmod(0o646)
    toml = root / "patchset.toml"
    toml.rename(elsewhere / "patchset.toml")
    toml.symlink_to(elsewhere / "patchset.toml")
    checked = validate(root, deep=True)
    found = {f.path: f.why for f in checked.untrusted}
    assert set(found) == {
        str(root / "smoke" / "helper.py"),
        str(cache),
        str(toml),
        str(root / "patches" / "0001.patch"),
    }, found
    assert found[str(toml)] == "a symbolic link (replace it with a copy)"
    assert found[str(cache)] == f"owned by uid {OTHER} (not you or root)"
    assert found[str(root / "patches" / "0001.patch")] == "writable by others"
    assert sum(str(toml) in p for p in checked.problems) == 1, checked.problems  # lint says it


def test_a_smoke_package_judges_the_folders_its_tests_import_from(tmp_path: Path) -> None:
    """With ``smoke/__init__.py`` pytest puts the patchset folder itself on ``sys.path``: what
    lies there is importable by the tests, so it is judged too (and only then)."""
    root = write_patchset(tmp_path / "ps")
    helper = root / "helpers.py"
    helper.write_text("x = 1\n")
    helper.chmod(0o666)
    assert validate(root).untrusted == []  # not read: nothing imports from here
    (root / "smoke" / "__init__.py").write_text("")
    found = {f.path: f.why for f in validate(root).untrusted}
    assert found == {str(helper): "writable by others"}, found


# --- the folder checked is the folder read (links) ----------------------------------------


@pytest.fixture
def world() -> Iterator[Path]:
    """A root-owned 0755 folder uid 12345 may enter (pytest's own tmp_path is 0700), holding
    root's good ``demo-fix`` in ``good/`` and uid 12345's folder ``eve/`` with his own
    ``demo-fix`` (it says "pwned") in ``eve/evil/``."""
    top = Path(tempfile.mkdtemp(prefix="compatkit-trust-"))
    top.chmod(0o755)
    write_patchset(top / "good")
    write_patchset(top / "eve" / "evil", patches={"0001.patch": EVIL_GREET})
    _chown_tree(top / "eve")
    yield top
    shutil.rmtree(top)


def _apply(demo: Demo, patchsets: Path) -> tuple[int, str]:
    code, _, err = run_cli(
        demo.capsys, "--python", demo.venv.python, "--patchset-dir", str(patchsets), "apply",
        "demo-fix",
    )  # fmt: skip
    return code, err


@root_only
def test_a_link_in_another_users_folder_is_refused(demo: Demo, world: Path) -> None:
    """His link points at root's own good patchset, yet he may repoint it at any time: the
    folder that holds a link is judged like every folder on the way. Before: accepted."""
    link = world / "eve" / "link"
    link.symlink_to(world / "good")
    os.lchown(link, OTHER, OTHER)
    before = demo.venv.snapshot()
    code, err = _apply(demo, link)
    line, listed = _refusal(err, code)
    assert str(world / "eve") in line + "".join(listed), err
    assert f"owned by uid {OTHER}" in err
    assert demo.venv.snapshot() == before


@root_only
def test_a_link_in_a_trusted_folder_is_read_through_its_resolved_path(
    demo: Demo, world: Path
) -> None:
    """A link in root's own folder is fine, and what is read is the folder it was resolved to."""
    (world / "links").mkdir()
    link = world / "links" / "ps"
    link.symlink_to(world / "good")
    ps = Registry([link]).get("demo-fix")
    assert ps.root == world / "good" / "demo-fix"
    assert all(p.path.parent == world / "good" / "demo-fix" / "patches" for p in ps.patches)
    assert _apply(demo, link)[0] == 0 and "hi " in _greet(demo)


def _flipper(link: Path, targets: tuple[Path, Path]) -> int:
    """A child that became uid 12345 and repoints ``link`` (in his own folder) between the two
    targets as fast as it can, until killed (or 300 s)."""
    pid = os.fork()
    if pid:
        return pid
    try:  # the child: only os calls, then _exit
        os.setgroups([])
        os.setgid(OTHER)
        os.setuid(OTHER)
        spare, i, end = f"{link}.new", 0, time.monotonic() + 300
        while time.monotonic() < end:
            os.symlink(targets[i % 2], spare)
            os.replace(spare, link)
            i += 1
    finally:
        os._exit(0)


@root_only
def test_a_link_flipped_between_good_and_evil_never_applies_his_patch(
    demo: Demo, world: Path
) -> None:
    """Before: root's apply through a link uid 12345 flipped applied his patch in about one run
    of six (the resolved folder was checked, the link read). Now, in 100 applies and 300 loads
    while he flips it, his patch is applied and loaded 0 times."""
    link = world / "eve" / "link"
    link.symlink_to(world / "good")
    os.lchown(link, OTHER, OTHER)
    pid = _flipper(link, (world / "good", world / "eve" / "evil"))
    evil, outcomes, seen = 0, set(), set()
    try:
        for _ in range(100):
            code = _apply(demo, link)[0]
            outcomes.add(code)
            seen.add(os.readlink(link))
            if "pwned" in _greet(demo):
                evil += 1
                break
            if code == 0:  # applied root's good one: take it back for the next run
                assert _apply_revert(demo, world / "good") == 0
        for _ in range(300):
            try:
                ps = Registry([link]).get("demo-fix")
            except UsageError:
                continue
            evil += any("pwned" in p.diff_text for p in ps.patches)
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert evil == 0
    assert seen == {str(world / "good"), str(world / "eve" / "evil")}  # he did flip it
    assert outcomes == {2}, outcomes  # refused every time: his folder holds the link


def _apply_revert(demo: Demo, patchsets: Path) -> int:
    return run_cli(
        demo.capsys, "--python", demo.venv.python, "--patchset-dir", str(patchsets), "revert",
        "demo-fix",
    )[0]  # fmt: skip
