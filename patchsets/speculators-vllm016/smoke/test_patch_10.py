"""patch-10: custom_worker.py for vLLM 0.16's DeepseekV2Model (DeepSeek-V3,
Kimi-K2.5), keeping Llama-style models working.

The real models need a GPU (MLA attention, MoE kernels), so the worker-side
model is faked: small nn.Module trees with 0.16's attribute layout
(Kimi wrapper -> language_model -> model -> layers / embed_input_ids / norm /
config), whose decoder layers have exactly the real 0.16 layer signatures and
whose base model uses vLLM's *real* DeepseekV2Model.forward / LlamaModel.forward
as its own forward. get_pp_group / get_tp_group are replaced (no distributed
init on CPU). The patched capture forward must reproduce vLLM's own forward
output (incl. llama_4_scaling, computed by the real _get_llama_4_scaling) and
capture one [T, H] tensor per target layer.
"""

import inspect
from types import SimpleNamespace

import pytest
import torch
from torch import nn

H = 8
LAYERS = 4
TARGET = [1, 2]
L4S = {"original_max_position_embeddings": 8192, "beta": 0.1}


@pytest.fixture(scope="module")
def vllm_models():
    from vllm.model_executor.models import deepseek_v2, interfaces, kimi_k25, llama

    return SimpleNamespace(ds=deepseek_v2, itf=interfaces, kimi=kimi_k25, llama=llama)


@pytest.fixture
def single_rank(cw_mod, vllm_models, monkeypatch):
    pp = SimpleNamespace(is_first_rank=True, is_last_rank=True, world_size=1)
    tp = SimpleNamespace(rank_in_group=0, world_size=1)
    for mod in (cw_mod, vllm_models.ds, vllm_models.llama):
        monkeypatch.setattr(mod, "get_pp_group", lambda: pp, raising=False)
    monkeypatch.setattr(cw_mod, "get_tp_group", lambda: tp, raising=False)


def _fake_tree(kind, m):
    """nn.Module trees mirroring vLLM 0.16's layout (see module docstring)."""

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

    class DeepseekV2DecoderLayer(_Layer):  # 0.16 signature, checked below
        def forward(self, positions, hidden_states, residual, llama_4_scaling=None):
            return self.step(hidden_states, residual, llama_4_scaling)

    class LlamaDecoderLayer(_Layer):  # 0.16 signature, checked below
        def forward(self, positions, hidden_states, residual):
            return self.step(hidden_states, residual, None)

    class _Norm(nn.Module):
        def forward(self, hidden_states, residual):
            out = hidden_states + residual
            return out * 0.5, out

    class _Base(nn.Module):
        def __init__(self, layer_cls, config):
            super().__init__()
            self.config = config
            self.embed_tokens = nn.Embedding(64, H)
            self.start_layer, self.end_layer = 0, LAYERS
            self.layers = nn.ModuleList(layer_cls(i) for i in range(LAYERS))
            self.norm = _Norm()

        def embed_input_ids(self, input_ids):  # 0.16 name (was get_input_embeddings)
            return self.embed_tokens(input_ids)

    if kind == "llama":

        class LlamaModel(_Base):
            forward = m.llama.LlamaModel.forward  # vLLM's own forward
            aux_hidden_state_layers = ()

        class LlamaForCausalLM(nn.Module, m.itf.SupportsEagle3):
            def __init__(self):
                super().__init__()
                self.model = LlamaModel(LlamaDecoderLayer, SimpleNamespace())

            def set_aux_hidden_state_layers(self, layers):
                pass

            def get_eagle3_aux_hidden_state_layers(self):
                return ()

        top = LlamaForCausalLM()
        return top, top.model

    class DeepseekV2Model(_Base):
        forward = m.ds.DeepseekV2Model.forward  # vLLM's own forward

    config = SimpleNamespace(llama_4_scaling=L4S) if kind == "mistral_large3" else SimpleNamespace()

    class DeepseekV2ForCausalLM(nn.Module, m.itf.SupportsEagle):
        def __init__(self):
            super().__init__()
            self.model = DeepseekV2Model(DeepseekV2DecoderLayer, config)

    class DeepseekV3ForCausalLM(DeepseekV2ForCausalLM):
        pass

    if kind == "kimi":

        class KimiK25ForConditionalGeneration(nn.Module):
            def __init__(self):
                super().__init__()
                self.vision_tower = nn.Identity()
                self.mm_projector = nn.Identity()
                # kimi_k25.py builds it with architectures=["DeepseekV2ForCausalLM"]
                self.language_model = DeepseekV2ForCausalLM()

        top = KimiK25ForConditionalGeneration()
        return top, top.language_model.model

    top = DeepseekV3ForCausalLM()
    return top, top.model


def test_fakes_mirror_vllm_016(vllm_models):
    m = vllm_models
    ds_params = list(inspect.signature(m.ds.DeepseekV2DecoderLayer.forward).parameters)
    assert ds_params == ["self", "positions", "hidden_states", "residual", "llama_4_scaling"]
    llama_params = list(inspect.signature(m.llama.LlamaDecoderLayer.forward).parameters)
    assert llama_params == ["self", "positions", "hidden_states", "residual"]
    for kind in ("deepseek_v3", "llama"):
        _, base = _fake_tree(kind, m)
        real_cls = m.ds.DeepseekV2DecoderLayer if kind != "llama" else m.llama.LlamaDecoderLayer
        assert list(inspect.signature(type(base.layers[0]).forward).parameters) == list(
            inspect.signature(real_cls.forward).parameters
        )
    assert m.ds.DeepseekV2ForCausalLM.model_cls is m.ds.DeepseekV2Model
    assert issubclass(m.ds.DeepseekV3ForCausalLM, m.ds.DeepseekV2ForCausalLM)
    assert hasattr(m.ds.DeepseekV2Model, "embed_input_ids")
    assert not hasattr(m.ds.DeepseekV2Model, "get_input_embeddings")
    assert not hasattr(m.llama.LlamaModel, "get_input_embeddings")
    # why 0.3.0's supports_eagle3 gate must go (and why Llama passed it)
    assert not m.itf.supports_eagle3(m.ds.DeepseekV3ForCausalLM)
    assert not m.itf.supports_eagle3(m.kimi.KimiK25ForConditionalGeneration)
    assert m.itf.supports_eagle3(m.llama.LlamaForCausalLM)


@pytest.mark.parametrize("kind", ["deepseek_v3", "kimi", "mistral_large3", "llama"])
def test_capture_matches_vllm_forward(kind, cw_mod, vllm_models, single_rank):
    top, base = _fake_tree(kind, vllm_models)
    real_forward = type(base).forward  # vLLM's DeepseekV2Model / LlamaModel.forward
    T = 7
    input_ids = torch.arange(3, 3 + T)
    positions = torch.arange(8188, 8188 + T)  # crosses original_max_position_embeddings

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
            embeds = base.embed_input_ids(input_ids) if use_embeds else None
            ids = None if use_embeds else input_ids
            ext._reset_capture()
            out = base.forward(
                input_ids=ids, positions=positions, intermediate_tensors=None,
                inputs_embeds=embeds,
            )
            seen = [layer.seen_scaling for layer in base.layers]
            captured = ext._get_captured_states()
            sums = {}
            hooks = [
                layer.register_forward_hook(
                    lambda mod, args, o, i=i: sums.__setitem__(i, o[0] + o[1])
                )
                for i, layer in enumerate(base.layers)
            ]
            ref = real_forward(base, ids, positions, None, embeds)
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

    # **kwargs accepted, as vLLM's model forwards may receive extra arguments
    inspect.signature(base.forward).bind(input_ids, positions, None, None, extra=1)
