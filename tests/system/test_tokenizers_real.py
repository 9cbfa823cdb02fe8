"""The transformers tokenizer patchsets (issue 45) on the real releases.

- today's stack (vllm==0.33.0 speculators==0.9.0, transformers 5.19.0): transformers519-tokenizers
  applies beside vllm033-hidden-states and transformers-config-fallback, its smoke tests pass,
  and after the revert the bugs are back and the install is pristine (nox -s pristine_real
  gives it the stack's venv; skipped without it);
- the trap: the fix for A written for 5.22+ (transformers-tokenizers), forced onto 5.19.0,
  applies cleanly and breaks every AutoTokenizer call; only its smoke test sees it;
- retirement: upstream of the 5.19 patchset against 5.22.0 says patch-17 is upstream and
  patch-18 still needed, from the smoke tests on the real release.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable

import pytest

from helpers import UV, Venv, run_cli

pytestmark = [pytest.mark.real, pytest.mark.slow, pytest.mark.skipif(UV is None, reason="uv")]

TODAY = os.environ.get("COMPATKIT_TODAY_PINNED_PYTHON")  # nox -s pristine_real
BESIDE = ["vllm033-hidden-states", "transformers-config-fallback", "transformers519-tokenizers"]


def _cli(capsys: pytest.CaptureFixture[str], python: str, *args: str) -> tuple[int, str, str]:
    return run_cli(capsys, "--python", python, *args)


def _smoke(capsys: pytest.CaptureFixture[str], python: str, name: str) -> dict[str, str]:
    code, out, err = _cli(capsys, python, "--json", "smoke", name)
    assert code in (0, 1), err
    return {p["id"]: f"{p['result']}: {p['reason']}" for p in json.loads(out)["patches"]}


@pytest.mark.skipif(not TODAY, reason="needs COMPATKIT_TODAY_PINNED_PYTHON (nox -s pristine_real)")
def test_beside_the_other_patchsets_on_todays_stack(capsys: pytest.CaptureFixture[str]) -> None:
    python = str(TODAY)
    code, out, err = _cli(capsys, python, "--json", "pristine", "transformers", "vllm")
    assert code == 0 and json.loads(out)["distributions"] == [], (out, err)
    try:
        for name in BESIDE:
            code, _, err = _cli(capsys, python, "apply", name)
            assert code == 0, err
        for name in BESIDE:
            code, _, err = _cli(capsys, python, "verify", name)
            assert code == 0, err
        patched = _smoke(capsys, python, "transformers519-tokenizers")
        assert patched == {"patch-17": "pass: ", "patch-18": "pass: "}, patched
        assert _smoke(capsys, python, "transformers-config-fallback") == {"patch-15": "pass: "}
    finally:
        for name in reversed(BESIDE):
            code, _, err = _cli(capsys, python, "revert", name)
            assert code == 0, err
    after = _smoke(capsys, python, "transformers519-tokenizers")  # the bugs are back
    assert after["patch-17"].startswith("fail: AssertionError"), after
    assert "At index 1 diff: 'n' != 'Ġneed'" in after["patch-17"], after
    assert after["patch-18"].startswith("fail: AssertionError"), after
    assert "At index 0 diff: 'Ċ' != 'ĊĊ'" in after["patch-18"], after
    code, out, err = _cli(capsys, python, "--json", "pristine", "transformers", "vllm")
    assert code == 0 and json.loads(out)["distributions"] == [], (out, err)


def test_the_fix_for_a_alone_on_5_19_applies_and_breaks_autotokenizer(
    make_venv: Callable[..., Venv], capsys: pytest.CaptureFixture[str]
) -> None:
    venv = make_venv()
    install = [UV or "uv", "pip", "install", "-q", "--python", venv.python]
    subprocess.run(
        [*install, "--link-mode", "hardlink", "transformers==5.19.0", "pytest"], check=True
    )
    before = venv.snapshot()
    # the patchset for 5.22+ is refused here, and --force applies it cleanly: a 'success'
    code, _, err = _cli(capsys, venv.python, "apply", "transformers-tokenizers")
    assert code == 1 and "transformers 5.19.0" in err, err
    code, out, err = _cli(capsys, venv.python, "apply", "transformers-tokenizers", "--force")
    assert code == 0 and "applied 1 patch to transformers 5.19.0" in out, (out, err)
    code, out, _ = _cli(capsys, venv.python, "--json", "smoke", "transformers-tokenizers")
    (result,) = json.loads(out)["patches"]
    assert code == 1 and result["result"] == "fail"
    assert result["reason"] == "NameError: name '_hub_declared_class' is not defined"
    assert set(result["tests"]) == {"fail"}  # every test: the guard case too
    assert _cli(capsys, venv.python, "revert", "transformers-tokenizers")[0] == 0
    assert venv.snapshot() == before
    # the 5.19 patchset: patch-18 says Needs: patch-17
    code, _, err = _cli(
        capsys, venv.python, "apply", "transformers519-tokenizers", "--exclude", "patch-17"
    )
    assert code == 2 and "patch-18 cannot go without patch-17" in err, err
    assert venv.snapshot() == before
    assert _cli(capsys, venv.python, "apply", "transformers519-tokenizers")[0] == 0
    smoke = _smoke(capsys, venv.python, "transformers519-tokenizers")
    assert smoke == {"patch-17": "pass: ", "patch-18": "pass: "}, smoke
    assert _cli(capsys, venv.python, "revert", "transformers519-tokenizers")[0] == 0
    assert venv.snapshot() == before


def test_upstream_at_5_22_retires_patch_17_and_keeps_patch_18(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ("--json", "upstream", "transformers519-tokenizers", "--target", "transformers==5.22.0")
    code, out, err = run_cli(capsys, *args)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["target"] == "transformers==5.22.0" and doc["smoke_tests"]["ran"] is True
    got = {p["id"]: p for p in doc["patches"]}
    assert (got["patch-17"]["state"], got["patch-17"]["smoke"]) == ("upstream", "pass")
    assert got["patch-17"]["files"] == "already present"
    assert (got["patch-18"]["state"], got["patch-18"]["smoke"]) == ("still needed", "fail")
    assert got["patch-18"]["files"] == "applies"
    assert "['Ċ', 'Ċ', 'hello'] == ['ĊĊ', 'hello']" in got["patch-18"]["reason"]
