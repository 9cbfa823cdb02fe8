"""patch-12: one generate() call with more prompts than max_num_seqs (32).

speculators 0.4.0 leaves every request it scheduled running until the whole
call is over (it aborts them all after the loop), and never gives the Scheduler
a model output, so a request whose prompt is done stays in scheduler.running
with nothing left to schedule. Once 32 are running (MAX_NUM_SEQS ->
SchedulerConfig.max_num_seqs), the Scheduler admits no waiting request, the
next schedule() has 0 tokens and ends the loop with prompts 33+ never run.

Runs the installed generator's real generate() on CPU with the real vLLM 0.16
Scheduler, Request, MultiprocExecutor RPC code and the installed
HiddenStatesWorkerExtension; only the GPU worker and model are faked (see the
speculators-vllm016 conftest.py, which serves this folder too). Bounded: the
Scheduler is stopped after STEP_LIMIT schedule() calls, so a generator that
loops without progress fails instead of hanging.
"""

import pytest

STEP_LIMIT = 200


def _bounded(gen, monkeypatch):
    real = gen.scheduler.schedule
    calls = []

    def schedule():
        calls.append(1)
        if len(calls) > STEP_LIMIT:
            raise RuntimeError(f"generate() made no progress in {STEP_LIMIT} scheduler steps")
        return real()

    monkeypatch.setattr(gen.scheduler, "schedule", schedule)
    return calls


def test_more_prompts_than_max_num_seqs(make_generator, smoke, monkeypatch):
    gen = make_generator(tensor_parallel_size=2)
    max_seqs = gen.vllm_config.scheduler_config.max_num_seqs
    n = max_seqs + 13
    prompts = smoke.prompts_of([4 + i % 9 for i in range(n)], seed=12)
    _bounded(gen, monkeypatch)
    steps = smoke.record_schedules(gen, monkeypatch)

    # Unpatched: RuntimeError: Request req_0_32 not found in captured states.
    # Available: ['req_0_0', ..., 'req_0_31']
    results = gen.generate(prompts)

    # every prompt gets its own result; the order of results is patch-11's test
    assert len({tuple(p) for p in prompts}) == n
    by_prompt = {tuple(r["input_ids"].tolist()): r for r in results}
    smoke.check_hidden_states([by_prompt.get(tuple(p), {"input_ids": None}) for p in prompts],
                              prompts)
    assert all(len(step) <= max_seqs for step in steps)
    assert len(steps) >= 2, "the batch fit one scheduler step"

    # the next call starts clean (nothing left running or waiting)
    again = smoke.prompts_of([6, 9, 3], seed=13)  # fewer than 11: any order is the prompts'
    smoke.check_hidden_states(gen.generate(again), again)
    if gen.scheduler.get_num_unfinished_requests():
        pytest.fail(f"{gen.scheduler.get_num_unfinished_requests()} requests left in the Scheduler")
