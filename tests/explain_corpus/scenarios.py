"""Real failures of speculators 0.3.0 on vLLM 0.16.0, captured as a user sees them.

This is not a compatkit test: ``tests/system/test_explain_real.py`` (and ``capture.py`` here, to
refresh the committed corpus) runs it with pytest *inside* an environment holding the real
speculators 0.3.0 and vLLM 0.16.0, in a folder beside a copy of the speculators-vllm016 smoke
``conftest.py`` (real configs, Scheduler, KV cache code and executor RPC; fake GPU workers),
with every patch applied except the one a scenario is about (``capture.SCENARIOS`` says
which).

Each scenario runs the real code path, catches what it raises and writes Python's own
traceback text (``traceback.format_exc()``: what an uncaught exception prints) to
``$EXPLAIN_CAPTURE/<scenario>.txt``.
"""

from __future__ import annotations

import io
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _capture(name: str, run: Callable[[], object]) -> None:
    try:
        run()
    except Exception:
        Path(os.environ["EXPLAIN_CAPTURE"], f"{name}.txt").write_text(traceback.format_exc())
        return
    raise AssertionError(f"{name}: the real code did not fail (is its patch applied?)")


def _wanted(name: str) -> bool:
    return name in os.environ.get("EXPLAIN_SCENARIOS", "").split(",")


def test_scenarios(
    make_generator: Any, gen_mod: Any, smoke: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    import torch  # type: ignore[import-not-found]  # in the target environment only

    def remote_code_tokenizer() -> object:
        d = smoke.write_tiny_model(
            tmp_path / "remote-code-model",
            tokenizer_config={
                "tokenizer_class": "RemoteCodeTokenizer",
                "auto_map": {"AutoTokenizer": ["tokenization_remote.RemoteCodeTokenizer", None]},
            },
        )
        (d / "tokenization_remote.py").write_text(
            "from transformers import PreTrainedTokenizerFast\n\n\n"
            "class RemoteCodeTokenizer(PreTrainedTokenizerFast):\n    pass\n"
        )
        monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # a batch job: no TTY
        return gen_mod.VllmHiddenStatesGenerator(model_path=str(d), layer_ids=[1, 2])

    def state_error() -> object:
        gen = make_generator(tensor_parallel_size=2)
        budget = gen.vllm_config.scheduler_config.max_num_batched_tokens
        longest = gen.vllm_config.model_config.max_model_len - 1
        lengths, left = [], budget
        while left:
            lengths.append(min(longest, left))
            left -= lengths[-1]
        return gen.generate(smoke.prompts_of([*lengths, 7], seed=2))

    runs: dict[str, Callable[[], object]] = {
        "patch-1-remote-code-tokenizer": remote_code_tokenizer,
        "patch-2-scheduler-config": make_generator,
        "patch-3-kv-cache-specs": make_generator,
        "patch-4-block-size": make_generator,
        "patch-5-block-pool": lambda: make_generator().generate(smoke.prompts_of([104, 80])),
        "patch-6-ambiguous-tensor": lambda: make_generator().generate(
            smoke.prompts_of([5, 9, 3], seed=1)
        ),
        # an empty batch tensor (a data loader's last, empty batch): nothing is captured
        "patch-6-nothing-captured": lambda: make_generator().generate(
            torch.empty((0, 8), dtype=torch.long)
        ),
        "patch-7-sample-tokens": state_error,
        "patch-10-get-input-embeddings": make_generator,
    }
    for name, run in runs.items():
        if _wanted(name):
            _capture(name, run)
