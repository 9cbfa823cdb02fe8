"""pristine --all (and pristine DIST): every distribution against its RECORD, overwrites attributed.

Real wheels built here and installed with uv: two that ship the same path (the second
install overwrites the first's files, as cuda-python 12.6 and cuda-bindings 13.5 do),
one edited and one missing file, and a compatkit patchset's patched files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import Demo, Venv, build_wheel, run_cli
from helpers.reliability import run_inprocess

SHARED_A = {"shared/__init__.py": b"", "shared/runtime.py": b"VERSION = 12\n"}
SHARED_B = {"shared/__init__.py": b"", "shared/runtime.py": b"VERSION = 13\nNEW = 1\n"}


def _edit(path: Path, data: bytes) -> None:
    """Replace an installed file (a new inode: never through uv's hardlink)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


@pytest.fixture
def clobbered(tmp_path: Path, make_venv: Callable[..., Venv]) -> Venv:
    wheels = tmp_path / "w"
    wheels.mkdir()
    venv = make_venv()
    old = build_wheel(wheels, "oldpy", "12.6", {**SHARED_A, "oldpy/__init__.py": b""})
    new = build_wheel(wheels, "newbind", "13.5", {**SHARED_B, "newbind/__init__.py": b""})
    third = {"third/__init__.py": b"", "third/a.py": b"a = 1\n", "third/b.py": b"b = 1\n"}
    venv.install(new)
    venv.install(old)  # unpacked last: its shared/ files win
    venv.install(build_wheel(wheels, "third", "1.0", third))
    return venv


def test_names_the_overwriting_distribution(
    clobbered: Venv, capsys: pytest.CaptureFixture[str]
) -> None:
    _edit(clobbered.site / "third" / "a.py", b"a = 2\n")
    (clobbered.site / "third" / "b.py").unlink()
    code, _out, err = run_cli(capsys, "--python", clobbered.python, "pristine", "--all")
    assert code == 1
    lines = err.splitlines()
    assert lines[0] == "compatkit: error: 2 of 3 distributions are not pristine"
    # shared/__init__.py is the same empty file in both: only runtime.py differs
    assert lines[1:] == [
        "  - newbind 13.5: 1 file overwritten by oldpy 12.6",
        "    overwritten by oldpy 12.6: shared/runtime.py",
        "  - third 1.0: 1 file missing; 1 file matches no RECORD",
        "    missing: third/b.py",
        "    matches no RECORD: third/a.py",
    ]


def test_the_first_ten_files_and_a_count_all_with_verbose(
    make_venv: Callable[..., Venv], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    venv = make_venv()
    files = {f"many/m{i:02}.py": b"x = 1\n" for i in range(12)}
    venv.install(build_wheel(tmp_path, "many", "1.0", {"many/__init__.py": b"", **files}))
    for name in files:
        _edit(venv.site / name, b"x = 2\n")
    code, _, err = run_cli(capsys, "--python", venv.python, "pristine", "--all")
    assert code == 1
    assert err.splitlines()[1:] == [
        "  - many 1.0: 12 files match no RECORD",
        *[f"    matches no RECORD: many/m{i:02}.py" for i in range(10)],
        "    and 2 more (--verbose: all)",
    ]
    code, _, err = run_cli(capsys, "--python", venv.python, "pristine", "--all", "-v")
    assert err.splitlines()[2:] == [f"    matches no RECORD: {n}" for n in sorted(files)]
    code, out, _ = run_cli(capsys, "--json", "--python", venv.python, "pristine", "--all")
    (report,) = json.loads(out)["distributions"]
    assert report["match_no_record"] == 12
    assert report["files"]["match_no_record"] == sorted(files)


def test_a_named_distribution_is_reported_as_all_reports_it(
    clobbered: Venv, capsys: pytest.CaptureFixture[str]
) -> None:
    """``pristine DIST`` names its files by kind and who overwrote them (issue 36, item 3),
    as ``--all`` does; before, one line per file said only that it did not match."""
    _edit(clobbered.site / "third" / "a.py", b"a = 2\n")
    base = ("--python", clobbered.python, "pristine")
    code, _, err = run_cli(capsys, *base, "newbind")
    assert code == 1
    assert err.splitlines() == [
        "compatkit: error: newbind 13.5 is not pristine",
        "  - newbind 13.5: 1 file overwritten by oldpy 12.6",
        "    overwritten by oldpy 12.6: shared/runtime.py",
    ]
    code, _, err = run_cli(capsys, *base, "third", "oldpy", "newbind", "third")
    assert code == 1
    assert err.splitlines() == [
        "compatkit: error: 2 of 3 distributions are not pristine",
        "  - newbind 13.5: 1 file overwritten by oldpy 12.6",
        "    overwritten by oldpy 12.6: shared/runtime.py",
        "  - third 1.0: 1 file matches no RECORD",
        "    matches no RECORD: third/a.py",
    ]
    code, out, err = run_cli(capsys, *base, "oldpy")
    assert (code, err, out) == (0, "", "oldpy 12.6: every file matches its RECORD\n")
    code, _, err = run_cli(capsys, *base, "absent")
    assert code == 1 and err.startswith("compatkit: error: absent is not installed in ")


def test_the_first_ten_of_each_kind(
    make_venv: Callable[..., Venv], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Twelve missing files do not hide the edited ones: ten of each kind, and a count."""
    venv = make_venv()
    gone = {f"many/g{i:02}.py": b"x = 1\n" for i in range(12)}
    edited = {f"many/e{i:02}.py": b"x = 1\n" for i in range(12)}
    files = {"many/__init__.py": b"", **gone, **edited}
    venv.install(build_wheel(tmp_path, "many", "1.0", files))
    for name in gone:
        (venv.site / name).unlink()
    for name in edited:
        _edit(venv.site / name, b"x = 2\n")
    for args in (["many"], ["--all"]):
        code, _, err = run_cli(capsys, "--python", venv.python, "pristine", *args)
        assert code == 1
        assert err.splitlines()[1:] == [
            "  - many 1.0: 12 files missing; 12 files match no RECORD",
            *[f"    missing: many/g{i:02}.py" for i in range(10)],
            "    and 2 more (--verbose: all)",
            *[f"    matches no RECORD: many/e{i:02}.py" for i in range(10)],
            "    and 2 more (--verbose: all)",
        ], args
        code, _, err = run_cli(capsys, "--python", venv.python, "pristine", *args, "--verbose")
        assert len(err.splitlines()) == 2 + 24 and "more" not in err, err
        code, out, _ = run_cli(capsys, "--json", "--python", venv.python, "pristine", *args)
        (report,) = json.loads(out)["distributions"]
        assert report["files"]["missing"] == sorted(gone), args
        assert report["files"]["match_no_record"] == sorted(edited), args


def test_json_and_the_other_way_round(
    clobbered: Venv, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = next((tmp_path / "w").glob("newbind-*.whl"))
    clobbered.install(wheel, "uv", "--reinstall")  # now newbind's bytes are on disk
    code, out, _ = run_cli(capsys, "--json", "--python", clobbered.python, "pristine", "--all")
    doc = json.loads(out)
    assert code == 1 and doc["ok"] is False and doc["checked"] == 3
    assert doc["distributions"] == [
        {
            "distribution": "oldpy",
            "version": "12.6",
            "overwritten_by": {"newbind 13.5": 1},
            "patched_by": {},
            "missing": 0,
            "match_no_record": 0,
            "outside_environment": [],
            "not_read": [],
            "files": {
                "overwritten_by": {"newbind 13.5": ["shared/runtime.py"]},
                "patched_by": {},
                "missing": [],
                "match_no_record": [],
            },
        }
    ]


def test_a_clean_environment_passes(
    make_venv: Callable[..., Venv], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    venv = make_venv()
    venv.install(build_wheel(tmp_path, "solo", "1.0", {"solo/__init__.py": b"x = 1\n"}))
    code, out, err = run_cli(capsys, "--python", venv.python, "pristine", "--all")
    assert (code, err) == (0, "")
    assert out == "all 1 distributions: every file matches its RECORD\n"


def test_files_a_patchset_changed_are_named_as_patched(demo: Demo) -> None:
    assert demo.run("apply", "demo-fix")[0] == 0
    code, _, err = demo.run("pristine", "--all")
    assert code == 1
    assert err.splitlines()[1] == "  - demo 1.0: 2 files patched by demo-fix"
    assert all(line.startswith("    patched by demo-fix: ") for line in err.splitlines()[2:4])
    assert demo.run("revert", "demo-fix")[0] == 0
    assert demo.run("pristine", "--all")[0] == 0


@pytest.mark.parametrize(
    "args",
    [
        ["pristine"],
        ["pristine", "demo", "--all"],
        # the old forms (issue 35, item 6: a flag never turns a command into another)
        ["verify", "--pristine", "demo"],
        ["verify", "--pristine", "--all"],
        ["verify", "--pristine"],
        ["verify", "demo-fix", "-v"],
    ],
)
def test_usage_errors(demo: Demo, args: list[str]) -> None:
    before = demo.venv.snapshot()
    ran = run_inprocess("--python", demo.venv.python, "--patchset-dir", str(demo.patchsets), *args)
    code, out, err = ran.code, ran.out, ran.err
    assert code == 2 and out == ""
    assert err.startswith("compatkit: error: ") and len(err.splitlines()) == 1, err
    assert demo.venv.snapshot() == before


REAL = os.environ.get(
    "COMPATKIT_TODAY_PYTHON"
)  # vllm==0.33.0 as uv resolves it (nox -s pristine_real)
PINNED = os.environ.get("COMPATKIT_TODAY_PINNED_PYTHON")  # the same with the cuda constraints


@pytest.mark.skipif(not REAL, reason="needs COMPATKIT_TODAY_PYTHON (the real vLLM 0.33 stack)")
def test_the_real_cuda_pair_is_named() -> None:
    """uv resolves cuda-python 12.6.2.post1 beside cuda-bindings 13.5.0 for vllm 0.33.0; both
    ship cuda/bindings/*. Whichever was unpacked last, the pair is named."""
    code, lines = _all(str(REAL))
    assert code == 1, lines
    assert len(_cuda_pair(lines)) == 1, lines


@pytest.mark.skipif(not PINNED, reason="needs COMPATKIT_TODAY_PINNED_PYTHON")
def test_the_constraints_remove_the_pair() -> None:
    """With vllm033-hidden-states' pins (compatkit constraints) the pair is gone; what else
    is off there is reported as it is."""
    _, lines = _all(str(PINNED))
    assert _cuda_pair(lines) == [] and not any("cuda-" in line for line in lines), lines


def _all(python: str) -> tuple[int, list[str]]:
    cmd = [sys.executable, "-m", "compatkit", "--python", python, "pristine", "--all"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc.returncode, proc.stderr.splitlines()


def _cuda_pair(lines: list[str]) -> list[str]:
    return [
        line
        for line in lines
        if ("cuda-bindings 13.5.0:" in line and "overwritten by cuda-python 12.6.2.post1" in line)
        or ("cuda-python 12.6.2.post1:" in line and "overwritten by cuda-bindings 13.5.0" in line)
    ]
