"""``compatkit smoke PATCHSET``: run the patches' smoke tests with pytest in the target."""

from __future__ import annotations

import os
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from compatkit.errors import CompatkitError, UsageError
from compatkit.output import Output
from compatkit.patchset import Patch, Patchset
from compatkit.registry import Registry
from compatkit.state import load_state
from compatkit.target import Environment


def _select(ps: Patchset, ids: list[str]) -> list[Patch]:
    unknown = [i for i in ids if ps.patch(i) is None]
    if unknown:
        raise UsageError(f"{ps.name} has no patch {', '.join(unknown)} (ids: {', '.join(ps.ids)})")
    selected = [p for p in ps.patches if not ids or p.id in ids]
    missing = [p.id for p in selected if not (ps.root / p.fields.get("smoke-test", "-")).is_file()]
    if missing:
        raise CompatkitError(f"{ps.name}: no smoke test file for {', '.join(missing)}")
    return selected


def _require_pytest(env: Environment) -> None:
    proc = subprocess.run([env.executable, "-c", "import pytest"], capture_output=True)
    if proc.returncode != 0:
        raise CompatkitError(
            f"pytest is not installed in the target environment ({env.executable}); "
            f"install it there, e.g. '{env.executable} -m pip install pytest'"
        )


def _outcomes(junit: Path) -> dict[str, list[str]]:
    """Test file name → outcome of every test case in it."""
    results: dict[str, list[str]] = {}
    if not junit.exists():
        return results
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")
        name = (module[-2] if len(module) > 1 and module[-1][:1].isupper() else module[-1])
        kinds = {child.tag for child in case}
        outcome = ("fail" if kinds & {"failure", "error"} else
                   "skipped" if "skipped" in kinds else "pass")
        results.setdefault(f"{name}.py", []).append(outcome)
    return results


def smoke(registry: Registry, env: Environment, name: str, ids: list[str],
          out: Output | None = None, extra_args: list[str] | None = None) -> int:
    out = out or Output()
    ps = registry.get(name)
    selected = _select(ps, ids)
    _require_pytest(env)
    dist = env.find(ps.distribution)
    state = load_state(dist, ps.name) if dist else None
    applied = state.applied if state else []
    where = (f"applied here: {', '.join(applied) or 'none'}"
             + (f"; excluded: {', '.join(state.excluded)}" if state and state.excluded else "")
             if state else f"{ps.name} is not applied here")
    out.line(f"{ps.name} smoke tests in {env.executable} ({where})")
    files = [str(ps.root / p.fields["smoke-test"]) for p in selected]
    with tempfile.TemporaryDirectory(prefix="compatkit-smoke-") as tmp:
        junit = Path(tmp) / "junit.xml"
        cmd = [env.executable, "-m", "pytest", "-p", "no:cacheprovider", "-c", os.devnull,
               "--rootdir", str(ps.root / "smoke"), f"--junitxml={junit}", "-q",
               *(extra_args or []), *files]
        run_env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        stream = None if not out.json_mode else subprocess.DEVNULL
        proc = subprocess.run(cmd, cwd=tmp, env=run_env, stdout=stream)
        outcomes = _outcomes(junit)
    rows, docs = [], []
    for p in selected:
        results = outcomes.get(Path(p.fields["smoke-test"]).name, [])
        verdict = "pass" if results and all(r == "pass" for r in results) else "fail"
        rows.append([p.id, "applied" if p.id in applied else "not applied", verdict,
                     f"{results.count('pass')}/{len(results)} tests passed"])
        docs.append({"id": p.id, "applied": p.id in applied, "result": verdict,
                     "tests": results})
    ok = proc.returncode == 0 and all(d["result"] == "pass" for d in docs)
    out.doc.update(ok=ok, patchset=ps.name, applied=applied, patches=docs,
                   pytest_exit=proc.returncode)
    out.table(f"{ps.name} smoke tests", ["patch", "here", "smoke", "detail"], rows)
    return 0 if ok else 1
