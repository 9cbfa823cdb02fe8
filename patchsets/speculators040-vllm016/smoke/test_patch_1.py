"""patch-1: AutoTokenizer.from_pretrained(..., trust_remote_code=True).

A local model directory whose tokenizer is repo code (tokenizer_config.json
auto_map, like Kimi-K2.5's TikToken tokenizer) must load from the generator's
__init__ with stdin not a TTY. Only the tokenizer step of __init__ runs: the
config step is stopped right after it, so no other patch is involved.
"""

import io
import sys

import pytest

TOKENIZER_CODE = '''
from transformers import PreTrainedTokenizerFast


class RemoteCodeTokenizer(PreTrainedTokenizerFast):
    """Stands in for Kimi-K2.5's tokenization_kimi.TikTokenTokenizer."""
'''


class _StopAfterTokenizer(Exception):
    pass


def test_remote_code_tokenizer_loads(gen_mod, smoke, tmp_path, monkeypatch):
    d = smoke.write_tiny_model(
        tmp_path / "remote-code-model",
        tokenizer_config={
            "tokenizer_class": "RemoteCodeTokenizer",
            "auto_map": {
                "AutoTokenizer": ["tokenization_remote.RemoteCodeTokenizer", None]
            },
        },
    )
    (d / "tokenization_remote.py").write_text(TOKENIZER_CODE)
    # Not a TTY: transformers cannot ask "Do you wish to run the custom code?"
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))

    def stop(self, **kwargs):
        raise _StopAfterTokenizer

    monkeypatch.setattr(gen_mod.VllmHiddenStatesGenerator, "_create_vllm_config", stop)

    gen = object.__new__(gen_mod.VllmHiddenStatesGenerator)
    # Unpatched: ValueError: The repository ... contains custom code which must
    # be executed ... Please pass the argument `trust_remote_code=True` ...
    with pytest.raises(_StopAfterTokenizer):
        gen.__init__(model_path=str(d), layer_ids=[1, 2])

    assert type(gen.tokenizer).__name__ == "RemoteCodeTokenizer"
    assert gen.tokenizer.eos_token_id == 2
    assert gen.tokenizer("w5 w7")["input_ids"] == [5, 7]
