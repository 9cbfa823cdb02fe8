"""compatkit against the real ``git apply`` on diffs made by the real ``git diff`` and ``diff -u``.

Each case installs a tiny real distribution (``gpkg`` 1.0, tests/helpers/wheelkit), makes a
diff of the shape it names from a tree (``made``: the installed one unless the case says the
diff was made elsewhere), and applies it twice: with ``compatkit apply`` to the installed
package, and with ``git apply`` to a plain copy of the same files. The package folders must
then be equal byte for byte and mode for mode, or both tools refuse. After a compatkit apply,
``compatkit revert`` must give back the installed files exactly, modes included.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import Venv, build_wheel, run_cli, write_patchset

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

Tree = dict[str, tuple[bytes, int]]  # path below gpkg/ -> (bytes, permission bits)

MOD = b"".join(f"value_{i} = {i}\n".encode() for i in range(12))
TAIL = b"def main():\n    print('hi')\n\n\nmain()\n"
BASE: dict[str, bytes] = {
    "__init__.py": b"",
    "mod.py": MOD,
    "tail.py": TAIL,
    "old.py": b"".join(f"old_{i} = {i}\n".encode() for i in range(8)),
    "tool.py": b"print('tool')\n",
}
HEADER = "Patch-Id: p1\nTitle: t\nSymptom: s\nCause: c\nFix: f\nSmoke-Test: smoke/test_patch_1.py\n"


def _edit(tree: dict[str, bytes], path: str, old: bytes, new: bytes) -> dict[str, bytes]:
    assert old in tree[path]
    return {**tree, path: tree[path].replace(old, new, 1)}


def _write(root: Path, tree: dict[str, bytes], modes: dict[str, int]) -> None:
    shutil.rmtree(root, ignore_errors=True)
    for rel, data in tree.items():
        target = root / "gpkg" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(modes.get(rel, 0o644))


def _read(root: Path) -> Tree:
    out: Tree = {}
    for p in sorted((root / "gpkg").rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            out[str(p.relative_to(root / "gpkg"))] = (
                p.read_bytes(),
                stat.S_IMODE(p.stat().st_mode),
            )
    return out


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd)}
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, env=env)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.stdout.decode("utf-8", "surrogateescape")


def git_diff(
    tmp: Path,
    made: dict[str, bytes],
    change: Callable[[Path], None],
    *args: str,
    modes: dict[str, int] | None = None,
) -> str:
    """``git diff ARGS`` of what ``change`` does to a repository holding ``made``."""
    repo = tmp / "repo"
    _write(repo, made, modes or {})
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    change(repo / "gpkg")
    _git(repo, "add", "-A")
    return _git(repo, "diff", "--cached", *args)


def diff_u(tmp: Path, old: bytes, new: bytes, old_name: str, new_name: str) -> str:
    """``diff -u OLD NEW`` run inside the package's parent folder (paths from site-packages)."""
    work = tmp / "du"
    shutil.rmtree(work, ignore_errors=True)
    for name, data in ((old_name, old), (new_name, new)):
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_bytes(data)
    proc = subprocess.run(["diff", "-u", old_name, new_name], cwd=work, capture_output=True)
    assert proc.returncode == 1, proc.stderr
    return proc.stdout.decode()


def oracle(tmp: Path, diff: str, git_args: tuple[str, ...], files: dict[str, bytes]) -> Tree | None:
    """The tree ``git apply`` leaves from ``files``, or None when it refuses the diff."""
    root = tmp / "oracle"
    _write(root, files, {})
    proc = subprocess.run(
        ["git", "apply", *git_args, "-"], cwd=root, input=diff.encode(), capture_output=True
    )
    return None if proc.returncode else _read(root)


def _rm(path: str) -> Callable[[Path], None]:
    return lambda root: (root / path).unlink()


def _put(path: str, data: bytes, mode: int = 0o644) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        (root / path).write_bytes(data)
        (root / path).chmod(mode)

    return change


def _rename(old: str, new: str, data: bytes | None = None) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        (root / old).rename(root / new)
        if data is not None:
            (root / new).write_bytes(data)

    return change


def _copy(new: str, data: bytes) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        (root / new).write_bytes(data)

    return change


def _chmod(path: str, mode: int) -> Callable[[Path], None]:
    return lambda root: (root / path).chmod(mode)


MOD2 = MOD.replace(b"value_2 = 2\n", b"value_2 = 20\n").replace(b"value_9 = 9\n", b"value_9 = 90\n")


def _cases(tmp: Path) -> dict[str, Callable[[], tuple[str, tuple[str, ...], str]]]:
    """Case name -> (patch text, git apply's extra arguments, extra header lines)."""
    untailed = {**BASE, "tail.py": TAIL.replace(b"\n\nmain()\n", b"")}
    empty_init = BASE
    full_init = {**BASE, "__init__.py": b"import os\n"}
    return {
        "edit": lambda: (git_diff(tmp, BASE, _put("mod.py", MOD2)), (), ""),
        "appended line": lambda: (git_diff(tmp, BASE, _put("mod.py", MOD + b"x = 1\n")), (), ""),
        "prepended line": lambda: (git_diff(tmp, BASE, _put("mod.py", b"x = 1\n" + MOD)), (), ""),
        # made where tail.py did not call main() yet: it already does, git refuses (end anchor)
        "append met by the same end": lambda: (
            git_diff(tmp, untailed, _put("tail.py", TAIL.replace(b"\n\nmain()\n", b"main()\n"))),
            (),
            "",
        ),
        # made against an empty __init__.py, met by one that is not (start anchor)
        "against an empty file": lambda: (
            git_diff(tmp, {**empty_init, "__init__.py": b""}, _put("__init__.py", b"import os\n")),
            (),
            "",
        ),
        "against an empty file, applies": lambda: (
            git_diff(tmp, {**BASE, "__init__.py": b""}, _put("__init__.py", b"import os\n")),
            (),
            "",
        ),
        "-U0, refused": lambda: (git_diff(tmp, BASE, _put("mod.py", MOD2), "-U0"), (), ""),
        "-U0 with Unidiff-Zero": lambda: (
            git_diff(tmp, BASE, _put("mod.py", MOD2), "-U0"),
            ("--unidiff-zero",),
            "Unidiff-Zero: yes\n",
        ),
        "-U0 elsewhere, refused": lambda: (
            git_diff(tmp, full_init, _put("__init__.py", b"import os\nimport sys\n"), "-U0"),
            (),
            "",
        ),
        "rename -M": lambda: (
            git_diff(tmp, BASE, _rename("old.py", "new.py", BASE["old.py"] + b"more = 1\n"), "-M"),
            (),
            "",
        ),
        "pure rename": lambda: (git_diff(tmp, BASE, _rename("old.py", "moved.py"), "-M"), (), ""),
        "copy -C": lambda: (
            git_diff(tmp, BASE, _copy("copy.py", BASE["old.py"] + b"c = 1\n"), "-C", "-C"),
            (),
            "",
        ),
        "mode change": lambda: (git_diff(tmp, BASE, _chmod("tool.py", 0o755)), (), ""),
        "new executable file": lambda: (
            git_diff(tmp, BASE, _put("run.py", b"print(1)\n", 0o755)),
            (),
            "",
        ),
        "delete": lambda: (git_diff(tmp, BASE, _rm("old.py")), (), ""),
        ".orig pair": lambda: (
            diff_u(tmp, MOD, MOD2, "gpkg/mod.py.orig", "gpkg/mod.py"),
            ("-p0",),
            "",
        ),
        "differing names, the +++ one installed": lambda: (
            diff_u(tmp, MOD, MOD2, "gpkg/mod_old.py", "gpkg/mod.py"),
            ("-p0",),
            "",
        ),
        "differing names, both installed": lambda: (
            diff_u(tmp, MOD, MOD2, "gpkg/old.py", "gpkg/mod.py"),
            ("-p0",),
            "",
        ),
        "differing first folders, refused": lambda: (
            diff_u(tmp, MOD, MOD2, "old/gpkg/mod.py", "new/gpkg/mod.py"),
            ("-p0",),
            "",
        ),
        "epoch with a colon deletes": lambda: (
            "--- gpkg/tool.py\t2024-01-01 00:00:00.000000000 +0000\n"
            "+++ gpkg/tool.py\t1969-12-31 16:00:00.000000000 -08:00\n"
            "@@ -1 +0,0 @@\n-print('tool')\n",
            ("-p0",),
            "",
        ),
        "spaces before the date": lambda: (
            diff_u(tmp, MOD, MOD2, "gpkg/mod.py.orig", "gpkg/mod.py")
            .replace(".orig\t", "\t")
            .replace("\t", "  "),
            ("-p0",),
            "",
        ),
    }


SECTIONS = (
    "diff --git a/gpkg/mod.py b/gpkg/mod.py\n--- a/gpkg/mod.py\n+++ b/gpkg/mod.py\n"
    "@@ -1,4 +1,4 @@\n value_0 = 0\n value_1 = 1\n-value_2 = 2\n+value_2 = 20\n value_3 = 3\n"
    "diff --git a/gpkg/mod.py b/gpkg/mod.py\n--- a/gpkg/mod.py\n+++ b/gpkg/mod.py\n"
    "@@ -8,4 +8,4 @@\n value_7 = 7\n value_8 = 8\n-value_9 = 9\n+value_9 = 90\n value_10 = 10\n"
    "diff --git a/gpkg/tool.py b/gpkg/tool.py\ndeleted file mode 100644\n--- a/gpkg/tool.py\n"
    "+++ /dev/null\n@@ -1 +0,0 @@\n-print('tool')\n"
    "diff --git a/gpkg/tool.py b/gpkg/tool.py\nnew file mode 100755\n--- /dev/null\n"
    "+++ b/gpkg/tool.py\n@@ -0,0 +1 @@\n+print('new tool')\n"
)
NAMES = [
    "edit",
    "appended line",
    "prepended line",
    "append met by the same end",
    "against an empty file",
    "against an empty file, applies",
    "-U0, refused",
    "-U0 with Unidiff-Zero",
    "-U0 elsewhere, refused",
    "rename -M",
    "pure rename",
    "copy -C",
    "mode change",
    "new executable file",
    "delete",
    ".orig pair",
    "differing names, the +++ one installed",
    "differing names, both installed",
    "differing first folders, refused",
    "epoch with a colon deletes",
    "spaces before the date",
    "several sections, delete then create",
]


@pytest.mark.parametrize("name", NAMES)
def test_compatkit_leaves_the_tree_git_apply_leaves(
    name: str,
    tmp_path: Path,
    make_venv: Callable[..., Venv],
    capsys: pytest.CaptureFixture[str],
) -> None:
    installed = dict(BASE)
    if name == "against an empty file":
        installed["__init__.py"] = b"import os\n"  # not the empty file the diff was made from
    if name == "against an empty file, applies":
        installed["__init__.py"] = b""
    if name == "-U0 elsewhere, refused":
        installed["__init__.py"] = b"import re\n"
    cases = _cases(tmp_path)
    diff, git_args, extra = cases[name]() if name in cases else (SECTIONS, (), "")
    want = oracle(tmp_path, diff, git_args, installed)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    venv = make_venv()
    venv.install(build_wheel(wheels, "gpkg", "1.0", {f"gpkg/{k}": v for k, v in installed.items()}))
    patchsets = tmp_path / "patchsets"
    write_patchset(
        patchsets, "g", {"0001.patch": HEADER + extra + "---\n" + diff}, distribution="gpkg"
    )
    before = _read(venv.site)
    base = ("--python", venv.python, "--patchset-dir", str(patchsets))
    code, _, err = run_cli(capsys, *base, "apply", "g")
    if want is None:
        assert code != 0, f"git apply refuses it, compatkit applied it:\n{diff}"
        assert len(err.strip().splitlines()) <= 3 and "Traceback" not in err
        assert _read(venv.site) == before
        return
    assert code == 0, err
    assert _read(venv.site) == want
    code, out, err = run_cli(capsys, *base, "verify", "g")  # bytes and modes, derived again
    assert code == 0, out + err
    code, out, err = run_cli(capsys, *base, "status", "g", "--json")
    assert code == 0 and '"status": "applied"' in out and "drifted" not in out, out + err
    code, _, err = run_cli(capsys, *base, "revert", "g")
    assert code == 0, err
    assert _read(venv.site) == before


@pytest.mark.parametrize("new_name", ["gpkg/mod_new.py", "gpkg/new/mod.py"])
def test_differing_names_patch_the_one_installed_where_git_takes_the_other(
    new_name: str,
    tmp_path: Path,
    make_venv: Callable[..., Venv],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--- gpkg/mod.py`` / ``+++ gpkg/mod_new.py`` with only ``mod.py`` installed: git
    takes the ``+++`` name and finds no file; compatkit patches the installed one, to what
    git apply makes of it when the diff names it on both lines. Before: refused."""
    diff = diff_u(tmp_path, MOD, MOD2, "gpkg/mod.py", new_name)
    assert oracle(tmp_path, diff, ("-p0",), BASE) is None
    want = oracle(tmp_path, diff.replace(f"+++ {new_name}", "+++ gpkg/mod.py"), ("-p0",), BASE)
    assert want is not None and want["mod.py"][0] == MOD2
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    venv = make_venv()
    venv.install(build_wheel(wheels, "gpkg", "1.0", {f"gpkg/{k}": v for k, v in BASE.items()}))
    patchsets = tmp_path / "patchsets"
    write_patchset(patchsets, "g", {"0001.patch": HEADER + "---\n" + diff}, distribution="gpkg")
    before = _read(venv.site)
    base = ("--python", venv.python, "--patchset-dir", str(patchsets))
    code, _, err = run_cli(capsys, *base, "apply", "g")
    assert code == 0, err
    assert _read(venv.site) == want
    code, _, err = run_cli(capsys, *base, "verify", "g")
    assert code == 0, err
    code, _, err = run_cli(capsys, *base, "revert", "g")
    assert code == 0, err
    assert _read(venv.site) == before
