"""Capture the real error texts of ``scenarios.py`` from a real speculators 0.3.0 + vLLM 0.16.0
environment, for the explain corpus.

    python tests/explain_corpus/capture.py /path/to/venv/bin/python [SCENARIO ...]

refreshes the committed ``*.txt`` files beside this script; ``tests/system/test_explain_real.py``
calls :func:`capture` into a temp folder. For each patch, compatkit applies every other
patch of speculators-vllm016, the scenarios about that patch run in one pytest process in the
target, and compatkit reverts, so the target ends as it started.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SMOKE = ROOT / "patchsets" / "speculators-vllm016" / "smoke"

# scenario (in scenarios.py) → the patch left out while it runs (every other one is applied)
SCENARIOS = {
    "patch-1-remote-code-tokenizer": "patch-1",
    "patch-2-scheduler-config": "patch-2",
    "patch-3-kv-cache-specs": "patch-3",
    "patch-4-block-size": "patch-4",
    "patch-5-block-pool": "patch-5",
    "patch-6-ambiguous-tensor": "patch-6",
    "patch-6-nothing-captured": "patch-6",
    "patch-7-sample-tokens": "patch-7",
    "patch-10-get-input-embeddings": "patch-10",
}


def _compatkit(python: str, *args: str) -> None:
    cmd = [sys.executable, "-m", "compatkit", "--python", python, *args]
    subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, "NO_COLOR": "1"})


def _run_scenarios(python: str, names: list[str], out: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="explain-scenarios-") as tmp:
        shutil.copy(SMOKE / "conftest.py", tmp)
        shutil.copy(HERE / "scenarios.py", tmp)
        env = {**os.environ, "EXPLAIN_CAPTURE": str(out), "EXPLAIN_SCENARIOS": ",".join(names)}
        cmd = [python, "-m", "pytest", "-p", "no:cacheprovider", "-c", os.devnull, "-q"]
        proc = subprocess.run(
            [*cmd, "--rootdir", tmp, f"{tmp}/scenarios.py"], cwd=tmp, env=env, capture_output=True
        )
        if proc.returncode != 0:
            raise RuntimeError(f"scenarios {names} did not all fail as expected:\n{proc.stdout!r}")


def capture(python: str, out: Path, names: list[str] | None = None) -> dict[str, str]:
    """Run the scenarios (default: all) in the target ``python``; name → captured text."""
    wanted = names or list(SCENARIOS)
    by_patch: dict[str, list[str]] = {}
    for name in wanted:
        by_patch.setdefault(SCENARIOS[name], []).append(name)
    out.mkdir(parents=True, exist_ok=True)
    for patch_id, group in by_patch.items():
        _compatkit(python, "apply", "speculators-vllm016", "--exclude", patch_id)
        try:
            _run_scenarios(python, group, out)
        finally:
            _compatkit(python, "revert", "speculators-vllm016")
    return {name: (out / f"{name}.txt").read_text() for name in wanted}


if __name__ == "__main__":
    capture(sys.argv[1], HERE, sys.argv[2:] or None)
