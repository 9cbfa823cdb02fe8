"""patch-11: generate() returns results in the order of its prompts.

speculators 0.4.0 builds its result list by iterating sorted(request ids), and
the ids are strings "req_<call>_<i>", so from 11 prompts on the order is
lexicographic (req_0_0, req_0_1, req_0_10, req_0_2, ...), not the prompts'
order. Each result dict stays internally consistent (its input_ids and hidden
states belong together), so nothing fails inside generate(); the caller, which
pairs result j with its own sample j (upstream's data_generation_offline.py
takes loss_mask j for result j), silently gets the wrong sample.

Runs the installed generator's real generate() on CPU with the real vLLM 0.16
Scheduler, Request, MultiprocExecutor RPC code and the installed
HiddenStatesWorkerExtension; only the GPU worker and model are faked (see the
speculators-vllm016 conftest.py, which serves this folder too).
"""


def test_results_follow_prompt_order(make_generator, smoke):
    gen = make_generator(tensor_parallel_size=2)
    # 12 prompts of distinct lengths: a result paired with the wrong prompt
    # differs in length, tokens and hidden-state rows
    lengths = [5 + 3 * i for i in range(12)]
    prompts = smoke.prompts_of(lengths, seed=11)
    masks = [[i % 2] * n for i, n in enumerate(lengths)]  # the caller's per-sample data

    results = gen.generate(prompts)

    got = [len(r["input_ids"]) for r in results]
    # Unpatched (silent): results come back as prompts 0, 1, 10, 11, 2, 3, ... 9
    assert got == lengths, f"result lengths {got} for prompt lengths {lengths}"
    for j, result in enumerate(results):  # as data_generation_offline.py pairs them
        mask = masks[j][: len(result["input_ids"])]
        assert len(mask) == len(result["input_ids"]), f"loss mask {j} paired with another sample"
    smoke.check_hidden_states(results, prompts)

    # a second call (request ids "req_1_*") keeps the order too
    again = smoke.prompts_of(list(reversed(lengths)), seed=12)
    smoke.check_hidden_states(gen.generate(again), again)
