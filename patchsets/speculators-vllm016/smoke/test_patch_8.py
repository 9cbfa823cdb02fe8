"""patch-8: SchedulerConfig(..., enable_chunked_prefill=False).

A batch whose prompt tokens exceed the token budget (max_num_batched_tokens =
8192): every sample must get hidden states for all its tokens, each row its
own token at its own position (checked on the generator's output data). vLLM
0.16 chunks the last request that does not fit; speculators 0.3.0 aborts every
scheduled request after one step, so that request's hidden states are
truncated. Patched, requests are scheduled whole; a generator with per-request
bookkeeping across chunks (speculators >= 0.4) passes this too. Real Scheduler;
fake GPU workers (see conftest).
"""

import pytest


def test_big_batch_hidden_states_complete(make_generator, smoke, monkeypatch):
    gen = make_generator(tensor_parallel_size=2)
    budget = gen.vllm_config.scheduler_config.max_num_batched_tokens
    lengths = [1500, 3000, 3000, 3000]
    assert sum(lengths) > budget
    prompts = smoke.prompts_of(lengths, seed=8)
    steps = smoke.record_schedules(gen, monkeypatch)

    results = gen.generate(prompts)

    scheduled = {}  # req_id -> [(from position, tokens), ...]
    for step in steps:
        for req_id, part in step.items():
            scheduled.setdefault(req_id, []).append(part)
    try:
        # Unpatched (silent): sample 3 layer 1: got (692, 4) rows for a
        # 3000-token prompt (req_0_3 was chunked, then aborted by generate())
        smoke.check_hidden_states(results, prompts)
    except AssertionError as e:
        msg = str(e).splitlines()[0]
        pytest.fail(f"{msg}; scheduled (from position, tokens) per request: {scheduled}")
    assert len(steps) >= 2, f"the batch fit one scheduler step: {scheduled}"
