"""patch-8: SchedulerConfig(..., enable_chunked_prefill=False).

A batch whose prompt tokens exceed the token budget (max_num_batched_tokens =
8192): every request must be scheduled whole (generate() aborts each scheduled
request after one step), and every sample must get hidden states for all its
tokens. Real Scheduler; fake GPU workers (see conftest).
"""


def test_big_batch_scheduled_whole(make_generator, smoke, monkeypatch):
    gen = make_generator(tensor_parallel_size=2)
    budget = gen.vllm_config.scheduler_config.max_num_batched_tokens
    lengths = [1500, 3000, 3000, 3000]
    assert sum(lengths) > budget
    prompts = smoke.prompts_of(lengths, seed=8)
    steps = smoke.record_schedules(gen, monkeypatch)

    results = gen.generate(prompts)

    by_id = {f"req_0_{i}": len(p) for i, p in enumerate(prompts)}
    scheduled = {}
    for step in steps:
        for req_id, (computed, n) in step.items():
            # Unpatched (silent): req_0_3 is chunked (692 of 3000 tokens) and
            # then aborted by generate(); its hidden states are truncated.
            assert (computed, n) == (0, by_id[req_id]), (
                f"{req_id} scheduled {n} of {by_id[req_id]} tokens "
                f"(from position {computed})"
            )
            scheduled[req_id] = n
    assert scheduled == by_id
    assert len(steps) >= 2
    smoke.check_hidden_states(results, prompts)

