"""Shared fixtures for the speculators-vllm016 smoke tests.

The tests check the behaviour of whatever speculators generator / custom_worker
is installed (0.3.0 patched or not, or a newer release) on whatever vLLM is
installed, on a CPU-only host; only the GPU side is faked:

* Real: ModelConfig / CacheConfig / SchedulerConfig / ParallelConfig / VllmConfig,
  the v1 Scheduler, Request, StructuredOutputManager, kv_cache_utils, the
  MultiprocExecutor (built by its own __init__; collective_rpc / execute_model /
  sample_tokens / initialize_from_config), WorkerProc.worker_busy_loop and
  enqueue_output, vLLM's LlamaForCausalLM.forward, and the installed
  HiddenStatesWorkerExtension: it is mixed into the fake worker as
  WorkerWrapperBase.init_worker does, so every worker RPC the installed
  generator sends (_setup_hidden_states_capture, _set_request_metadata, ...) runs
  the installed extension code, and its capture forward runs on the fake model.
* Faked, because it needs a GPU: the worker processes (in-process WorkerProc
  objects, message queues), the GPU worker and model runner (persistent-batch
  bookkeeping as in GPUModelRunner._update_states, one forward per step), and
  the model: a LlamaForCausalLM tree with the installed vLLM's layout whose
  decoder layer i makes hidden_states + residual == (layer i, position, token
  id, 1.0), so the tests check every sample's hidden states on the data. The
  fake worker follows the installed vLLM's contract: where the Worker has
  sample_tokens (0.16), execute_model returns None and the next execute_model
  raises "State error: ..." until sample_tokens ran; compile_or_warm_up_model
  runs a dummy forward and returns what the installed Worker returns.
* Also GPU-only and replaced: DeviceConfig() (cannot infer a device without a
  GPU -> DeviceConfig(device="cpu")), torch.cuda.mem_get_info / empty_cache and
  torch.accelerator.current_accelerator.

Expensive imports (vLLM, ~15 s) happen inside fixtures, once per session.
"""

import atexit
import json
import os
import shutil
import tempfile
import threading
from collections import deque
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
# Remote-code tokenizers are copied into HF_MODULES_CACHE; keep that out of ~, in a folder of
# this run's own that goes when the run ends.
if "HF_MODULES_CACHE" not in os.environ:
    os.environ["HF_MODULES_CACHE"] = tempfile.mkdtemp(prefix="smoke-hf-modules-")
    atexit.register(shutil.rmtree, os.environ["HF_MODULES_CACHE"], ignore_errors=True)

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
#
# Everything here follows the *installed* vLLM: the worker-extension class named
# in the config (the installed speculators custom_worker) is mixed into the fake
# worker exactly as WorkerWrapperBase.init_worker does, so every worker RPC the
# installed generator sends is served by the installed extension code; the
# executor's attributes are set by the installed MultiprocExecutor's own code
# (__init__, _get_parallel_sizes, _get_output_rank) wherever it does not spawn
# processes; messages are dispatched by the installed WorkerProc.worker_busy_loop
# and enqueue_output. Only the GPU side is fake: the model runner and the model.
# --------------------------------------------------------------------------
def _resolve(qualname: str):
    import importlib

    module, _, name = qualname.rpartition(".")
    return getattr(importlib.import_module(module), name)


def installed_worker_cls():
    from vllm.v1.worker.gpu_worker import Worker

    return Worker


def _copy_real(real_cls, names):
    """Methods of the real vLLM class (they only delegate to self.model)."""
    return {n: real_cls.__dict__[n] for n in names if n in real_cls.__dict__}


def _interface_bases(real_cls):
    """The vLLM interface mixins (SupportsEagle3, SupportsPP, ...) the real
    model class declares, so supports_eagle3() & co. answer as for the real one."""
    return tuple(
        b for b in real_cls.__bases__
        if b.__module__.startswith("vllm.model_executor.models.interface")
    )


def make_fake_llama(num_layers: int = NUM_LAYERS):
    """A LlamaForCausalLM tree with the installed vLLM's layout and method names
    (top.model = LlamaModel with layers / start_layer / end_layer / norm and the
    installed embedding method), whose forwards are vLLM's own. Each decoder
    layer i outputs hidden_states + residual == (i, position, token id, 1.0), so
    captured rows say which layer, position and token they belong to."""
    import inspect

    import torch
    from torch import nn
    from vllm.model_executor.models import llama

    class LlamaDecoderLayer(nn.Module):
        def __init__(self, i):
            super().__init__()
            self.i = i

        def forward(self, positions, hidden_states, residual):
            x = hidden_states if residual is None else hidden_states + residual
            out = torch.stack(
                [torch.full_like(x[:, 0], self.i), positions.to(x.dtype), x[:, 2],
                 torch.ones_like(x[:, 0])],
                dim=1,
            )
            return out, torch.zeros_like(out)

    real_params = list(inspect.signature(llama.LlamaDecoderLayer.forward).parameters)
    fake_params = list(inspect.signature(LlamaDecoderLayer.forward).parameters)
    if real_params != fake_params:
        pytest.fail(f"harness: LlamaDecoderLayer.forward is {real_params} here, "
                    f"the fake layer has {fake_params}")

    class RMSNorm(nn.Module):
        def forward(self, x, residual=None):
            if residual is None:
                return x
            s = x + residual
            return s, s

    def embed(self, input_ids):  # token id in column 2
        t = input_ids.to(torch.float32)
        z = torch.zeros_like(t)
        return torch.stack([z, z, t, z], dim=1)

    def base_init(self, config):
        nn.Module.__init__(self)
        self.config = config
        self.start_layer, self.end_layer = 0, num_layers
        self.layers = nn.ModuleList(LlamaDecoderLayer(i) for i in range(num_layers))
        self.norm = RMSNorm()
        self.aux_hidden_state_layers = ()

    base_ns = {"__init__": base_init, "forward": llama.LlamaModel.forward}
    for name in ("embed_input_ids", "get_input_embeddings"):  # whichever exists here
        if hasattr(llama.LlamaModel, name):
            base_ns[name] = embed
    LlamaModel = type("LlamaModel", (nn.Module,), base_ns)

    def top_init(self):
        nn.Module.__init__(self)
        self.config = SimpleNamespace(num_hidden_layers=num_layers)
        self.model = LlamaModel(self.config)

    top_ns = {"__init__": top_init, "forward": llama.LlamaForCausalLM.forward}
    top_ns.update(_copy_real(llama.LlamaForCausalLM, (
        "embed_input_ids", "get_input_embeddings", "set_aux_hidden_state_layers",
        "get_eagle3_aux_hidden_state_layers",
    )))
    LlamaForCausalLM = type(
        "LlamaForCausalLM", (nn.Module, *_interface_bases(llama.LlamaForCausalLM)), top_ns
    )
    return LlamaForCausalLM()


class PersistentBatch:
    """The slot bookkeeping of vLLM's InputBatch (v1/worker/gpu_input_batch.py):
    remove_request leaves a hole, add_request fills the lowest hole (else
    appends), condense() moves the last requests down into the holes. The
    model's input is laid out in slot order."""

    def __init__(self):
        self._slots: list[str | None] = []
        self.req_id_to_index: dict[str, int] = {}
        self._removed: list[int] = []

    @property
    def req_ids(self) -> list[str]:
        return [r for r in self._slots if r is not None]

    def remove_request(self, req_id):
        i = self.req_id_to_index.pop(req_id, None)
        if i is not None:
            self._slots[i] = None
            self._removed.append(i)
        return i

    def add_request(self, req_id):
        if self._removed:
            i = min(self._removed)
            self._removed.remove(i)
            self._slots[i] = req_id
        else:
            i = len(self._slots)
            self._slots.append(req_id)
        self.req_id_to_index[req_id] = i

    def condense(self):
        holes, self._removed = sorted(self._removed), []
        last = len(self._slots) - 1
        for hole in holes:
            while last >= 0 and self._slots[last] is None:
                last -= 1
            if hole >= last:
                break
            req_id = self._slots[last]
            self._slots[hole], self._slots[last] = req_id, None
            self.req_id_to_index[req_id] = hole
        while self._slots and self._slots[-1] is None:
            self._slots.pop()


class FakeModelRunner:
    """GPUModelRunner on a CPU: per-request state and persistent batch as in
    _update_states, one forward of the whole batch through self.model (so the
    worker extension's patched forward runs), and the installed vLLM's output
    contract (see FakeGPUWorker)."""

    STATE_ERROR = ("State error: sample_tokens() must be called after "
                   "execute_model() returns None.")  # gpu_model_runner.execute_model

    def __init__(self, vllm_config, deferred_sampling: bool):
        self.vllm_config = vllm_config
        self.model = make_fake_llama()
        self.requests: dict[str, SimpleNamespace] = {}
        self.input_batch = PersistentBatch()
        self.deferred_sampling = deferred_sampling
        self.execute_model_state = None
        self.executed_steps = 0

    def _update_states(self, so):
        for req_id in so.finished_req_ids:
            self.requests.pop(req_id, None)
            self.input_batch.remove_request(req_id)
        cached = so.scheduled_cached_reqs
        resumed = set(getattr(cached, "resumed_req_ids", None) or ())
        resumed |= {r for r, flag in zip(cached.req_ids,
                                         getattr(cached, "resumed_from_preemption", None) or ())
                    if flag}
        scheduled = set(so.num_scheduled_tokens)
        for req_id in set(self.input_batch.req_id_to_index) - (scheduled - resumed):
            self.input_batch.remove_request(req_id)  # unscheduled / preempted
        to_add = []
        for new in so.scheduled_new_reqs:
            self.requests[new.req_id] = SimpleNamespace(
                prompt_token_ids=list(new.prompt_token_ids),
                num_computed_tokens=new.num_computed_tokens,
            )
            to_add.append(new.req_id)
        for req_id, computed in zip(cached.req_ids, cached.num_computed_tokens):
            self.requests[req_id].num_computed_tokens = computed
            if req_id not in self.input_batch.req_id_to_index:
                to_add.append(req_id)
        for req_id in to_add:
            self.input_batch.add_request(req_id)
        self.input_batch.condense()

    def forward(self, token_ids, positions):
        import torch

        return self.model(
            input_ids=torch.tensor(token_ids, dtype=torch.long),
            positions=torch.tensor(positions, dtype=torch.long),
            intermediate_tensors=None,
            inputs_embeds=None,
        )

    def dummy_run(self, num_tokens=16):  # compile_or_warm_up_model's _dummy_run
        self.forward([0] * num_tokens, list(range(num_tokens)))

    def execute_model(self, so):
        from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT

        if self.execute_model_state is not None:
            raise RuntimeError(self.STATE_ERROR)
        self._update_states(so)
        token_ids, positions = [], []
        for req_id in self.input_batch.req_ids:
            n = so.num_scheduled_tokens[req_id]
            req = self.requests[req_id]
            start = req.num_computed_tokens
            for p in range(start, start + n):  # beyond the prompt: a sampled token
                token_ids.append(req.prompt_token_ids[p] if p < len(req.prompt_token_ids) else 0)
                positions.append(p)
        if token_ids:
            self.forward(token_ids, positions)
        self.executed_steps += 1
        if self.deferred_sampling:
            self.execute_model_state = so
            return None
        return EMPTY_MODEL_RUNNER_OUTPUT

    def sample_tokens(self, grammar_output):
        from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT

        if self.execute_model_state is None:
            return None
        self.execute_model_state = None
        return EMPTY_MODEL_RUNNER_OUTPUT


class FakeGPUWorker:
    """Stands in for vllm.v1.worker.gpu_worker.Worker. The installed worker
    extension class is appended to its bases (see fake_worker_class). Where the
    installed Worker has sample_tokens (0.16; not 0.11), execute_model returns
    None and the next execute_model raises the "State error" until
    sample_tokens ran; otherwise execute_model returns the output itself."""

    def __init__(self, vllm_config, rank: int):
        self.vllm_config = vllm_config
        self.rank = self.local_rank = self.rpc_rank = self.global_rank = rank
        pc = vllm_config.parallel_config
        tp = pc.tensor_parallel_size
        self.tp_group = SimpleNamespace(
            rank_in_group=rank % tp, world_size=tp, rank=rank,
            ranks=list(range(rank - rank % tp, rank - rank % tp + tp)),
            is_first_rank=rank % tp == 0, is_last_rank=rank % tp == tp - 1,
        )
        self.pp_group = SimpleNamespace(
            rank_in_group=0, world_size=1, rank=rank, ranks=[rank],
            is_first_rank=True, is_last_rank=True,
        )
        self.model_runner = FakeModelRunner(
            vllm_config, deferred_sampling=hasattr(installed_worker_cls(), "sample_tokens")
        )
        self.kv_cache_config = None

    # test helpers
    @property
    def executed_steps(self):
        return self.model_runner.executed_steps

    @property
    def pending_state(self):
        return self.model_runner.execute_model_state

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
        # WorkerWrapperBase.initialize_from_config indexes by rank
        self.kv_cache_config = kv_cache_configs[self.global_rank]

    def compile_or_warm_up_model(self):
        # the real warm-up ends with a dummy forward (gpu_worker.py)
        self.model_runner.dummy_run()
        ret = inspect_return(installed_worker_cls().compile_or_warm_up_model)
        return 0.0 if ret in (float, "float") else None  # 0.17: compilation time

    def execute_model(self, scheduler_output):
        return self.model_runner.execute_model(scheduler_output)

    def shutdown(self):
        return None


class _SampleTokens:
    def sample_tokens(self, grammar_output):
        return self.model_runner.sample_tokens(grammar_output)


def inspect_return(fn):
    import inspect

    return inspect.signature(fn).return_annotation


def fake_worker_class(vllm_config):
    """FakeGPUWorker (+ sample_tokens where the installed Worker has it) with the
    configured worker extension appended to its bases, as
    WorkerWrapperBase.init_worker does (including its no-clash assertion)."""
    bases: list[type] = [FakeGPUWorker]
    if hasattr(installed_worker_cls(), "sample_tokens"):
        bases.insert(0, _SampleTokens)
    ext_name = vllm_config.parallel_config.worker_extension_cls
    if ext_name:
        ext = _resolve(ext_name)
        for attr in dir(ext):
            if attr.startswith("__"):
                continue
            assert not any(hasattr(b, attr) for b in bases), (
                f"harness: the fake worker defines {attr!r} of {ext_name}"
            )
        bases.append(ext)
    return type("Worker", tuple(bases), {})


class _LoopDone(Exception):
    pass


class _OneMessage:
    """A WorkerProc's rpc_broadcast_mq holding one message; then it stops the loop."""

    def __init__(self, msg):
        self.msg = msg

    def dequeue(self, timeout=None, cancel=None, indefinite=False):
        if self.msg is None:
            raise _LoopDone
        msg, self.msg = self.msg, None
        return msg


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
    """Stands in for the executor's rpc_broadcast_mq: every worker process runs
    the installed WorkerProc.worker_busy_loop on the message, in process, with
    that worker's TP/PP groups installed as vLLM's parallel_state groups."""

    def __init__(self, procs):
        self.procs = procs

    def enqueue(self, msg):
        from vllm.distributed import parallel_state as ps

        for proc in self.procs:
            proc.rpc_broadcast_mq = _OneMessage(msg)
            saved = ps._TP, ps._PP
            ps._TP, ps._PP = proc.worker.tp_group, proc.worker.pp_group
            try:
                proc.worker_busy_loop()
            except _LoopDone:
                pass
            finally:
                ps._TP, ps._PP = saved


def make_fake_multiproc_executor(vllm_config):
    """A real MultiprocExecutor, built by its own __init__, whose
    _init_executor does what the installed one does minus spawning GPU worker
    processes: the workers are in-process WorkerProc objects around fake GPU
    workers."""
    from unittest import mock

    from vllm.v1.executor.multiproc_executor import MultiprocExecutor, WorkerProc

    def init_executor(self):
        self.is_failed = False
        self.shutdown_event = threading.Event()
        self.failure_callback = None
        self.io_thread_pool = None  # read by 0.11's collective_rpc
        if hasattr(self, "_get_parallel_sizes"):  # 0.16: world_size, local_world_size
            self._get_parallel_sizes()
        else:
            self.world_size = self.parallel_config.world_size
        worker_cls = fake_worker_class(self.vllm_config)
        procs = []
        for rank in range(self.world_size):
            proc = object.__new__(WorkerProc)
            proc.rank = rank
            proc.worker = worker_cls(self.vllm_config, rank)
            proc.worker_response_mq = FakeResponseMQ()
            proc.use_async_scheduling = False  # output order is the same either way
            proc.mm_receiver_cache = None
            procs.append(proc)
        self.workers = procs  # 0.11's collective_rpc reads workers[i].worker_response_mq
        self.response_mqs = [p.worker_response_mq for p in procs]
        self.rpc_broadcast_mq = FakeBroadcastMQ(procs)
        self.futures_queue = deque()
        self.has_connector = self.vllm_config.kv_transfer_config is not None
        self.output_rank = self._get_output_rank()
        self.fake_workers = [p.worker for p in procs]

    with mock.patch.object(MultiprocExecutor, "_init_executor", init_executor):
        ex = MultiprocExecutor(vllm_config=vllm_config)
    ex.shutdown = lambda: None  # no worker processes to stop
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
    # speculators >= 0.4 asks torch.accelerator which device module to query
    if hasattr(torch, "accelerator"):
        monkeypatch.setattr(
            torch.accelerator, "current_accelerator", lambda *a, **k: torch.device("cuda")
        )
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
        assert res["input_ids"].tolist() == list(prompt), f"result {i} is not prompt {i}"
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
