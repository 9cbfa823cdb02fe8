"""patch-7: call sample_tokens(None) after execute_model() returns None.

One generate() whose batch exceeds the token budget (max_num_batched_tokens =
8192) without any request needing to be chunked, so it takes two scheduler
steps, then a second generate() call, through the real MultiprocExecutor
execute_model / sample_tokens / collective_rpc, against fake GPU workers that
follow the installed vLLM's contract (where the Worker has sample_tokens, as in
0.16: execute_model returns None, and the next execute_model raises "State
error" until sample_tokens ran; see conftest).
"""


def test_multi_step_and_repeated_generate(make_generator, smoke):
    gen = make_generator(tensor_parallel_size=2)
    budget = gen.vllm_config.scheduler_config.max_num_batched_tokens
    longest = gen.vllm_config.model_config.max_model_len - 1  # generate() keeps <= this
    # Prompts filling the budget exactly, then one more: two steps, and no
    # request is chunked whether or not chunked prefill is on (that is patch-8).
    lengths, left = [], budget
    while left:
        lengths.append(min(longest, left))
        left -= lengths[-1]
    prompts = smoke.prompts_of([*lengths, 7], seed=2)
    # Unpatched: RuntimeError: Worker failed with error 'State error:
    # sample_tokens() must be called after execute_model() returns None.',
    # please check the stack trace above for the root cause
    smoke.check_hidden_states(gen.generate(prompts), prompts)
    assert all(w.executed_steps >= 2 for w in gen.fake_workers)

    again = smoke.prompts_of([4, 6], seed=3)
    smoke.check_hidden_states(gen.generate(again), again)
    assert all(w.pending_state is None for w in gen.fake_workers)
