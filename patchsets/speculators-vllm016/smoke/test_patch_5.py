"""patch-5: CacheConfig(..., enable_prefix_caching=False).

Prompts sharing a prefix (within one generate() call and across calls) must
get ALL their tokens computed, so every sample has hidden states for every
token. Real Scheduler / KV cache manager; fake GPU workers (see conftest)
return rows that encode (layer, position, token).
"""

import traceback

import pytest


def test_shared_prefix_fully_computed(make_generator, smoke, monkeypatch):
    gen = make_generator(tensor_parallel_size=2)
    steps = smoke.record_schedules(gen, monkeypatch)

    prefix = smoke.prompts_of([64], seed=5)[0]
    prompts = smoke.prompts_of([104, 104, 80], seed=6, prefix=prefix)
    prompts.append(list(prompts[0]))  # exact duplicate in the same batch
    try:
        results = gen.generate(prompts)
    except AssertionError as e:
        # Unpatched: a bare AssertionError from vllm/v1/core/block_pool.py
        # (assert len(request.block_hashes) >= num_full_blocks) in schedule()
        where = traceback.extract_tb(e.__traceback__)[-1]
        pytest.fail(
            f"AssertionError at {where.filename.split('site-packages/')[-1]}:"
            f"{where.lineno}: {where.line}"
        )
    smoke.check_hidden_states(results, prompts)

    again = [list(prompts[1]), prefix + prompts[2][64:]]  # cross-call prefix hit
    smoke.check_hidden_states(gen.generate(again), again)

    for step in steps:
        for req_id, (computed, n) in step.items():
            assert computed == 0, f"{req_id}: {computed} tokens taken from the cache"
    # False with the patch (vLLM 0.11's default None also means off)
    assert not gen.vllm_config.cache_config.enable_prefix_caching
