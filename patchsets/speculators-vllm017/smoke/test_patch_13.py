"""patch-13: the EOS id goes into the SamplingParams, not Request(eos_token_id=).

vLLM 0.17's Request.__init__ has no eos_token_id parameter; the scheduler reads
sampling_params.eos_token_id. generate() must build its requests (real Request,
real Scheduler, real MultiprocExecutor against fake GPU workers, see the
conftest of speculators-vllm016) and every request must carry the tokenizer's
EOS id where vLLM 0.17 looks for it.
"""


def test_requests_carry_eos_in_sampling_params(make_generator, smoke, monkeypatch):
    gen = make_generator(tensor_parallel_size=2)
    added = []
    real_add = gen.scheduler.add_request

    def add_request(request):
        added.append(request)
        return real_add(request)

    monkeypatch.setattr(gen.scheduler, "add_request", add_request)
    prompts = smoke.prompts_of([5, 9, 3], seed=13)
    # Unpatched: TypeError: Request.__init__() got an unexpected keyword
    # argument 'eos_token_id'
    smoke.check_hidden_states(gen.generate(prompts), prompts)

    eos = gen.tokenizer.eos_token_id
    assert eos is not None, "harness: the tiny tokenizer has an EOS token"
    assert len(added) == len(prompts)
    for request in added:
        assert request.sampling_params.eos_token_id == eos, (
            f"{request.request_id}: sampling_params.eos_token_id="
            f"{request.sampling_params.eos_token_id!r}, tokenizer EOS {eos}"
        )
