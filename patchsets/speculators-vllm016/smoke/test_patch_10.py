"""patch-10: custom_worker.py for vLLM 0.16's DeepseekV2Model (DeepSeek-V3,
Kimi-K2.5), keeping Llama-style and Qwen3-VL models working.

The real models need a GPU (MLA attention, MoE kernels), so the worker-side
model is faked: small nn.Module trees with the *installed* vLLM's attribute
layout (Kimi wrapper -> language_model -> model -> layers / embedding method /
norm / config), whose model classes declare the same vLLM interface mixins as
the real ones (SupportsEagle3, SupportsMultiModal.get_language_model, ...),
whose decoder layers have exactly the installed layer signatures and whose base
model uses vLLM's *real* DeepseekV2Model.forward / LlamaModel.forward as its own
forward. vLLM's TP/PP groups are single-rank stand-ins (no distributed init on
CPU). The installed HiddenStatesWorkerExtension's capture forward must reproduce
vLLM's own forward output (incl. llama_4_scaling, computed by the real
_get_llama_4_scaling, where the installed vLLM has it) and capture one [T, H]
tensor per target layer, through whatever capture protocol the installed
extension has (0.4.0: per-request metadata, states keyed by request id).

Why patch-10 is needed on vLLM 0.16 (checked against 0.16 by the fakes, which
mirror it): supports_eagle3() is False for DeepseekV2/V3ForCausalLM and
KimiK25ForConditionalGeneration (0.3.0's gate), DeepseekV2Model and LlamaModel
have embed_input_ids and no get_input_embeddings, Kimi's text model sits at
.language_model.model, and DeepseekV2DecoderLayer.forward takes llama_4_scaling.

Model-level keywords: Qwen3VLForConditionalGeneration.forward calls its text
model as language_model.model(..., deepstack_input_embeds=...) (checked against
the installed source), and Qwen3DecoderLayer.forward takes no such argument. The
capture forward must accept the keyword and not pass it on to the layers
(passing it on raised TypeError: ... got an unexpected keyword argument
'deepstack_input_embeds').
"""

import importlib.util
import inspect
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from torch import nn

H = 8
LAYERS = 4
TARGET = [1, 2]
L4S = {"original_max_position_embeddings": 8192, "beta": 0.1}


def _installed_models_dir() -> Path:
    spec = importlib.util.find_spec("vllm")  # no vLLM import at collection time
    return Path(spec.origin).parent / "model_executor" / "models"


_MODELS = _installed_models_dir()
# Kimi-K2.5 exists only in vLLM >= 0.16, llama_4_scaling only where
# DeepseekV2Model computes it; elsewhere there is nothing to support.
KINDS = ["deepseek_v3", "llama"]
if (_MODELS / "kimi_k25.py").exists():
    KINDS.insert(1, "kimi")
if "def _get_llama_4_scaling" in (_MODELS / "deepseek_v2.py").read_text():
    KINDS.insert(-1, "mistral_large3")
# Qwen3-VL passes deepstack_input_embeds to its text model where vLLM has it
_QWEN3_VL = _MODELS / "qwen3_vl.py"
if _QWEN3_VL.exists() and "deepstack_input_embeds=" in _QWEN3_VL.read_text():
    KINDS.append("qwen3_vl")
# keywords the real top-level model passes to its text model's forward
MODEL_KWARGS = {"qwen3_vl": {"deepstack_input_embeds": None}}  # None: a text-only prompt


@pytest.fixture(scope="module")
def vllm_models():
    import importlib

    from vllm.model_executor.models import deepseek_v2, interfaces, llama

    kimi = qwen3 = qwen3_vl = None
    if "kimi" in KINDS:
        kimi = importlib.import_module("vllm.model_executor.models.kimi_k25")
    if "qwen3_vl" in KINDS:
        qwen3 = importlib.import_module("vllm.model_executor.models.qwen3")
        qwen3_vl = importlib.import_module("vllm.model_executor.models.qwen3_vl")
    return SimpleNamespace(ds=deepseek_v2, itf=interfaces, kimi=kimi, llama=llama,
                           qwen3=qwen3, qwen3_vl=qwen3_vl)


@pytest.fixture
def single_rank(monkeypatch):
    """vLLM's TP and PP groups (read by get_tp_group() / get_pp_group()) for a
    single-rank run."""
    from vllm.distributed import parallel_state as ps

    group = SimpleNamespace(
        rank_in_group=0, world_size=1, rank=0, ranks=[0], is_first_rank=True, is_last_rank=True
    )
    monkeypatch.setattr(ps, "_TP", group)
    monkeypatch.setattr(ps, "_PP", group)


def _interface_bases(real_cls):
    return tuple(
        b for b in real_cls.__bases__
        if b.__module__.startswith("vllm.model_executor.models.interface")
    )


def _mirror(name, real_cls, bases, ns, delegating=()):
    """A class named like real_cls with real_cls's vLLM interface mixins and its
    own (delegating) methods among `delegating`, where the real class has them."""
    ns = dict(ns)
    for m in delegating:
        if m in real_cls.__dict__:
            ns[m] = real_cls.__dict__[m]
    return type(name, (*bases, *_interface_bases(real_cls)), ns)


EMBED = ("embed_input_ids", "get_input_embeddings")


def _fake_tree(kind, m):
    """nn.Module trees mirroring the installed vLLM's layout (module docstring)."""

    class _Layer(nn.Module):
        def __init__(self, i):
            super().__init__()
            self.proj = nn.Linear(H, H)
            torch.nn.init.normal_(self.proj.weight, generator=torch.Generator().manual_seed(i))
            self.seen_scaling = "not called"

        def step(self, hidden_states, residual, llama_4_scaling):
            self.seen_scaling = llama_4_scaling
            if residual is None:
                residual = hidden_states
            else:
                hidden_states = hidden_states + residual
                residual = hidden_states
            out = torch.tanh(self.proj(hidden_states))
            if llama_4_scaling is not None:
                out = out * llama_4_scaling[:, 0, 0][:, None]
            return out, residual

    ds_has_l4s = "llama_4_scaling" in inspect.signature(m.ds.DeepseekV2DecoderLayer.forward).parameters
    if ds_has_l4s:  # vLLM >= 0.16 signature (checked in test_fakes_mirror_installed_vllm)

        class DeepseekV2DecoderLayer(_Layer):
            def forward(self, positions, hidden_states, residual, llama_4_scaling=None):
                return self.step(hidden_states, residual, llama_4_scaling)

    else:

        class DeepseekV2DecoderLayer(_Layer):
            def forward(self, positions, hidden_states, residual):
                return self.step(hidden_states, residual, None)

    class LlamaDecoderLayer(_Layer):
        def forward(self, positions, hidden_states, residual):
            return self.step(hidden_states, residual, None)

    class Qwen3DecoderLayer(_Layer):
        def forward(self, positions, hidden_states, residual):
            return self.step(hidden_states, residual, None)

    class _Norm(nn.Module):
        def forward(self, hidden_states, residual):
            out = hidden_states + residual
            return out * 0.5, out

    def embed(self, input_ids):
        return self.embed_tokens(input_ids)

    def base_init(self, layer_cls, config):
        nn.Module.__init__(self)
        self.config = config
        self.embed_tokens = nn.Embedding(64, H)
        self.start_layer, self.end_layer = 0, LAYERS
        self.layers = nn.ModuleList(layer_cls(i) for i in range(LAYERS))
        self.norm = _Norm()
        self.aux_hidden_state_layers = ()

    def base_cls(name, real):  # embedding method under the installed name(s)
        ns = {"__init__": base_init, "forward": real.forward}  # vLLM's own forward
        ns.update({e: embed for e in EMBED if hasattr(real, e)})
        return type(name, (nn.Module,), ns)

    def causal_lm(name, real, base, layer_cls, config):
        def init(self):
            nn.Module.__init__(self)
            self.config = config
            self.model = base(layer_cls, config)

        return _mirror(name, real, (nn.Module,), {"__init__": init}, delegating=(
            *EMBED, "set_aux_hidden_state_layers", "get_eagle3_aux_hidden_state_layers",
        ))

    if kind == "llama":
        LlamaModel = base_cls("LlamaModel", m.llama.LlamaModel)
        top = causal_lm("LlamaForCausalLM", m.llama.LlamaForCausalLM, LlamaModel,
                        LlamaDecoderLayer, SimpleNamespace())()
        return top, top.model

    if kind == "qwen3_vl":
        # Qwen3VLForConditionalGeneration -> language_model (Qwen3LLMForCausalLM,
        # a Qwen3ForCausalLM) -> model (Qwen3LLMModel, vLLM's own forward)
        Qwen3LLMModel = base_cls("Qwen3LLMModel", m.qwen3_vl.Qwen3LLMModel)
        Qwen3LLMForCausalLM = causal_lm("Qwen3LLMForCausalLM", m.qwen3.Qwen3ForCausalLM,
                                        Qwen3LLMModel, Qwen3DecoderLayer, SimpleNamespace())

        def vl_init(self):
            nn.Module.__init__(self)
            self.visual = nn.Identity()
            self.language_model = Qwen3LLMForCausalLM()

        VL = _mirror("Qwen3VLForConditionalGeneration", m.qwen3_vl.Qwen3VLForConditionalGeneration,
                     (nn.Module,), {"__init__": vl_init}, delegating=(
                         *EMBED, "get_language_model", "set_aux_hidden_state_layers",
                         "get_eagle3_aux_hidden_state_layers"))  # own where vLLM < 0.16
        top = VL()
        return top, top.language_model.model

    DeepseekV2Model = base_cls("DeepseekV2Model", m.ds.DeepseekV2Model)
    config = SimpleNamespace(llama_4_scaling=L4S) if kind == "mistral_large3" else SimpleNamespace()
    DeepseekV2ForCausalLM = causal_lm("DeepseekV2ForCausalLM", m.ds.DeepseekV2ForCausalLM,
                                      DeepseekV2Model, DeepseekV2DecoderLayer, config)
    DeepseekV3ForCausalLM = type("DeepseekV3ForCausalLM", (DeepseekV2ForCausalLM,), {})

    if kind == "kimi":

        def kimi_init(self):
            nn.Module.__init__(self)
            self.vision_tower = nn.Identity()
            self.mm_projector = nn.Identity()
            # kimi_k25.py builds it with architectures=["DeepseekV2ForCausalLM"]
            self.language_model = DeepseekV2ForCausalLM()

        Kimi = _mirror("KimiK25ForConditionalGeneration", m.kimi.KimiK25ForConditionalGeneration,
                       (nn.Module,), {"__init__": kimi_init}, delegating=EMBED)
        top = Kimi()
        return top, top.language_model.model

    top = DeepseekV3ForCausalLM()
    return top, top.model


def test_fakes_mirror_installed_vllm(vllm_models):
    m = vllm_models
    for kind in KINDS:
        top, base = _fake_tree(kind, m)
        if kind == "llama":
            real_top, real_base, real_layer = (
                m.llama.LlamaForCausalLM, m.llama.LlamaModel, m.llama.LlamaDecoderLayer)
        elif kind == "qwen3_vl":
            real_top, real_base, real_layer = (
                m.qwen3_vl.Qwen3VLForConditionalGeneration, m.qwen3_vl.Qwen3LLMModel,
                m.qwen3.Qwen3DecoderLayer)
            assert issubclass(m.qwen3_vl.Qwen3LLMForCausalLM, m.qwen3.Qwen3ForCausalLM)
            # the model-level keyword: the real text model takes it, its layers do not,
            # and the real top-level forward passes it to language_model.model
            assert "deepstack_input_embeds" in inspect.signature(real_base.forward).parameters
            assert "deepstack_input_embeds" not in inspect.signature(
                real_layer.forward).parameters
            src = inspect.getsource(real_top.forward)
            call = src[src.index("self.language_model.model("):]
            assert "deepstack_input_embeds=" in call[: call.index(")")], call
        elif kind == "kimi":
            real_top, real_base, real_layer = (
                m.kimi.KimiK25ForConditionalGeneration, m.ds.DeepseekV2Model,
                m.ds.DeepseekV2DecoderLayer)
        else:
            real_top, real_base, real_layer = (
                m.ds.DeepseekV3ForCausalLM, m.ds.DeepseekV2Model, m.ds.DeepseekV2DecoderLayer)
        assert list(inspect.signature(type(base.layers[0]).forward).parameters) == list(
            inspect.signature(real_layer.forward).parameters
        ), kind
        for name in (*EMBED, "get_language_model"):
            assert hasattr(type(base), name) == hasattr(real_base, name), (kind, name)
            assert hasattr(type(top), name) == hasattr(real_top, name), (kind, name)
        assert m.itf.supports_eagle3(type(top)) == m.itf.supports_eagle3(real_top), kind
        assert m.itf.supports_eagle3(top) == m.itf.supports_eagle3(real_top), kind
    for kind in ("kimi", "qwen3_vl"):
        if kind in KINDS:  # 0.4.0 resolves VL models through get_language_model()
            top, base = _fake_tree(kind, m)
            assert top.get_language_model().model is base, kind
    assert issubclass(m.ds.DeepseekV3ForCausalLM, m.ds.DeepseekV2ForCausalLM)


def _captured(ext, req_id, T):
    """Run the installed extension's capture protocol around one forward."""
    ext._reset_capture()
    if hasattr(ext, "_set_request_metadata"):  # 0.4.0: states keyed by request
        ext.model_runner.input_batch = SimpleNamespace(req_id_to_index={req_id: 0})
        ext._set_request_metadata({req_id: T})
    return lambda: _by_request(ext._get_captured_states(), req_id)


def _by_request(states, req_id):
    if isinstance(states, dict):
        assert set(states) == {req_id}, f"captured requests: {list(states)}"
        return states[req_id]
    return states


@pytest.mark.parametrize("kind", KINDS)
def test_capture_matches_vllm_forward(kind, cw_mod, vllm_models, single_rank):
    top, base = _fake_tree(kind, vllm_models)
    real_forward = type(base).forward  # vLLM's DeepseekV2Model / LlamaModel.forward
    T = 7
    input_ids = torch.arange(3, 3 + T)
    positions = torch.arange(8188, 8188 + T)  # crosses original_max_position_embeddings
    embed = getattr(base, "embed_input_ids", None) or base.get_input_embeddings

    ext = object.__new__(cw_mod.HiddenStatesWorkerExtension)
    ext.model_runner = SimpleNamespace(model=top)
    # Unpatched: ValueError: Model DeepseekV3ForCausalLM does not support hidden
    # state extraction (Kimi: KimiK25ForConditionalGeneration); without the gate:
    # AttributeError: 'DeepseekV2Model' object has no attribute
    # 'get_input_embeddings' (Kimi: ... has no attribute 'model')
    ext._setup_hidden_states_capture(TARGET)
    assert base.forward.__func__ is not real_forward  # capture forward installed

    with torch.no_grad():
        for use_embeds in (False, True):
            embeds = embed(input_ids) if use_embeds else None
            ids = None if use_embeds else input_ids
            get_captured = _captured(ext, "req_0_0", T)
            # With patchset 1.0.0's patch-10 (keywords passed on to the layers), Qwen3-VL:
            # TypeError: Qwen3DecoderLayer.forward() got an unexpected keyword
            # argument 'deepstack_input_embeds'
            out = base.forward(
                input_ids=ids, positions=positions, intermediate_tensors=None,
                inputs_embeds=embeds, **MODEL_KWARGS.get(kind, {}),
            )
            seen = [layer.seen_scaling for layer in base.layers]
            captured = get_captured()
            sums = {}
            hooks = [
                layer.register_forward_hook(
                    lambda mod, args, o, i=i: sums.__setitem__(i, o[0] + o[1])
                )
                for i, layer in enumerate(base.layers)
            ]
            ref = real_forward(base, ids, positions, None, embeds, **MODEL_KWARGS.get(kind, {}))
            for hook in hooks:
                hook.remove()
            ref_seen = [layer.seen_scaling for layer in base.layers]

            assert torch.equal(out, ref), "capture forward differs from vLLM's forward"
            for s, r in zip(seen, ref_seen):
                assert (s is None and r is None) or torch.equal(s, r)
            if kind == "mistral_large3":
                expected = vllm_models.ds._get_llama_4_scaling(
                    L4S["original_max_position_embeddings"], L4S["beta"], positions
                )
                assert all(torch.equal(s, expected) for s in seen)
                assert not torch.all(expected == 1)
            else:
                assert all(s is None for s in seen)
            assert captured is not None and len(captured) == len(TARGET)
            assert all(tuple(c.shape) == (T, H) for c in captured)
            for c, layer_id in zip(captured, TARGET):
                assert torch.equal(c, sums[layer_id])

    # The capture forward must accept every call vLLM's own forward accepts
    # (0.16's LlamaModel.forward takes **extra_layer_kwargs).
    real_params = inspect.signature(real_forward).parameters.values()
    extra = {"extra": 1} if any(p.kind is p.VAR_KEYWORD for p in real_params) else {}
    inspect.signature(base.forward).bind(input_ids, positions, None, None, **extra)
