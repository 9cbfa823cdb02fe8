"""What the tests share besides fixtures (tests/conftest.py holds those): real wheels
(``helpers.wheelkit``) installed into real virtual environments, the demo distribution and its
patchset, the CLI run in-process, and the root-only skip. Import with ``from helpers import X``."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from compatkit.cli.main import main
from helpers.wheelkit import build_wheel as build_wheel

UV = shutil.which("uv")
# The TOML reader compatkit imports: the standard library's from 3.11, tomli below (a dependency
# there, pyproject.toml), which the stripped test environments below must be given.
TOML = "tomllib" if sys.version_info >= (3, 11) else "tomli"


def backports(where: Path) -> list[str]:
    """For the ``PYTHONPATH`` of an environment that has compatkit's source but none of its
    dependencies: a folder ``where`` linking what compatkit needs beyond this Python's standard
    library (tomli below 3.11); nothing on 3.11+."""
    if sys.version_info < (3, 11):
        import tomli

        where.mkdir(exist_ok=True)
        with contextlib.suppress(FileExistsError):
            (where / "tomli").symlink_to(Path(tomli.__file__).parent)
        return [str(where)]
    return []


@dataclass
class Venv:
    root: Path

    @property
    def python(self) -> str:
        return str(self.root / "bin" / "python")

    @property
    def site(self) -> Path:
        return next((self.root / "lib").glob("python3*/site-packages"))

    def install(self, wheel: Path | str, installer: str = "uv", *extra: str) -> None:
        """Install a wheel file (or a requirement such as ``name==1.0``) without deps."""
        if installer == "uv":
            cmd = [UV or "uv", "pip", "install", "--python", self.python, "--no-deps", *extra]
        else:
            cmd = [self.python, "-m", "pip", "install", "-q", "--no-deps", *extra]
        subprocess.run([*cmd, str(wheel)], check=True, capture_output=True)

    def snapshot(self) -> dict[str, bytes]:
        """Every file below site-packages (bytecode caches excluded), for byte-exact checks."""
        return {
            str(p.relative_to(self.site)): p.read_bytes()
            for p in sorted(self.site.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts
        }


DEMO_FILES = {
    "demo/__init__.py": b"from demo.greet import hello\n",
    "demo/greet.py": b"def hello(name):\n    return 'hello ' + name\n\n\nWHO = 'world'\n",
    "demo/util.py": b"".join(f"line{i} = {i}\n".encode() for i in range(40)),
}

PATCH_GREET = """\
Patch-Id: patch-1
Title: Greet politely
Symptom: ValueError: impolite greeting
Cause: demo.greet.hello() changed in demo 1.0
Fix: Say "hi" instead.
Smoke-Test: smoke/test_patch_1.py
---
diff --git a/demo/greet.py b/demo/greet.py
--- a/demo/greet.py
+++ b/demo/greet.py
@@ -1,3 +1,3 @@
 def hello(name):
-    return 'hello ' + name
+    return 'hi ' + name

"""

PATCH_UTIL = """\
Patch-Id: patch-2
Title: Change line 20
Symptom: AssertionError: line20 is wrong
Cause: demo.util changed
Fix: Set line20 to 200.
Smoke-Test: smoke/test_patch_2.py
---
diff --git a/demo/util.py b/demo/util.py
--- a/demo/util.py
+++ b/demo/util.py
@@ -20,3 +20,3 @@
 line19 = 19
-line20 = 20
+line20 = 200
 line21 = 21
"""

# util.py's line 20 changed, with two lines of context each side: the hunk the rename, copy
# and traditional-name tests below demo/util.py share
UTIL_LINE20_HUNK = """\
@@ -19,5 +19,5 @@
 line18 = 18
 line19 = 19
-line20 = 20
+line20 = 200
 line21 = 21
 line22 = 22
"""
# a patch that only makes demo/greet.py executable
MODE_ONLY_DIFF = """\
diff --git a/demo/greet.py b/demo/greet.py
old mode 100644
new mode 100755
"""


def patch_text(patch_id: str, diff: str, title: str = "t", smoke: int = 1) -> str:
    """A patch file: the header fields every patch needs, then ``diff``."""
    return (
        f"Patch-Id: {patch_id}\nTitle: {title}\nSymptom: s\nCause: c\nFix: f\n"
        f"Smoke-Test: smoke/test_patch_{smoke}.py\n---\n{diff}"
    )


SMOKE_1 = "import demo.greet\n\ndef test_polite():\n    assert demo.greet.hello('x') == 'hi x'\n"
SMOKE_2 = "import demo.util\n\ndef test_line20():\n    assert demo.util.line20 == 200\n"


def write_patchset(
    base: Path,
    name: str = "demo-fix",
    patches: dict[str, str] | None = None,
    specifier: str = "==1.0",
    requires: list[str] | None = None,
    version: str = "1.0.0",
    distribution: str = "demo",
) -> Path:
    """A patchset directory under ``base`` (the directory passed as --patchset-dir)."""
    patches = (
        patches if patches is not None else {"0001.patch": PATCH_GREET, "0002.patch": PATCH_UTIL}
    )
    root = base / name
    (root / "patches").mkdir(parents=True, exist_ok=True)
    (root / "smoke").mkdir(exist_ok=True)
    for fname, text in patches.items():
        (root / "patches" / fname).write_text(text)
    (root / "smoke" / "test_patch_1.py").write_text(SMOKE_1)
    (root / "smoke" / "test_patch_2.py").write_text(SMOKE_2)
    series = ", ".join(f'"patches/{f}"' for f in patches)
    reqs = ", ".join(f'"{r}"' for r in (requires or []))
    (root / "patchset.toml").write_text(
        f'[patchset]\nname = "{name}"\nversion = "{version}"\nsummary = "demo"\n'
        f"series = [{series}]\n\n"
        f'[target]\ndistribution = "{distribution}"\nspecifier = "{specifier}"\n'
        f"requires = [{reqs}]\n"
    )
    return root


@dataclass
class Demo:
    venv: Venv
    patchsets: Path
    wheel: Path
    capsys: pytest.CaptureFixture[str]

    def command(self, *args: str) -> list[str]:
        """The command line that runs compatkit in a child process against this demo."""
        return compatkit_command(self.venv, self.patchsets, *args)

    def run(self, *args: str) -> tuple[int, str, str]:
        """Run the CLI in-process against this venv and patchset directory."""
        return run_cli(
            self.capsys, "--python", self.venv.python, "--patchset-dir", str(self.patchsets), *args
        )


needs_uv = pytest.mark.skipif(UV is None, reason="needs uv")


def build(demo: Demo, out: Path, *args: str) -> tuple[int, str, str]:
    """``compatkit wheel demo-fix -o OUT`` from the demo's own wheel: (code, out, err)."""
    return demo.run(
        "wheel", "demo-fix", "-o", str(out), "--wheel-dir", str(demo.wheel.parent), *args
    )


def built(demo: Demo, out: Path) -> Path:
    """The patched demo wheel, built into ``out``."""
    code, _, err = build(demo, out)
    assert code == 0, err
    (whl,) = out.glob("*.whl")
    return whl


def compatkit_command(venv: Venv, patchsets: Path, *args: str) -> list[str]:
    """``python -m compatkit --python VENV --patchset-dir DIR ARGS...`` for a child process."""
    base = [sys.executable, "-m", "compatkit", "--python", venv.python]
    return [*base, "--patchset-dir", str(patchsets), *args]


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def install_demo(
    tmp_path: Path, make_venv: Callable[..., Venv], files: dict[str, bytes]
) -> tuple[Venv, Path, Path]:
    """demo 1.0 made of ``files``, built into tmp_path/wheels and installed (uv, copy mode) in
    a fresh venv; the demo-fix patchset in tmp_path/patchsets: (venv, patchsets, wheel)."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    wheel = build_wheel(wheels, "demo", "1.0", files)
    venv = make_venv()
    venv.install(wheel, "uv", "--link-mode", "copy")
    patchsets = tmp_path / "patchsets"
    write_patchset(patchsets)
    return venv, patchsets, wheel


# The start of every skip reason of a test that needs root (or to act as another uid):
# conftest.py's terminal summary names the tests skipped for it in one line.
NEEDS_ROOT = "needs root"
root_only = pytest.mark.skipif(
    os.geteuid() != 0, reason=f"{NEEDS_ROOT}: stages another user's files"
)


def can_unshare() -> bool:
    """Root, and mount namespaces: what the read-only and tmpfs tests need."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    return subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0


@contextlib.contextmanager
def read_only(site: Path) -> Iterator[list[str]]:
    """A command prefix that runs its command with ``site`` read-only: a read-only bind mount
    in a mount namespace (root), else ``chmod a-w`` for the block (non-root)."""
    if can_unshare():
        script = f'mount --bind {site} {site} && mount -o remount,ro,bind {site} && exec "$@"'
        yield ["unshare", "-m", "sh", "-c", script, "sh"]
        return
    if os.geteuid() == 0:
        pytest.skip("root without mount namespaces: chmod cannot make site-packages read-only")
    paths = [site, *site.rglob("*")]
    if any(p.is_file() and p.stat().st_nlink > 1 for p in paths):
        pytest.skip("site-packages is hardlinked (uv's cache): chmod would change the cache too")
    modes = {p: p.stat().st_mode for p in paths}
    for p in modes:
        p.chmod(modes[p] & ~0o222)
    try:
        yield []
    finally:
        for p, mode in modes.items():
            p.chmod(mode)
