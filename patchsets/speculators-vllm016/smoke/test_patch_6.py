"""patch-6: collective_rpc(..., unique_reply_rank=0) returns the reply itself.

The real MultiprocExecutor.collective_rpc runs against fake GPU workers (see
conftest); rank 0 replies with the list of per-layer tensors. One short batch,
one scheduler step.
"""


def test_captured_states_per_layer(make_generator, smoke):
    gen = make_generator(tensor_parallel_size=2)
    prompts = smoke.prompts_of([5, 9, 3], seed=1)
    # Unpatched: RuntimeError: Boolean value of Tensor with more than one value
    # is ambiguous  (aux_hidden_states = captured_states_list[0] is layer 0's
    # tensor, then `if not aux_hidden_states`)
    results = gen.generate(prompts)

    assert all(w.executed_steps == 1 for w in gen.fake_workers)
    for res, prompt in zip(results, prompts):
        assert len(res["hidden_states"]) == len(smoke.LAYER_IDS)
        assert all(tuple(h.shape) == (len(prompt), 4) for h in res["hidden_states"])
    smoke.check_hidden_states(results, prompts)
