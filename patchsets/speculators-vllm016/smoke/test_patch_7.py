"""patch-7: call sample_tokens(None) after execute_model() returns None.

More sequences than MAX_NUM_SEQS (2 scheduler steps) and a second generate()
call, through the real MultiprocExecutor.execute_model / sample_tokens /
collective_rpc, against fake GPU workers that enforce vLLM 0.16's rule (see
conftest).
"""


def test_multi_step_and_repeated_generate(make_generator, smoke, gen_mod):
    gen = make_generator(tensor_parallel_size=2)
    prompts = smoke.prompts_of([3 + i % 7 for i in range(gen_mod.MAX_NUM_SEQS + 8)], seed=2)
    # Unpatched: RuntimeError: Worker failed with error 'State error:
    # sample_tokens() must be called after execute_model() returns None.',
    # please check the stack trace above for the root cause
    smoke.check_hidden_states(gen.generate(prompts), prompts)
    assert all(w.executed_steps == 2 for w in gen.fake_workers)

    again = smoke.prompts_of([4, 6], seed=3)
    smoke.check_hidden_states(gen.generate(again), again)
    assert all(w.pending_state is None for w in gen.fake_workers)
