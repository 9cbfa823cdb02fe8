"""explain on error texts captured now from the real speculators 0.3.0 + vLLM 0.16.0 stack.

For each scenario, every patch but one is applied, the real code runs (tests/explain_corpus/
scenarios.py with the smoke harness: real configs, Scheduler, KV cache and executor RPC; fake
GPU workers), and the traceback it prints must make explain rank the left-out patch first. The
committed corpus must still end with the same exception line, so it stays what the code prints.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import UV, Venv, run_cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "explain_corpus"))
from capture import HERE, SCENARIOS, capture

pytestmark = [
    pytest.mark.real,
    pytest.mark.slow,
    pytest.mark.skipif(UV is None, reason="needs uv"),
]

# the ones the old word-overlap explain missed, and one it found (a vLLM import each: ~20 s)
LIVE = ["patch-5-block-pool", "patch-6-nothing-captured", "patch-10-get-input-embeddings"]


def test_explain_ranks_the_left_out_patch_first_on_real_errors(
    make_venv: Callable[..., Venv], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    venv = make_venv()
    stack = ["speculators==0.3.0", "vllm==0.16.0", "pytest"]
    install = [UV or "uv", "pip", "install", "-q", "--python", venv.python]
    subprocess.run([*install, "--link-mode", "hardlink", *stack], check=True)
    texts = capture(venv.python, tmp_path / "captured", LIVE)
    for name, text in texts.items():
        committed = (HERE / f"{name}.txt").read_text()
        assert text.strip().splitlines()[-1] == committed.strip().splitlines()[-1], name
        code, out, err = run_cli(capsys, "explain", "--json", text)
        assert code == 0, err
        doc = json.loads(out)
        assert doc["candidates"][0]["id"] == SCENARIOS[name], (name, doc["candidates"])
        # the same fix in another patchset (speculators-vllm017 shares the ids) may tie
        assert {m["id"] for m in doc["matches"]} == {SCENARIOS[name]}, name
