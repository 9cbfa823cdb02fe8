"""Shared fixtures for the speculators-vllm016 smoke tests.

The tests run against the *installed* speculators 0.3.0 (patched or not) and the
real vLLM 0.16.0 on a CPU-only host:

* Real: ModelConfig / CacheConfig / SchedulerConfig / ParallelConfig / VllmConfig,
  the v1 Scheduler, Request, StructuredOutputManager, kv_cache_utils, and the
  MultiprocExecutor RPC code (collective_rpc / execute_model / sample_tokens /
  initialize_from_config) plus WorkerProc.enqueue_output.
* Faked, because it needs a GPU: the worker processes. A MultiprocExecutor is
  built with object.__new__ (its __init__ spawns GPU workers) and wired to
  in-process message queues that call FakeWorker, which follows vLLM 0.16's GPU
  worker contract (execute_model returns None and the next execute_model raises
  "State error: ..." until sample_tokens ran; a unique_reply_rank RPC returns
  that rank's reply itself) and HiddenStatesWorkerExtension's capture API.
  FakeWorker "captures" rows that encode (layer, position, token id), so the
  tests can check every sample's hidden states on the data.
* Also GPU-only and replaced: DeviceConfig() (cannot infer a device without a
  GPU -> DeviceConfig(device="cpu")) and torch.cuda.mem_get_info.

Expensive imports (vLLM, ~15 s) happen inside fixtures, once per session.
"""

import json
import os
import tempfile
import threading
from collections import deque
from functools import partial
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
# Remote-code tokenizers are copied into HF_MODULES_CACHE; keep that out of ~.
os.environ.setdefault("HF_MODULES_CACHE", tempfile.mkdtemp(prefix="smoke-hf-modules-"))

HIDDEN = 4  # fake captured row: (layer id, position in prompt, token id, 1.0)
NUM_LAYERS = 4
VOCAB = 128
MAX_MODEL_LEN = 4096
LAYER_IDS = [1, 2, 3]
FAKE_FREE_GPU_MEMORY = 64 * 1024 * 1024  # -> a few thousand KV blocks


# --------------------------------------------------------------------------
# tiny local model directories (nothing is downloaded)
# --------------------------------------------------------------------------
def write_tiny_model(d: Path, tokenizer_config: dict | None = None) -> Path:
    """A 4-layer Llama config.json plus a WordLevel tokenizer built in place."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    d.mkdir(parents=True, exist_ok=True)
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    vocab.update({f"w{i}": i for i in range(3, VOCAB)})
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(d / "tokenizer.json"))
    cfg = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<s>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "model_max_length": MAX_MODEL_LEN,
    }
    cfg.update(tokenizer_config or {})
    (d / "tokenizer_config.json").write_text(json.dumps(cfg))
    (d / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["LlamaForCausalLM"],
                "model_type": "llama",
                "hidden_size": 64,
                "intermediate_size": 128,
                "num_attention_heads": 4,
                "num_key_value_heads": 2,
                "num_hidden_layers": NUM_LAYERS,
                "vocab_size": VOCAB,
                "max_position_embeddings": MAX_MODEL_LEN,
                "rms_norm_eps": 1e-5,
                "torch_dtype": "bfloat16",
                "bos_token_id": 1,
                "eos_token_id": 2,
                "tie_word_embeddings": False,
            }
        )
    )
    return d


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny-llama"))


# --------------------------------------------------------------------------
# modules under test
# --------------------------------------------------------------------------
@pytest.fixture(scope="session")
def gen_mod():
    # No importorskip: an ImportError must fail the test, not skip it.
    import speculators.data_generation.vllm_hidden_states_generator as mod

    return mod


@pytest.fixture(scope="session")
def cw_mod():
    import speculators.data_generation.custom_worker as mod

    return mod


@pytest.fixture
def cpu_device(gen_mod, monkeypatch):
    """DeviceConfig() cannot infer a device without a GPU."""
    from vllm.config import DeviceConfig

    monkeypatch.setattr(gen_mod, "DeviceConfig", partial(DeviceConfig, device="cpu"))


@pytest.fixture
def create_config(gen_mod, cpu_device, tiny_model_dir):
    """Build a VllmConfig through the generator's own _create_vllm_config."""

    def create(tensor_parallel_size=2, max_model_len=MAX_MODEL_LEN):
        gen = object.__new__(gen_mod.VllmHiddenStatesGenerator)
        return gen._create_vllm_config(
            model_path=str(tiny_model_dir),
            max_model_len=max_model_len,
            gpu_memory_utilization=0.8,
            tensor_parallel_size=tensor_parallel_size,
        )

    return create


# --------------------------------------------------------------------------
# fake GPU workers behind a real MultiprocExecutor
# --------------------------------------------------------------------------
class FakeWorker:
    """Emulates one vLLM 0.16 GPU worker with HiddenStatesWorkerExtension."""

    def __init__(self, rank: int, vllm_config):
        self.rank = rank
        self.vllm_config = vllm_config
        self.tp_rank = rank % vllm_config.parallel_config.tensor_parallel_size
        self.requests: dict[str, list[int]] = {}
        self.pending_state = None  # GPUModelRunner.execute_model_state
        self.kv_cache_config = None
        self.executed_steps = 0

    # --- Worker / WorkerWrapperBase API used by the generator -------------
    def get_kv_cache_spec(self):
        import torch
        from vllm.v1.kv_cache_interface import FullAttentionSpec

        tp = self.vllm_config.parallel_config.tensor_parallel_size
        spec = FullAttentionSpec(
            block_size=self.vllm_config.cache_config.block_size,
            num_kv_heads=max(1, 2 // tp),
            head_size=16,
            dtype=torch.bfloat16,
        )
        return {f"model.layers.{i}.self_attn.attn": spec for i in range(NUM_LAYERS)}

    def initialize_from_config(self, kv_cache_configs):
        # WorkerWrapperBase.initialize_from_config indexes by global rank
        self.kv_cache_config = kv_cache_configs[self.rank]

    def compile_or_warm_up_model(self):
        return None

    def execute_model(self, scheduler_output):
        if self.pending_state is not None:  # gpu_model_runner.py:3317
            raise RuntimeError(
                "State error: sample_tokens() must be called "
                "after execute_model() returns None."
            )
        import torch

        for req_id in scheduler_output.finished_req_ids:
            self.requests.pop(req_id, None)
        batch = []  # (req_id, first position, n tokens), in batch order
        cached = scheduler_output.scheduled_cached_reqs
        for req_id, computed in zip(cached.req_ids, cached.num_computed_tokens):
            batch.append((req_id, computed))
        for new in scheduler_output.scheduled_new_reqs:
            self.requests[new.req_id] = list(new.prompt_token_ids)
            batch.append((new.req_id, new.num_computed_tokens))
        rows = []
        for req_id, start in batch:
            n = scheduler_output.num_scheduled_tokens[req_id]
            toks = self.requests[req_id][start : start + n]
            pos = torch.arange(start, start + n, dtype=torch.float32)
            rows.append(
                torch.stack(
                    [torch.zeros(n), pos, torch.tensor(toks, dtype=torch.float32),
                     torch.ones(n)],
                    dim=1,
                )
            )
        step = torch.cat(rows) if rows else torch.zeros(0, HIDDEN)
        if self.tp_rank == 0 and self._layer_ids:
            aux = []
            for layer in sorted(self._layer_ids):
                h = step.clone()
                h[:, 0] = layer
                aux.append(h)
            self._store_captured_states(aux)
        self.executed_steps += 1
        self.pending_state = scheduler_output
        return None  # 0.16: the output comes from sample_tokens()

    def sample_tokens(self, grammar_output):
        from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT

        if self.pending_state is None:
            return None
        self.pending_state = None
        return EMPTY_MODEL_RUNNER_OUTPUT

    def shutdown(self):
        return None

    # --- HiddenStatesWorkerExtension API (same semantics as custom_worker) -
    _layer_ids = frozenset()
    _captured_states = None

    def _setup_hidden_states_capture(self, layer_ids):
        self._layer_ids = frozenset(layer_ids)
        self._captured_states = None

    def _reset_capture(self):
        self._captured_states = None

    def _store_captured_states(self, aux):
        if self._captured_states is None:
            self._captured_states = [[h] for h in aux]
        else:
            for i, h in enumerate(aux):
                self._captured_states[i].append(h)

    def _get_captured_states(self):
        import torch

        if self._captured_states is None:
            return None
        result = [torch.cat(t, dim=0) for t in self._captured_states]
        self._captured_states = None
        return result


class FakeResponseMQ:
    """Stands in for a worker's shared-memory response MessageQueue."""

    def __init__(self):
        self.items = deque()

    def enqueue(self, item):
        self.items.append(item)

    def dequeue(self, timeout=None, cancel=None, indefinite=False):
        if not self.items:
            raise TimeoutError("fake response queue is empty")
        return self.items.popleft()


class FakeBroadcastMQ:
    """Stands in for rpc_broadcast_mq: runs WorkerProc.worker_busy_loop's
    dispatch for every worker, in process."""

    def __init__(self, workers, procs):
        self.workers, self.procs = workers, procs

    def enqueue(self, msg):
        method, args, kwargs, output_rank = msg
        for worker, proc in zip(self.workers, self.procs):
            try:
                output = getattr(worker, method)(*args, **kwargs)
            except Exception as e:  # as WorkerProc.worker_busy_loop
                output = e
            if output_rank is None or worker.rank == output_rank:
                proc.enqueue_output(output)  # real WorkerProc code


def make_fake_multiproc_executor(vllm_config):
    """A real MultiprocExecutor whose workers are FakeWorkers (GPU needed)."""
    from vllm.v1.executor.multiproc_executor import MultiprocExecutor, WorkerProc

    ex = object.__new__(MultiprocExecutor)
    # what Executor.__init__ / MultiprocExecutor._init_executor set up
    ex.vllm_config = vllm_config
    ex.model_config = vllm_config.model_config
    ex.cache_config = vllm_config.cache_config
    ex.parallel_config = vllm_config.parallel_config
    ex.scheduler_config = vllm_config.scheduler_config
    ex.is_failed = False
    ex.is_sleeping = False
    ex.failure_callback = None
    ex.shutdown_event = threading.Event()
    ex.kv_output_aggregator = None
    ex.futures_queue = deque()
    ex._get_parallel_sizes()  # sets world_size / local_world_size
    ex.fake_workers = [FakeWorker(r, vllm_config) for r in range(ex.world_size)]
    procs = []
    for _ in ex.fake_workers:
        proc = object.__new__(WorkerProc)
        proc.worker_response_mq = FakeResponseMQ()
        procs.append(proc)
    ex.response_mqs = [p.worker_response_mq for p in procs]
    ex.rpc_broadcast_mq = FakeBroadcastMQ(ex.fake_workers, procs)
    ex.output_rank = ex._get_output_rank()
    return ex


@pytest.fixture
def fake_gpu(gen_mod, cpu_device, monkeypatch):
    """Replace the GPU-only pieces the generator touches; returns the list of
    executors created."""
    import torch

    created = []

    def factory(vllm_config):
        ex = make_fake_multiproc_executor(vllm_config)
        created.append(ex)
        return ex

    monkeypatch.setattr(gen_mod, "MultiprocExecutor", factory)
    monkeypatch.setattr(
        torch.cuda, "mem_get_info", lambda *a: (FAKE_FREE_GPU_MEMORY, FAKE_FREE_GPU_MEMORY)
    )
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    return created


@pytest.fixture
def make_generator(gen_mod, fake_gpu, tiny_model_dir):
    """Run the generator's real __init__ against fake GPU workers."""

    def make(tensor_parallel_size=2, layer_ids=LAYER_IDS, max_model_len=MAX_MODEL_LEN):
        gen = gen_mod.VllmHiddenStatesGenerator(
            model_path=str(tiny_model_dir),
            layer_ids=list(layer_ids),
            max_model_len=max_model_len,
            tensor_parallel_size=tensor_parallel_size,
        )
        gen.fake_workers = fake_gpu[-1].fake_workers
        return gen

    return make


def record_schedules(gen, monkeypatch):
    """Spy on gen.scheduler.schedule(): list of (req_id -> (num_computed before
    this step, num_scheduled)) per non-empty step."""
    steps = []
    real = gen.scheduler.schedule

    def schedule():
        out = real()
        if out.total_num_scheduled_tokens:
            computed = {r.req_id: r.num_computed_tokens for r in out.scheduled_new_reqs}
            c = out.scheduled_cached_reqs
            computed.update(zip(c.req_ids, c.num_computed_tokens))
            steps.append(
                {rid: (computed[rid], n) for rid, n in out.num_scheduled_tokens.items()}
            )
        return out

    monkeypatch.setattr(gen.scheduler, "schedule", schedule)
    return steps


def check_hidden_states(results, prompts, layer_ids=LAYER_IDS):
    """Every sample must get one [len(prompt), HIDDEN] tensor per layer whose
    rows are exactly its own tokens at positions 0..len-1."""
    import torch

    assert len(results) == len(prompts)
    for i, (res, prompt) in enumerate(zip(results, prompts)):
        assert res["input_ids"].tolist() == list(prompt)
        hs = res["hidden_states"]
        assert len(hs) == len(layer_ids), f"sample {i}: {len(hs)} layers"
        for layer, h in zip(sorted(layer_ids), hs):
            assert tuple(h.shape) == (len(prompt), HIDDEN), (
                f"sample {i} layer {layer}: got {tuple(h.shape)} rows for a "
                f"{len(prompt)}-token prompt"
            )
            assert torch.all(h[:, 0] == layer)
            assert h[:, 1].tolist() == list(range(len(prompt))), f"sample {i} positions"
            assert h[:, 2].long().tolist() == list(prompt), f"sample {i} tokens"


def prompts_of(lengths, seed=0, prefix=()):
    import random

    rng = random.Random(seed)
    return [
        list(prefix) + [rng.randrange(3, VOCAB) for _ in range(n - len(prefix))]
        for n in lengths
    ]


@pytest.fixture(scope="session")
def smoke():
    """Helpers for the test files (no `import conftest` needed)."""
    import types

    return types.SimpleNamespace(
        LAYER_IDS=LAYER_IDS,
        MAX_MODEL_LEN=MAX_MODEL_LEN,
        write_tiny_model=write_tiny_model,
        make_fake_multiproc_executor=make_fake_multiproc_executor,
        record_schedules=record_schedules,
        check_hidden_states=check_hidden_states,
        prompts_of=prompts_of,
    )
