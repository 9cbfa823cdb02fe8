"""Command-line behaviour: explain, errors and exit codes, NO_COLOR, concurrency, packaging."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from compatkit.cli.main import main
from helpers import UV, Demo, run_cli, write_patchset

ROOT = Path(__file__).resolve().parents[2]


def test_explain_by_id_and_by_error_text(demo: Demo) -> None:
    code, out, _ = demo.run("explain", "patch-1")
    assert code == 0 and "Greet politely" in out and "ValueError: impolite greeting" in out
    code, out, _ = demo.run("explain", "Traceback ... ValueError: impolite greeting  ")
    assert code == 0 and "patch-1: Greet politely" in out
    code, out, _ = demo.run("explain", "demo-fix:patch-2", "--json")
    assert json.loads(out)["matches"][0]["id"] == "patch-2"
    code, _, err = demo.run("explain", "nothing like this at all")
    assert code == 1 and err.count("\n") == 1  # no match is an expected failure, not usage
    assert "no patch's symptom, cause or fix matches this error text" in err
    code, _, err = demo.run("explain", "patch-99")  # an id that names no patch: usage
    assert code == 2 and "no patch has the id 'patch-99'" in err


def test_explain_finds_patch_6_by_its_error(capsys: pytest.CaptureFixture[str]) -> None:
    error = "RuntimeError: Boolean value of Tensor with more than one value is ambiguous"
    code, out, _ = run_cli(capsys, "explain", "--json", error)
    assert code == 0
    doc = json.loads(out)
    assert [m["id"] for m in doc["matches"]] == ["patch-6"]
    assert doc["candidates"][0]["id"] == "patch-6"  # vllm016's and vllm017's tie
    code, out, _ = run_cli(capsys, "explain", error)
    assert code == 0 and out.splitlines()[1].startswith("1. speculators-vllm016:patch-6  ")


CORPUS = ROOT / "tests" / "explain_corpus"


def test_explain_a_real_traceback_ranks_and_explains_the_best(
    capsys: pytest.CaptureFixture[str],
) -> None:
    traceback = (CORPUS / "patch-5-block-pool.txt").read_text()
    code, out, _ = run_cli(capsys, "explain", traceback)
    assert code == 0
    listing, _, full = out.partition("\npatch-5: Turn prefix caching off")
    assert listing.splitlines()[1].startswith("1. speculators-vllm016:patch-5  score ")
    assert "frame block_pool.py:238 (in cache_full_blocks): named in the symptom" in listing
    assert "Symptom:" in full and "enable_prefix_caching=False" in full
    code, out, _ = run_cli(capsys, "explain", "--json", traceback)
    doc = json.loads(out)
    assert [m["id"] for m in doc["matches"]] == ["patch-5"]
    best = doc["candidates"][0]
    assert (best["patchset"], best["id"]) == ("speculators-vllm016", "patch-5")
    others = [c for c in doc["candidates"] if c["id"] != "patch-5"]  # (0.17's patch-5 too)
    assert best["score"] > 2 * others[0]["score"]
    assert any(w.startswith("frame block_pool.py:238") for w in best["why"])


def test_explain_without_a_clear_winner_lists_only(capsys: pytest.CaptureFixture[str]) -> None:
    # both patch-7 and patch-10 end in vLLM's "Worker failed with error '...'" wrapper
    text = "RuntimeError: Worker failed with error, please check the stack trace above"
    code, out, _ = run_cli(capsys, "explain", text)
    assert code == 0 and "No clear best match" in out and "Symptom:" not in out
    assert "speculators-vllm016:patch-7" in out and "speculators-vllm016:patch-10" in out
    doc = json.loads(run_cli(capsys, "explain", "--json", text)[1])
    assert doc["matches"] == [] and len(doc["candidates"]) >= 2
    assert all(c["why"] for c in doc["candidates"])


def test_explain_by_id_does_not_load_the_search() -> None:
    code = (
        "import sys\nfrom compatkit.cli.main import main\nmain(['explain', '--json', 'patch-6'])\n"
        "assert 'compatkit.engine.search' not in sys.modules\n"
        "main(['explain', '--json', 'block_pool.py:238'])\n"
        "assert 'compatkit.engine.search' in sys.modules\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_malformed_patch_in_a_patchset_is_one_line(demo: Demo) -> None:
    write_patchset(
        demo.patchsets,
        name="broken",
        patches={"0001.patch": "Patch-Id: patch-1\n---\n--- a/x\n+++ b/x\n@@ -1,5 +1 @@\n-a\n"},
    )
    code, _, err = demo.run("apply", "broken")
    assert code == 1
    assert err.count("\n") == 1 and "0001.patch: corrupt patch at line 7: " in err


def test_bad_toml_is_one_line(demo: Demo) -> None:
    bad = demo.patchsets / "badtoml"
    bad.mkdir()
    (bad / "patchset.toml").write_text("[patchset\nname=")
    code, _, err = demo.run("status", "badtoml")
    assert code == 1 and err.count("\n") == 1 and "patchset.toml" in err


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])
    assert info.value.code == 2
    assert capsys.readouterr().err.startswith("compatkit: error: unknown command")
    code, _, err = run_cli(capsys, "--patchset-dir", "/nonexistent/dir", "list")
    assert code == 2 and "not a directory" in err
    code, _, err = run_cli(capsys, "--python", "/nonexistent/python", "list")
    assert code == 2 and "no such interpreter" in err


def test_internal_error_exit_3(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*_: object) -> None:
        raise ZeroDivisionError("boom")

    monkeypatch.setattr("compatkit.cli.commands.listing.list_patchsets", boom)
    code, _, err = run_cli(capsys, "list")
    assert code == 3 and "This is a bug; please report it" in err and "Traceback" not in err


def test_interrupt_exit_130(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def stop(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("compatkit.cli.commands.listing.list_patchsets", stop)
    assert run_cli(capsys, "list")[0] == 130


def test_no_color_and_no_tracebacks_in_a_terminal_like_run(demo: Demo) -> None:
    env = {**os.environ, "NO_COLOR": "1", "FORCE_COLOR": "1", "TERM": "xterm-256color"}
    proc = subprocess.run(
        demo.command("status", "demo-fix"),
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0
    assert "\x1b[" not in proc.stdout and "demo-fix" in proc.stdout


def test_eight_concurrent_runs_serialise(demo: Demo) -> None:
    base = demo.command()
    pristine = demo.venv.snapshot()
    verbs = ["apply", "revert", "verify", "apply", "apply", "revert", "verify", "apply"]
    procs = [
        subprocess.Popen(
            [*base, v, "demo-fix"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for v in verbs
    ]
    errors = [p.communicate()[1] for p in procs]
    results = [(v, p.returncode, e) for v, p, e in zip(verbs, procs, errors, strict=True)]
    for verb, code, err in results:
        assert "Traceback" not in err
        assert code in ((0, 1) if verb == "verify" else (0,)), (verb, err)
    final = subprocess.run([*base, "verify", "demo-fix"], capture_output=True).returncode
    if final == 0:
        assert subprocess.run([*base, "revert", "demo-fix"]).returncode == 0
    assert demo.venv.snapshot() == pristine


@pytest.mark.skipif(UV is None, reason="needs uv")
def test_wheel_ships_the_patchsets(tmp_path: Path) -> None:
    subprocess.run(
        [UV or "uv", "build", "--wheel", "-q", "-o", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
    )
    wheel = next(tmp_path.glob("compatkit-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "compatkit/patchsets/speculators-vllm016/patchset.toml" in names
    assert "compatkit/patchsets/speculators040-vllm016/patchset.toml" in names
    assert "compatkit/patchsets/speculators-vllm017/patchset.toml" in names
    assert "compatkit/patchsets/vllm033-hidden-states/patchset.toml" in names
    assert "compatkit/patchsets/transformers-config-fallback/patchset.toml" in names
    assert "compatkit/patchsets/transformers457-config-fallback/patchset.toml" in names
    assert "compatkit/patchsets/gguf-q2-0/patchset.toml" in names
    for smoke in (
        "compatkit/patchsets/speculators-vllm016/smoke/test_patch_6",
        "compatkit/patchsets/speculators040-vllm016/smoke/test_patch_11",  # its own smoke/
        "compatkit/patchsets/speculators-vllm017/smoke/test_patch_13",
        "compatkit/patchsets/vllm033-hidden-states/smoke/test_patch_14",
        "compatkit/patchsets/transformers-config-fallback/smoke/conftest",
        "compatkit/patchsets/transformers-config-fallback/smoke/test_patch_15",
        "compatkit/patchsets/gguf-q2-0/smoke/test_patch_16",
        "compatkit/patchsets/transformers-tokenizers/smoke/test_patch_18",
        "compatkit/patchsets/transformers519-tokenizers/smoke/test_patch_17",
    ):
        assert any(n.startswith(smoke) for n in names), smoke
    venv = tmp_path / "v"
    subprocess.run([UV or "uv", "venv", "-q", "-p", sys.executable, str(venv)], check=True)
    subprocess.run(
        [UV or "uv", "pip", "install", "-q", "--python", str(venv / "bin/python"), str(wheel)],
        check=True,
        capture_output=True,
    )
    out = subprocess.run(
        [str(venv / "bin/compatkit"), "list", "--json"], capture_output=True, text=True, check=True
    ).stdout
    assert [p["name"] for p in json.loads(out)["patchsets"]] == [
        "gguf-q2-0",
        "speculators-vllm016",
        "speculators-vllm017",
        "speculators040-vllm016",
        "transformers-config-fallback",
        "transformers-tokenizers",
        "transformers457-config-fallback",
        "transformers519-tokenizers",
        "vllm033-hidden-states",
    ]
