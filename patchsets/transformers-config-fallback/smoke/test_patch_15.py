"""patch-15: a concrete config class on a local folder without config.json raises OSError.

Unpatched (transformers 4.45 - 5.25), LlamaConfig.from_pretrained(folder) returns the class
defaults (hidden_size 4096, 32 layers) when the folder holds no config.json. The other tests
pin what the fix must keep: a saved config round-trips, AutoConfig works, the base class stays
lenient, a tokenizer-only folder still loads with AutoTokenizer, and a Hub id still goes to
the Hub (offline here, so the Hub's own error, not the local-folder one).
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.mark.parametrize("name", ["LlamaConfig", "BertConfig"])
def test_concrete_config_on_folder_without_config_raises(tmp_path: Path, name: str) -> None:
    import transformers

    config_class = getattr(transformers, name)
    folder = tmp_path / "half-copied-checkpoint"
    folder.mkdir()
    (folder / "tokenizer.json").write_text("{}")
    # unpatched: no error, config_class() defaults (LlamaConfig: hidden_size 4096)
    with pytest.raises(OSError, match=r"does not appear to have a file named config\.json"):
        config_class.from_pretrained(folder)


def test_wrong_subfolder_raises(tiny_llama_dir: Path) -> None:
    from transformers import LlamaConfig

    (tiny_llama_dir / "text_encoder").mkdir()
    with pytest.raises(OSError, match=r"does not appear to have a file named text_encoder/config\.json"):
        LlamaConfig.from_pretrained(tiny_llama_dir, subfolder="text_encoder")


def test_saved_config_round_trips(tiny_llama_dir: Path) -> None:
    from transformers import LlamaConfig

    config = LlamaConfig.from_pretrained(tiny_llama_dir)
    assert (config.hidden_size, config.num_hidden_layers, config.vocab_size) == (64, 2, 32)
    direct = LlamaConfig.from_pretrained(tiny_llama_dir / "config.json")  # a file path
    assert direct.hidden_size == 64


def test_auto_config_loads_the_saved_config(tiny_llama_dir: Path) -> None:
    from transformers import AutoConfig, LlamaConfig

    config = AutoConfig.from_pretrained(tiny_llama_dir)
    assert type(config) is LlamaConfig
    assert config.hidden_size == 64


def test_base_config_keeps_its_behaviour(tokenizer_only_dir: Path) -> None:
    import transformers
    from packaging.version import Version
    from transformers import PretrainedConfig

    if Version(transformers.__version__) < Version("4.45"):
        # before the fallback (4.44.2): the base class raised too, and the fix must not matter
        with pytest.raises(OSError, match="does not appear to have a file named config.json"):
            PretrainedConfig.from_pretrained(tokenizer_only_dir)
        return
    # 4.45+: the base class (model_type "") returns an empty config; callers rely on it
    config = PretrainedConfig.from_pretrained(tokenizer_only_dir)
    assert config.model_type == ""


def test_tokenizer_only_folder_loads_with_auto_tokenizer(tokenizer_only_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_only_dir)
    assert tokenizer("hello world")["input_ids"] == [2, 3]
    assert tokenizer.convert_ids_to_tokens([3, 0]) == ["world", "[UNK]"]


def test_hub_id_keeps_its_download_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers import LlamaConfig

    monkeypatch.chdir(tmp_path)  # so the id cannot name a local folder
    with pytest.raises(OSError) as raised:
        LlamaConfig.from_pretrained("compatkit-smoke/no-such-model")
    # offline (conftest): the Hub path's own error, not the local-folder check
    assert "does not appear to have a file named" not in str(raised.value)
