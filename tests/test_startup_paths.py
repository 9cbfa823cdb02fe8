"""Start-up on every path (benchmarks P1 and P5): requirements decided without packaging in the
target's own interpreter and from a tool venv with ``--python``; a warm apply and revert that
import no diff parser, dataclasses or shutil; the parsed-diff cache that makes that possible."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import packaging
import pytest
import unidiff

from conftest import DEMO_FILES, Demo, Venv, build_wheel, write_patchset
from test_startup import HEAVY, RUN, SRC, _env


def test_requirements_met_or_not_stay_off_packaging(
    tmp_path: Path, make_venv: Callable[..., Venv]
) -> None:
    """Benchmark P1 on every path: status and explain decide a ``>=X,<Y`` requirement without
    packaging whether it is met, unmet or not installed, in the target's own interpreter and
    from a separate tool venv with ``--python``; a requirement with a marker still asks
    packaging (the fallback is real)."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    target_venv, tool_venv = make_venv(), make_venv()
    target_venv.install(build_wheel(wheels, "demo", "1.0", DEMO_FILES))
    patchsets = tmp_path / "patchsets"
    write_patchset(patchsets, requires=["otherlib>=2,<3", "demo>=1.0"])
    write_patchset(patchsets, "demo-marker", requires=["otherlib>=2,<3; python_version>'3'"])
    extra = tmp_path / "extra"  # compatkit's dependency, as a tool venv has it
    extra.mkdir()
    for lib in (packaging, unidiff):
        (extra / lib.__name__).symlink_to(Path(str(lib.__file__)).parent)
    path = f"{SRC}{os.pathsep}{extra}"
    env = {**_env(), "PYTHONPATH": path, "COMPATKIT_CACHE_DIR": str(tmp_path / "cache")}

    def run(python: str, *args: str) -> tuple[str, list[str]]:
        proc = subprocess.run(
            [python, "-c", f"HEAVY = {HEAVY!r}\n{RUN}", *args, "--patchset-dir", str(patchsets)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
        )
        loaded = [line for line in proc.stderr.splitlines() if line.startswith("LOADED")]
        assert proc.returncode == 0 and loaded, proc.stdout + proc.stderr
        return proc.stdout, loaded[-1].split()[1:]

    via_tool = [tool_venv.python, "--python", target_venv.python]
    run(*via_tool, "status", "demo-fix")  # fills the probe and TOML caches
    run(target_venv.python, "status", "demo-fix")
    for otherlib, expect in (
        (None, "needs otherlib<3,>=2, which is not installed"),
        ("1.0", "needs otherlib<3,>=2, found otherlib 1.0"),
        ("2.5", "applies cleanly"),
    ):
        if otherlib is not None:
            (wheels / otherlib).mkdir()
            wheel = build_wheel(
                wheels / otherlib, "otherlib", otherlib, {"otherlib/__init__.py": b""}
            )
            target_venv.install(wheel)
        for how in ([target_venv.python], via_tool):
            for args in (["status", "demo-fix"], ["explain", "demo-fix:patch-1"]):
                out, loaded = run(*how, *args)
                assert expect in out, (otherlib, how, args, out)
                # met: the diffs are parsed to see whether they apply (unidiff, which
                # imports typing); nothing else
                parse = ("unidiff", "typing")
                allowed = [m for m in loaded if otherlib == "2.5" and m.startswith(parse)]
                heavy = sorted(set(loaded) - set(allowed))
                assert heavy == [], f"{otherlib}: compatkit {' '.join(args)} imported {heavy}"
        _, loaded = run(target_venv.python, "status", "demo-marker")
        assert "packaging.markers" in loaded, loaded


def test_diff_cache_hits_misses_and_refusals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parsed diffs come back from the cache exactly as the parser made them; a corrupt or
    malformed entry is parsed again, never trusted; errors are never cached."""
    from compatkit import diffcache
    from compatkit.diffparse import parse_diff
    from compatkit.errors import PatchFormatError
    from conftest import PATCH_GREET, PATCH_UTIL

    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(tmp_path / "c"))
    parses: list[str] = []

    def counting(text: str, label: str) -> tuple[object, ...]:
        parses.append(text)
        return parse_diff(text, label)

    monkeypatch.setattr(diffcache, "parse_diff", counting)
    text = PATCH_GREET.split("---\n", 1)[1] + PATCH_UTIL.split("---\n", 1)[1]
    text += (
        "--- /dev/null\n+++ b/demo/new.py\n@@ -0,0 +1 @@\n+x = 'é'\n\\ No newline at end of file\n"
    )
    first = diffcache.parse(text, "t.patch")
    assert first == parse_diff(text, "t.patch") and len(parses) == 1
    assert diffcache.parse(text, "t.patch") == first and len(parses) == 1  # from the cache
    (entry,) = (tmp_path / "c" / "diff").glob("*.json")
    good = json.loads(entry.read_text())
    bad_docs = [
        "{truncated",
        json.dumps({**good, "format": 99}),
        json.dumps({**good, "files": []}),
        json.dumps({**good, "files": [["demo/x.py", "rename", []]]}),
        json.dumps(
            {**good, "files": [["demo/x.py", "modify", [[1, 1, 1, 1, [["?", "x"]], 0, 0]]]]}
        ),
        json.dumps({**good, "files": [["demo/x.py", "modify", [[-1, 1, 1, 1, [], False, False]]]]}),
        json.dumps(
            {**good, "files": [["demo/x.py", "modify", [[1, True, 1, 1, [], False, False]]]]}
        ),
    ]
    for junk in bad_docs:
        entry.write_text(junk)
        assert diffcache.parse(text, "t.patch") == first
    assert len(parses) == 1 + len(bad_docs)
    with pytest.raises(PatchFormatError):
        diffcache.parse("not a diff\n", "bad.patch")
    with pytest.raises(PatchFormatError):  # parsed (and refused) again: errors are not cached
        diffcache.parse("not a diff\n", "bad.patch")
    assert len(list((tmp_path / "c" / "diff").glob("*.json"))) == 1


def test_apply_and_revert_stay_off_heavy_imports(demo: Demo, tmp_path: Path) -> None:
    """Benchmark P5: a warm apply and revert import neither dataclasses, shutil nor unidiff
    (the parsed diff comes from the cache)."""
    ps = str(demo.patchsets)
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "unidiff").symlink_to(Path(str(unidiff.__file__)).parent)
    env = {**_env(), "PYTHONPATH": f"{SRC}{os.pathsep}{extra}"}
    env["COMPATKIT_CACHE_DIR"] = str(tmp_path / "cache")
    allowed = ("ctypes", "fcntl")  # syncfs, the lock: what the guarantees need
    for round in range(2):
        for args in (["apply", "demo-fix"], ["revert", "demo-fix"]):
            proc = subprocess.run(
                [demo.venv.python, "-c", f"HEAVY = {HEAVY!r}\n{RUN}", *args, "--patchset-dir", ps],
                cwd=tmp_path, env=env, capture_output=True, text=True,
            )  # fmt: skip
            assert proc.returncode == 0, proc.stdout + proc.stderr
            loaded = proc.stderr.splitlines()[-1].split()[1:]
            heavy = [m for m in loaded if not m.startswith(allowed)]
            if round == 0 and args[0] == "apply":
                assert "unidiff" in heavy, heavy  # cold: the diff is parsed
            else:
                assert heavy == [], f"round {round}: compatkit {args[0]} imported {heavy}"
