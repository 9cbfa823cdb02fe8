"""patch-14: prefix caching off under extract_hidden_states (vllm#44485).

Builds vLLM's engine config on CPU, as `vllm serve` does, with the flags speculators 0.9.0
starts it with (--speculative_config '{"method": "extract_hidden_states", ...}',
--kv_transfer_config naming ExampleHiddenStatesConnector), for a tiny Llama directory made
here (nothing is downloaded). Unpatched, vLLM 0.33 keeps prefix caching on, so the hidden
states of a cached prefix are never extracted.
"""

import json
import logging
import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

VOCAB = 128
LAYER_IDS = [1, 2, 3]


def write_tiny_model(d: Path) -> Path:
    """A 4-layer Llama config.json plus a WordLevel tokenizer built in place."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    d.mkdir(parents=True)
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{f"w{i}": i for i in range(3, VOCAB)}}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(d / "tokenizer.json"))
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<s>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
    }
    (d / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "num_hidden_layers": 4,
        "vocab_size": VOCAB,
        "max_position_embeddings": 4096,
        "torch_dtype": "float32",
        "bos_token_id": 1,
        "eos_token_id": 2,
    }
    (d / "config.json").write_text(json.dumps(config))
    return d


def speculators_launch_args(model: Path, store: Path) -> dict[str, object]:
    """The engine arguments of speculators 0.9.0's `vllm serve` command line."""
    return {
        "model": str(model),
        "speculative_config": {
            "method": "extract_hidden_states",
            "num_speculative_tokens": 1,
            "draft_model_config": {
                "hf_config": {"eagle_aux_hidden_state_layer_ids": LAYER_IDS},
            },
        },
        "kv_transfer_config": {
            "kv_connector": "ExampleHiddenStatesConnector",
            "kv_role": "kv_producer",
            "kv_connector_extra_config": {"shared_storage_path": str(store)},
        },
        "max_model_len": 512,
        "enforce_eager": True,
    }


@pytest.fixture()
def cpu_platform(monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM's CPU platform: this host has no GPU (config building only, no model runs)."""
    import vllm.platforms as platforms
    from vllm.platforms.cpu import CpuPlatform

    monkeypatch.setattr(platforms, "_current_platform", CpuPlatform())


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_extract_hidden_states_turns_prefix_caching_off(tmp_path: Path, cpu_platform: None):
    from vllm.engine.arg_utils import EngineArgs
    from vllm.logger import configure_logging_if_needed

    model = write_tiny_model(tmp_path / "tiny-llama")
    args = EngineArgs(**speculators_launch_args(model, tmp_path / "hidden-states"))
    # create_engine_config configures vLLM's logging first (dictConfig empties the handlers
    # of every vllm.* logger); configured here with the same config, it is left alone
    configure_logging_if_needed(args.create_logging_config())
    records = _Records()
    config_logger = logging.getLogger("vllm.config.vllm")  # "vllm" does not propagate to root
    config_logger.addHandler(records)
    try:
        config = args.create_engine_config()
    finally:
        config_logger.removeHandler(records)
    assert config.speculative_config is not None
    assert config.speculative_config.method == "extract_hidden_states"
    assert config.cache_config.enable_prefix_caching is False, (
        "prefix caching is on under extract_hidden_states: the hidden states of a cached "
        "prefix are never extracted (vllm#44485)"
    )
    assert any(m.startswith("Disabling prefix caching") for m in records.messages), records.messages
