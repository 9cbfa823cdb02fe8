"""Runtime folders are trusted only when the effective user (or root) owns them and nobody else
can write them; nothing is reached through a link; sitecustomize.py keeps the user's lines
(docs/security.md, "Runtime folders"). Attacks by another user run as a spare uid."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from helpers import Demo

ATTACKER = 12345
PROBE = "import demo.greet; print(demo.greet.hello('x'))"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return {**env, "COMPATKIT_CACHE_DIR": str(tmp_path / "cache"), **extra}


def run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def as_attacker(*cmd: str) -> None:
    """Run ``cmd`` as the spare uid (no groups), as another local user would."""
    ids = ["--reuid", str(ATTACKER), "--regid", str(ATTACKER), "--clear-groups"]
    subprocess.run(["setpriv", *ids, *cmd], check=True, capture_output=True)


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def shared() -> Iterator[Path]:
    """A root-owned 0755 folder another user can reach (pytest's tmp_path is root's 0700)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to act as another user")
    base = Path(tempfile.mkdtemp(prefix="compatkit-shared-"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base)


def test_a_dir_that_is_a_link_is_refused(demo: Demo, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / "rt"
    link.symlink_to(target)
    code, _, err = demo.run("runtime", "install", "demo-fix", "--dir", str(link))
    assert code == 1 and err.strip().splitlines() == [
        f"compatkit: error: refusing the runtime folder: {link} is a symbolic link; "
        "use a folder only you can write"
    ]
    assert list(target.iterdir()) == []


def test_a_link_inside_the_folder_is_never_followed(demo: Demo, tmp_path: Path) -> None:
    root = tmp_path / "rt"
    assert demo.run("runtime", "install", "demo-fix", "--dir", str(root))[0] == 0
    victim = tmp_path / "victim"
    (victim / "keep").mkdir(parents=True)
    (victim / "keep" / "data.txt").write_text("precious\n")
    src = root / "_compatkit_runtime" / "src"
    shutil.rmtree(src)
    src.symlink_to(victim)  # an update used to empty every folder it found here
    for args in (["runtime", "install", "demo-fix"], ["runtime", "uninstall"]):
        code, _, err = demo.run(*args, "--dir", str(root))
        assert code == 1 and f"{src} is a symbolic link" in err, err
        assert len(err.strip().splitlines()) == 1
    assert (victim / "keep" / "data.txt").read_text() == "precious\n"
    code, _, err = demo.run("runtime", "verify", "--dir", str(root))
    assert code == 1 and f"{src} is a symbolic link" in err


@pytest.mark.parametrize("version", [(3, 10), (3, 11)])
def test_a_tree_is_removed_through_fds_without_following_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: tuple[int, int]
) -> None:
    """shutil.rmtree by the folder's descriptor (3.11+) or by the path of its descriptor
    (3.10, which lacks rmtree's dir_fd) removes a folder with all in it, and the links in it,
    never what a link points to (the runtime folder's removal and a transaction's, one
    function)."""
    from compatkit.env import beneath

    if version < (3, 11):
        monkeypatch.setattr(beneath, "sys", SimpleNamespace(version_info=version))
    elif sys.version_info < (3, 11):
        pytest.skip("shutil.rmtree has no dir_fd before 3.11")
    victim = tmp_path / "victim"
    (victim / "keep").mkdir(parents=True)
    (victim / "keep" / "data.txt").write_text("precious\n")
    top = tmp_path / "top"
    tree = top / "tree"
    (tree / "a" / "b").mkdir(parents=True)
    (tree / "a" / "b" / "f.py").write_text("x = 1\n")
    (tree / "g.py").write_text("y = 2\n")
    (tree / "a" / "to-dir").symlink_to(victim)
    (tree / "to-file").symlink_to(victim / "keep" / "data.txt")
    (top / "link").symlink_to(tree)
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(OSError):  # the folder named is a link: refused, nothing removed
            beneath.rmtree_at(fd, "link")
        assert (tree / "g.py").exists()
        beneath.rmtree_at(fd, "tree")
    finally:
        os.close(fd)
    assert sorted(p.name for p in top.iterdir()) == ["link"]
    assert (victim / "keep" / "data.txt").read_text() == "precious\n"


def test_a_folder_swapped_inside_an_open_runtime_folder_fails_the_write_as_a_swap(
    tmp_path: Path,
) -> None:
    """A runtime folder reaches its files through the transaction's descriptor walk
    (compatkit.env.beneath): a folder inside it swapped for a link after the folder was
    checked fails a write with beneath's own error, naming the whole path and the swap
    (before: its own walk's bare ELOOP naming ``data`` alone), and nothing reaches the link's
    target; a folder it already reached stays the one written, wherever it was moved."""
    from compatkit.env.beneath import Swapped
    from compatkit.runtime.folder import Folder

    root, victim = tmp_path / "rt", tmp_path / "victim"
    victim.mkdir()
    with Folder.create(root) as folder:
        folder.write("src/a.py", b"a = 1\n")
        (root / "data").mkdir()
        (root / "data").rename(root / "moved")
        (root / "data").symlink_to(victim)
        with pytest.raises(Swapped) as caught:
            folder.write("data/b.py", b"b = 2\n")
        assert caught.value.filename == str(root / "data"), caught.value
        assert "was it swapped while compatkit ran?" in str(caught.value)
        (root / "src").rename(root / "src-moved")
        (root / "src").symlink_to(victim)
        folder.write("src/c.py", b"c = 3\n")  # src was reached: the same folder, moved
        with pytest.raises(Swapped):
            folder.read("data/b.py")
        assert folder.names("src") == ["a.py", "c.py"]
    assert list(victim.iterdir()) == []
    assert sorted(p.name for p in (root / "src-moved").iterdir()) == ["a.py", "c.py"]


def test_another_users_folder_is_refused_and_their_code_never_runs(
    demo: Demo, tmp_path: Path, shared: Path
) -> None:
    root = shared / "rt"
    root.mkdir()
    os.chown(root, ATTACKER, ATTACKER)  # the attacker's own folder
    code, _, err = demo.run("runtime", "install", "demo-fix", "--dir", str(root))
    assert code == 1 and f"{root} is owned by another user (uid {ATTACKER})" in err
    assert list(root.iterdir()) == []
    os.chown(root, 0, 0)
    for mode in (0o777, 0o775):  # writable by everyone, or by a group
        root.chmod(mode)
        code, _, err = demo.run("runtime", "install", "demo-fix", "--dir", str(root))
        assert code == 1 and "is writable by others" in err, err
        assert list(root.iterdir()) == []
    above = shared / "above"
    above.mkdir()
    os.chown(above, ATTACKER, ATTACKER)  # a folder above it the attacker can rename things in
    code, _, err = demo.run("runtime", "install", "demo-fix", "--dir", str(above / "rt"))
    assert code == 1 and f"{above} is owned by another user" in err
    assert not (above / "rt").exists()


@pytest.mark.parametrize("pth", [False, True], ids=["pythonpath", "pth"])
def test_the_hook_refuses_a_folder_made_writable_after_install(
    demo: Demo, tmp_path: Path, shared: Path, pth: bool
) -> None:
    root = shared / "rt"
    args = ["runtime", "install", "demo-fix", "--dir", str(root), *(["--pth"] if pth else [])]
    assert demo.run(*args)[0] == 0
    env = _env(tmp_path, **({} if pth else {"PYTHONPATH": str(root)}))
    assert run([demo.venv.python, "-c", PROBE], env).stdout.strip() == "hi x"
    root.chmod(0o777)  # a careless chmod; then another user swaps the hook's code
    pwned = shared / "pwned"
    (hook,) = root.glob("_compatkit_hook_*.py")
    evil = f"open({str(pwned)!r}, 'w').write('ran')\ndef start(*a):\n    pass\n"
    as_attacker("sh", "-c", f'rm -f {hook} && printf %s "$0" > {hook}', evil)
    proc = run([demo.venv.python, "-c", PROBE], env)
    assert proc.returncode == 1 and proc.stdout == ""
    assert not pwned.exists()  # the attacker's code never ran as root
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("compatkit runtime: refusing to start: ")
    assert f"{root} is writable by others" in line and "demo.greet" in line


def test_control_characters_and_site_packages_are_refused(demo: Demo, tmp_path: Path) -> None:
    evil = str(tmp_path / "rt\nimport os; os.system('touch /tmp/x')")
    code, _, err = demo.run("runtime", "install", "demo-fix", "--dir", evil, "--pth")
    assert code == 2 and "has a control character ('\\n')" in err
    assert len(err.strip().splitlines()) == 1
    assert not list(demo.venv.site.glob("00-compatkit-runtime.*"))
    assert not list(tmp_path.glob("rt*"))
    inside = demo.venv.site / "ck-hook"
    code, _, err = demo.run("runtime", "install", "demo-fix", "--dir", str(inside))
    assert code == 2 and "is inside site-packages" in err and "compatkit wheel" in err
    assert not inside.exists()


USER_LINES = "import builtins\nbuiltins.MINE = 'mine'\n"
MINE = "import builtins, demo.greet as g; print(getattr(builtins, 'MINE', '-'), g.hello('x'))"


def test_sitecustomize_keeps_the_users_lines(demo: Demo, tmp_path: Path) -> None:
    root = tmp_path / "rt"
    root.mkdir()
    site = root / "sitecustomize.py"
    site.write_text(USER_LINES)
    env = _env(tmp_path, PYTHONPATH=str(root))
    for _ in range(2):  # install, then re-install
        assert demo.run("runtime", "install", "demo-fix", "--dir", str(root))[0] == 0
        assert site.read_text().endswith(USER_LINES)
        assert run([demo.venv.python, "-c", MINE], env).stdout.strip() == "mine hi x"
    assert demo.run("runtime", "verify", "--dir", str(root))[0] == 0
    code, out, _ = demo.run("runtime", "uninstall", "--dir", str(root))
    assert code == 0 and "removed" in out
    assert site.read_text() == USER_LINES  # exactly what the user had
    assert run([demo.venv.python, "-c", MINE], env).stdout.strip() == "mine hello x"


def test_uninstall_after_the_user_edited_sitecustomize_leaves_no_dangling_import(
    demo: Demo, tmp_path: Path
) -> None:
    root = tmp_path / "rt"
    assert demo.run("runtime", "install", "demo-fix", "--dir", str(root))[0] == 0
    site = root / "sitecustomize.py"
    site.write_text("# my own first line\n" + site.read_text() + USER_LINES)
    assert demo.run("runtime", "uninstall", "--dir", str(root))[0] == 0
    assert site.read_text() == "# my own first line\n" + USER_LINES
    proc = run([demo.venv.python, "-c", MINE], _env(tmp_path, PYTHONPATH=str(root)))
    assert proc.stdout.strip() == "mine hello x" and proc.stderr == ""
    # a block whose end marker the user deleted is refused, and nothing is removed
    assert demo.run("runtime", "install", "demo-fix", "--dir", str(root))[0] == 0
    damaged = site.read_text().replace("# <<< compatkit runtime <<<\n", "")
    site.write_text(damaged)
    code, _, err = demo.run("runtime", "uninstall", "--dir", str(root))
    assert code == 1 and "compatkit's block is damaged" in err
    assert site.read_text() == damaged and list(root.glob("_compatkit_hook_*.py"))


def test_the_block_goes_after_a_future_import_and_a_legacy_file_is_all_ours() -> None:
    from compatkit.errors import CompatkitError
    from compatkit.runtime import startfiles

    own = startfiles.block("/rt", "_compatkit_hook_x", ["m"], ["ps"], chain=True)
    compile(own, "sitecustomize.py", "exec")  # the boot code itself compiles
    future = "from __future__ import annotations\nimport mine\n"
    with_future = startfiles.with_block(future, own)
    assert with_future.startswith(future) and with_future.endswith(own)
    compile(with_future, "sitecustomize.py", "exec")  # a __future__ import must stay first
    assert startfiles.without_block(with_future) == future
    assert startfiles.with_block(startfiles.with_block("x = 1\n", own), own) == own + "x = 1\n"
    legacy = "# compatkit runtime hook: applies ps at import time.\nimport _compatkit_hook_y\n"
    assert startfiles.without_block(legacy) == ""
    copied = "import _compatkit_hook_x  # a user copied the import out of the block\n"
    with pytest.raises(CompatkitError, match="a line outside compatkit's block imports"):
        startfiles.without_block(own + copied)
    with pytest.raises(CompatkitError, match="2 begin and 2 end markers"):
        startfiles.without_block(own + own)


# the patched module, then the file of the hook module that serves it
HOOK_PROBE = PROBE + (
    "; import sys; print(*(m.__file__ for n, m in sys.modules.items() "
    "if n.startswith('_compatkit_hook_')))"
)


@pytest.mark.parametrize("pth", [False, True], ids=["pythonpath", "pth"])
def test_a_same_named_hook_on_pythonpath_is_never_imported(
    demo: Demo, tmp_path: Path, pth: bool
) -> None:
    """The boot imports the hook from the file it checked, never by name through sys.path: a
    same-named module in another user's PYTHONPATH folder (mode 777) changes nothing."""
    root = tmp_path / "rt"
    args = ["runtime", "install", "demo-fix", "--dir", str(root), *(["--pth"] if pth else [])]
    assert demo.run(*args)[0] == 0
    (hook,) = root.glob("_compatkit_hook_*.py")
    evil = tmp_path / "evil"
    evil.mkdir()
    evil.chmod(0o777)
    if os.geteuid() == 0:
        os.chown(evil, ATTACKER, ATTACKER)
    (evil / hook.name).write_text("print('EVIL')\ndef start(*a):\n    pass\n")
    path = str(evil) if pth else f"{evil}:{root}"  # ahead of the runtime folder on sys.path
    proc = run([demo.venv.python, "-c", HOOK_PROBE], _env(tmp_path, PYTHONPATH=path))
    assert "EVIL" not in proc.stdout + proc.stderr
    assert proc.stdout.split() == ["hi", "x", str(hook)], proc.stderr  # served patched, ours


@pytest.mark.parametrize("pth", [False, True], ids=["pythonpath", "pth"])
def test_the_hook_refuses_a_link_in_its_data_folder_at_start(
    demo: Demo, tmp_path: Path, pth: bool
) -> None:
    """Install refuses a symbolic link inside the folder; so does every start, and a link
    deeper down refuses the import that would read through it."""
    root = tmp_path / "rt"
    args = ["runtime", "install", "demo-fix", "--dir", str(root), *(["--pth"] if pth else [])]
    assert demo.run(*args)[0] == 0
    env = _env(tmp_path, **({} if pth else {"PYTHONPATH": str(root)}))
    src = root / "_compatkit_runtime" / "src"
    (key,) = src.iterdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (pyc,) = (root / "__pycache__").glob("_compatkit_hook_*.pyc")  # the hook's own bytecode
    for link, deeper in ((src, False), (key, False), (pyc, False), (key / "demo", True)):
        moved = elsewhere / link.name
        link.rename(moved)
        link.symlink_to(moved)  # the same files, trusted, through a link
        proc = run([demo.venv.python, "-c", PROBE], env)
        assert proc.returncode == 1 and "hi x" not in proc.stdout, proc.stdout
        lines = proc.stderr.strip().splitlines()
        assert deeper or len(lines) == 1, lines  # a refused import: its traceback follows
        line = lines[0]
        start = "refusing to import demo.greet" if deeper else "refusing to start"
        assert line.startswith(f"compatkit runtime: {start}: ") and "symbolic link" in line, line
        link.unlink()
        moved.rename(link)
        assert run([demo.venv.python, "-c", PROBE], env).stdout.strip() == "hi x"


@pytest.mark.parametrize("pth", [False, True], ids=["pythonpath", "pth"])
def test_a_group_writable_folder_names_the_way_out_that_works(
    demo: Demo, tmp_path: Path, pth: bool
) -> None:
    """Issue 46 item 7: a ``chmod g+w`` of the runtime folder refuses every start; the line
    names what works (install refuses such a folder until its mode changes; uninstall only
    removes from it, so it works), compatkit's own start says once that it goes on without
    the hook (site runs a venv's .pth files twice on some Pythons), and uninstall removes it."""
    root = tmp_path / "rt"
    args = ["runtime", "install", "demo-fix", "--dir", str(root), *(["--pth"] if pth else [])]
    assert demo.run(*args)[0] == 0
    root.chmod(0o775)
    env = _env(tmp_path, **({} if pth else {"PYTHONPATH": str(root)}))
    proc = run([demo.venv.python, "-c", PROBE], env)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"compatkit runtime: refusing to start: {root} is writable by others, and demo.greet, "
        f"demo.util must not be imported unpatched; make it writable by you only ('chmod go-w "
        f"{root}'), then run 'compatkit runtime install' again, or remove it: 'compatkit "
        f"runtime uninstall --dir {root}'"
    ]
    own = tmp_path / "bin" / "compatkit"  # a program called compatkit: its start goes on
    own.parent.mkdir()
    own.write_text("print('ran')\n")
    proc = run([demo.venv.python, str(own)], env)
    assert proc.stdout == "ran\n"
    assert proc.stderr.splitlines() == [
        f"compatkit runtime: compatkit starts without the hook in {root} ({root} is writable "
        "by others); demo.greet, demo.util are not patched in this process"
    ]
    code, _, err = demo.run(*args)
    assert code == 1 and "is writable by others" in err  # install: as the line says
    code, _, err = demo.run("runtime", "uninstall", "--dir", str(root))
    assert code == 0, err
    assert not (root / "_compatkit_runtime").exists()
    assert not (demo.venv.site / "00-compatkit-runtime.pth").exists()
    assert run([demo.venv.python, "-c", PROBE], env).stdout == "hello x\n"
