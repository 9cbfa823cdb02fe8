"""The real speculators 0.3.0 wheel from PyPI through apply, verify, explain and revert."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from helpers import UV, Venv, run_cli

# speculators 0.3.0 from PyPI (or the warm uv cache)
pytestmark = [pytest.mark.real, pytest.mark.skipif(UV is None, reason="needs uv")]


def test_real_patchset_on_real_wheel_is_byte_exact(
    make_venv: Callable[..., Venv], capsys: pytest.CaptureFixture[str]
) -> None:
    venv = make_venv()
    venv.install("speculators==0.3.0", "uv", "--link-mode", "hardlink")
    before = venv.snapshot()
    py = ["--python", venv.python]
    # vLLM is not installed here, so the requirement check refuses; --force is file-level only
    code, _, err = run_cli(capsys, "apply", "speculators-vllm016", *py)
    assert code == 1 and "needs vllm<0.17,>=0.16, which is not installed" in err
    code, out, err = run_cli(capsys, "apply", "speculators-vllm016", "--force", *py)
    assert code == 0, err
    gen = venv.site / "speculators/data_generation/vllm_hidden_states_generator.py"
    assert "is_encoder_decoder=False" in gen.read_text()
    assert run_cli(capsys, "verify", "speculators-vllm016", *py)[0] == 0
    code, out, _ = run_cli(capsys, "explain", "patch-6", *py)
    assert code == 0 and "unique_reply_rank" in out and "applied" in out
    assert run_cli(capsys, "revert", "speculators-vllm016", *py)[0] == 0
    assert venv.snapshot() == before
    assert run_cli(capsys, "pristine", "speculators", *py)[0] == 0
