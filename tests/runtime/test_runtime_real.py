"""Runtime mode on the real stack: the speculators-vllm016 smoke tests on speculators 0.3.0 +
vLLM 0.16.0 with site-packages read-only pass through ``compatkit exec`` and fail without it.

``nox -s runtime`` builds that venv (uv's warm cache: seconds) and runs this file with
``COMPATKIT_REAL_PYTHON`` set to it; CI runs that session (README, .ci/run).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compatkit.load.registry import Registry
from helpers import read_only

REAL = os.environ.get("COMPATKIT_REAL_PYTHON")
pytestmark = [
    pytest.mark.real,
    pytest.mark.slow,
    pytest.mark.skipif(
        not REAL, reason="needs the real speculators 0.3.0 + vLLM 0.16.0 venv: nox -s runtime"
    ),
]


def _site(python: str) -> Path:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return Path(subprocess.run([python, "-c", code], capture_output=True, text=True).stdout.strip())


def _files(site: Path) -> dict[str, float]:
    return {str(p): p.stat().st_mtime for p in (site / "speculators").rglob("*")}


def test_smoke_tests_pass_through_exec_and_fail_without_it(tmp_path: Path) -> None:
    assert REAL is not None
    site = _site(REAL)
    smoke = tmp_path / "smoke"  # a copy: pytest writes nothing into the repository
    shutil.copytree(Registry([]).get("speculators-vllm016").root / "smoke", smoke)
    pytest_cmd = [REAL, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(smoke)]
    env = {**os.environ, "COMPATKIT_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    compatkit = [sys.executable, "-m", "compatkit", "--python", REAL]
    before = _files(site)
    with read_only(site) as prefix:
        plain = subprocess.run([*prefix, *pytest_cmd], capture_output=True, text=True, env=env)
        cmd = [*prefix, *compatkit, "exec", "speculators-vllm016", "--", *pytest_cmd]
        patched = subprocess.run(cmd, capture_output=True, text=True, env=env)
    summary = patched.stdout.strip().splitlines()[-1]
    assert patched.returncode == 0, patched.stdout[-3000:] + patched.stderr[-3000:]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, summary
    assert plain.returncode == 1, plain.stdout[-3000:]
    assert " failed" in plain.stdout.strip().splitlines()[-1]
    assert _files(site) == before  # nothing written there, bytecode included
    (root,) = (tmp_path / "cache" / "runtime").iterdir()
    assert list((root / "_compatkit_runtime" / "pycache").rglob("*-ck*.pyc"))
    verify = subprocess.run(
        [*compatkit, "runtime", "verify", "--dir", str(root)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert verify.returncode == 0 and "speculators-vllm016 applied at import time" in verify.stdout
