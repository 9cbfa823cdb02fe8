"""SIGKILL at every write step of apply and revert; the next command recovers.

Three patchsets: the demo one, the real speculators-vllm016 on the real speculators 0.3.0 wheel
(file level, with ``--force``: vLLM is not installed), and a synthetic one touching 200 files.
The child is a real ``python -m compatkit`` process killed by ``COMPATKIT_CRASH_AT=N`` (see
``compatkit.env.txn._step``); the checks after each kill run in this process. After every kill the
site-packages tree must be byte-exact pristine or byte-exact fully applied (RECORD, state,
backups and bytecode included) and ``verify`` / ``pristine`` must agree.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import UV, Demo, Venv, build_wheel, write_patchset
from helpers.reliability import FULL, CrashTarget, report, sample


@pytest.fixture(scope="session")
def pycache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pycache")


def crash_both_ways(
    target: CrashTarget, points: Callable[[int], list[int]]
) -> dict[str, dict[str, int]]:
    """Crash apply at the chosen steps from pristine, then revert from applied."""
    pristine = target.snap()
    steps_apply = target.count_steps("apply")
    applied = target.snap()
    assert applied != pristine
    steps_revert = target.count_steps("revert")
    assert target.snap() == pristine

    target.crash("apply", pristine, applied, points(steps_apply))
    target.finishes_after("apply", steps_apply, applied)
    target.crash("revert", applied, pristine, points(steps_revert))
    target.finishes_after("revert", steps_revert, pristine)
    figures = target.figures
    for command, steps in (("apply", steps_apply), ("revert", steps_revert)):
        figures[command]["steps"] = steps
        assert figures[command]["recovered"] == figures[command]["tried"] > 0
    return figures


def every(total: int) -> list[int]:
    return list(range(1, total + 1))


@pytest.mark.slow
def test_sigkill_at_every_step_of_apply_and_revert(demo: Demo, pycache: Path) -> None:
    target = CrashTarget(
        demo.venv, demo.patchsets, "demo-fix", "demo", pycache_under=("demo/",),
        pycache_prefix=pycache,
    )  # fmt: skip
    figures = crash_both_ways(target, every)
    assert figures["apply"]["tried"] >= 8 and figures["revert"]["tried"] >= 8
    report("crash/demo-fix", **figures)


@pytest.mark.real
@pytest.mark.skipif(UV is None, reason="needs uv")
def test_sigkill_real_patchset_on_real_speculators(
    make_venv: Callable[..., Venv], pycache: Path
) -> None:
    """Downloads speculators==0.3.0 from PyPI (or uses the warm uv cache)."""
    venv = make_venv()
    cmd = [UV or "uv", "pip", "install", "--python", venv.python, "--no-deps"]
    subprocess.run(
        [*cmd, "--link-mode", "copy", "--compile-bytecode", "speculators==0.3.0"],
        check=True,
        capture_output=True,
    )
    empty = venv.root.parent / "no-extra-patchsets"
    empty.mkdir()
    target = CrashTarget(
        venv, empty, "speculators-vllm016", "speculators", ("--force",),
        pycache_under=("speculators/",), pycache_prefix=pycache,
    )  # fmt: skip
    figures = crash_both_ways(target, every)  # every point, in CI too
    report("crash/speculators-vllm016", **figures)


BULK = 200


def bulk_module(i: int) -> bytes:
    eol = "\r\n" if i % 17 == 0 else "\n"  # a few CRLF files
    body = [f"# module {i}", "", f"VALUE = {i}", "", "", "def f(x):", f"    return x + {i}", ""]
    body += [f"LINE_{j} = {j}" for j in range(12)]
    return eol.join(body).encode() + eol.encode()


def bulk_patch(number: int, indexes: range) -> str:
    """One patch of the bulk patchset: modify most files, delete every 40th, create 5 new."""
    parts = [
        f"Patch-Id: bulk-{number}\nTitle: t\nSymptom: s\nCause: c\nFix: f\n"
        f"Smoke-Test: smoke/test_patch_1.py\n---\n"
    ]
    for i in indexes:
        path = f"bulk/mod_{i:03d}.py"
        if i >= BULK - 5:  # five new files
            new = f"bulk/new_{i:03d}.py"
            parts.append(f"--- /dev/null\n+++ b/{new}\n@@ -0,0 +1,2 @@\n+NEW = {i}\n+MORE = 1\n")
        elif i % 40 == 0:
            lines = bulk_module(i).decode().replace("\r\n", "\n").splitlines()
            minus = "".join(f"-{line}\n" for line in lines)
            parts.append(f"--- a/{path}\n+++ /dev/null\n@@ -1,{len(lines)} +0,0 @@\n{minus}")
        else:
            parts.append(
                f"--- a/{path}\n+++ b/{path}\n@@ -6,3 +6,3 @@\n def f(x):\n"
                f"-    return x + {i}\n+    return x - {i}\n \n"
            )
    return "".join(parts)


@pytest.fixture
def bulk(tmp_path: Path, make_venv: Callable[..., Venv], pycache: Path) -> CrashTarget:
    files = {f"bulk/mod_{i:03d}.py": bulk_module(i) for i in range(BULK - 5)}
    files["bulk/__init__.py"] = b""
    wheel = build_wheel(tmp_path, "bulk", "1.0", files)
    venv = make_venv()
    venv.install(wheel, "uv", "--link-mode", "copy")
    # bytecode for a few modules, so pyc backups and removal are crashed too
    for i in range(1, 6):
        subprocess.run(
            [venv.python, "-m", "py_compile", str(venv.site / f"bulk/mod_{i:03d}.py")], check=True
        )
    patches = {f"{n:02d}.patch": bulk_patch(n, range(n * 20, n * 20 + 20)) for n in range(10)}
    patchsets = tmp_path / "ps"
    write_patchset(patchsets, name="bulk-fix", patches=patches, distribution="bulk")
    return CrashTarget(
        venv, patchsets, "bulk-fix", "bulk", pycache_under=("bulk/",), pycache_prefix=pycache
    )


@pytest.mark.slow
def test_sigkill_200_file_patchset(bulk: CrashTarget) -> None:
    """Fast mode: the first and last three points and every 50th; COMPATKIT_FULL=1: all."""
    figures = crash_both_ways(bulk, lambda total: sample(total, every=50))
    assert len({p.split("/")[-1] for p in _touched(bulk)}) == BULK
    if FULL:
        assert all(f["tried"] == f["steps"] for f in figures.values())
    report("crash/bulk-200-files", **figures)


def _touched(target: CrashTarget) -> list[str]:
    from compatkit.load.validate import load_patchset

    ps = load_patchset(target.patchsets / target.name)
    return [fd.path for p in ps.patches for fd in p.files]


GIT_SHAPES = """\
Patch-Id: patch-1
Title: git's shapes
Symptom: s
Cause: c
Fix: f
Smoke-Test: smoke/test_patch_1.py
---
diff --git a/demo/util.py b/demo/util2.py
similarity index 90%
rename from demo/util.py
rename to demo/util2.py
--- a/demo/util.py
+++ b/demo/util2.py
@@ -20,3 +20,3 @@
 line19 = 19
-line20 = 20
+line20 = 200
 line21 = 21
diff --git a/demo/greet.py b/demo/greet.py
old mode 100644
new mode 100755
diff --git a/demo/tool.py b/demo/tool.py
new file mode 100755
--- /dev/null
+++ b/demo/tool.py
@@ -0,0 +1 @@
+print('tool')
"""


def _modes(site: Path) -> dict[str, int]:
    return {
        str(p.relative_to(site)): p.stat().st_mode & 0o777
        for p in sorted((site / "demo").rglob("*.py"))
    }


@pytest.mark.slow
def test_sigkill_at_every_step_of_a_rename_and_mode_changes(demo: Demo, pycache: Path) -> None:
    """A rename (RECORD: the old row gone, the new one with its hash), a mode change and a new
    100755 file: each kill leaves the tree pristine or applied, and the modes come back."""
    write_patchset(demo.patchsets, "git-shapes", {"0001.patch": GIT_SHAPES})
    modes = _modes(demo.venv.site)
    target = CrashTarget(
        demo.venv, demo.patchsets, "git-shapes", "demo", pycache_under=("demo/",),
        pycache_prefix=pycache,
    )  # fmt: skip
    figures = crash_both_ways(target, every)
    assert _modes(demo.venv.site) == modes
    target.child("apply", None)
    applied = _modes(demo.venv.site)
    assert applied["demo/greet.py"] == 0o755 and applied["demo/tool.py"] == 0o755
    assert "demo/util.py" not in applied and "demo/util2.py" in applied
    record = next(demo.venv.site.glob("demo-1.0.dist-info/RECORD")).read_text()
    assert "demo/util.py," not in record and "demo/util2.py,sha256=" in record
    report("crash/git-shapes", **figures)
