"""Run patches' smoke tests with pytest in a target environment (one pytest process)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from compatkit import bounded
from compatkit.env.state import load_state
from compatkit.env.target import Environment
from compatkit.errors import CompatkitError, UsageError
from compatkit.model.patchset import Patch, Patchset
from compatkit.model.results import SmokeState
from compatkit.value import Value


def smoke_patches(ps: Patchset, ids: list[str]) -> list[Patch]:
    """The patches ``ids`` (none: every one) whose smoke tests run; each must have one."""
    unknown = [i for i in ids if ps.patch(i) is None]
    if unknown:
        raise UsageError(f"{ps.name} has no patch {', '.join(unknown)} (ids: {', '.join(ps.ids)})")
    selected = [p for p in ps.patches if not ids or p.id in ids]
    missing = [p.id for p in selected if not ps.smoke_file(p).is_file()]
    if missing:
        raise CompatkitError(f"{ps.name}: no smoke test file for {', '.join(missing)}")
    return selected


def _overlay(ps: Patchset, tmp: Path) -> Path:
    """The patchset directory to run the tests from: the smoke-from sibling's (or its own)
    as it is, or, with both, a copy of the two ``smoke/`` folders as one in ``tmp``."""
    if not ps.own_smoke:
        return ps.smoke_root
    for d in ps.smoke_dirs():
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        shutil.copytree(d, tmp / "smoke", ignore=ignore, dirs_exist_ok=True)
    return tmp


def require_pytest(env: Environment, ps: Patchset) -> None:
    """pytest in the target; where neither it nor ``ps``'s target is there, the mistake is
    the environment (compatkit's own when ``--python`` was left out), and the line says so."""
    proc = subprocess.run([env.executable, "-c", "import pytest"], capture_output=True)
    if proc.returncode == 0:
        return
    if env.find(ps.distribution) is None:
        raise CompatkitError(
            f"{ps.name}: {ps.distribution} is not installed in {env.describe()}{env.hint()}"
        )
    raise CompatkitError(
        f"pytest is not installed in the target environment ({env.executable}); "
        f"install it there, e.g. '{install_hint(env.executable, 'pytest')}'"
    )


def install_hint(python: str, package: str) -> str:
    """The command that installs ``package`` for ``python``: uv's when uv made the venv (its
    pyvenv.cfg has a ``uv`` key) or pip is not there (uv venvs have none), else pip's."""
    cfg = Path(python).parent.parent / "pyvenv.cfg"
    try:
        text = bounded.read(cfg, bounded.SMALL).decode()
        keys = {line.partition("=")[0].strip() for line in text.splitlines()}
    except (OSError, UnicodeDecodeError, bounded.Refused):
        keys = set()
    if "uv" not in keys:
        pip = subprocess.run([python, "-c", "import pip"], capture_output=True)
        if pip.returncode == 0:
            return f"{python} -m pip install {package}"
    return f"uv pip install --python {python} {package}"


class SmokeResult(Value):
    """One patch's smoke verdict: ``tests`` the outcome of each test case, ``reason`` the first
    failure's message (one line), ``blocked_by`` the Smoke-Needs patches not applied here (see
    :func:`run_smoke`), ``error`` the test's own first failure, one line (``reason`` may wrap
    it: blocked)."""

    __slots__ = ("verdict", "tests", "reason", "blocked_by", "error")

    def __init__(
        self,
        verdict: SmokeState,
        tests: list[str],
        reason: str = "",
        blocked_by: tuple[str, ...] = (),
        error: str = "",
    ) -> None:
        self.verdict, self.tests, self.reason = verdict, tests, reason
        self.blocked_by, self.error = blocked_by, error


class SmokeRun(Value):
    """``compatkit smoke``'s result: each selected patch's :class:`SmokeResult`, which
    patches are applied here, pytest's exit code."""

    __slots__ = ("patchset", "applied", "pytest_exit", "results")

    def __init__(
        self, patchset: str, applied: list[str], pytest_exit: int, results: dict[str, SmokeResult]
    ) -> None:
        self.patchset, self.applied = patchset, applied
        self.pytest_exit, self.results = pytest_exit, results

    @property
    def ok(self) -> bool:
        verdicts = [r.verdict for r in self.results.values()]
        return self.pytest_exit == 0 and all(v is SmokeState.PASS for v in verdicts)

    def to_json(self) -> dict[str, object]:
        patches = [
            {
                "id": pid,
                "applied": pid in self.applied,
                "result": r.verdict,
                "tests": r.tests,
                "reason": r.reason,
                "blocked_by": list(r.blocked_by),
            }
            for pid, r in self.results.items()
        ]
        return {
            "ok": self.ok,
            "patchset": self.patchset,
            "applied": self.applied,
            "pytest_exit": self.pytest_exit,
            "patches": patches,
        }


def _outcomes(junit: Path) -> dict[str, list[tuple[str, str]]]:
    """Test file name → (outcome, failure message) of every test case in it."""
    results: dict[str, list[tuple[str, str]]] = {}
    if not junit.exists():
        return results
    for case in ET.parse(junit).getroot().iter("testcase"):
        # a module that fails to import is one case: no classname, the module as its name
        module = (case.get("classname") or case.get("name") or "").split(".")
        name = module[-2] if len(module) > 1 and module[-1][:1].isupper() else module[-1]
        bad = [c for c in case if c.tag in ("failure", "error")]
        skipped = [c for c in case if c.tag == "skipped"]
        outcome = "fail" if bad else "skipped" if skipped else "pass"
        message = (bad or skipped)[0].get("message", "") if (bad or skipped) else ""
        if message == "collection failure":
            message = _raised(bad[0].text or "") or message
        results.setdefault(f"{name}.py", []).append((outcome, _one_line(message)))
    return results


def _raised(report: str) -> str:
    """The exception line pytest marks with ``E`` last in a failure report."""
    marked = [line[1:].strip() for line in report.splitlines() if line.startswith("E ")]
    return marked[-1] if marked else ""


def run_smoke(
    ps: Patchset, env: Environment, selected: list[Patch], show_output: bool
) -> tuple[int, dict[str, SmokeResult]]:
    """Run the selected patches' smoke tests in one pytest process in the target: from
    ``ps``'s ``smoke/`` folders as loaded (resolved, every file in them trusted: load.trust),
    no ``conftest.py`` above them, no bytecode written there."""
    with tempfile.TemporaryDirectory(prefix="compatkit-smoke-") as tmp:
        junit = Path(tmp) / "junit.xml"
        root = _overlay(ps, Path(tmp) / "overlay")
        files = [str(root / p.fields["smoke-test"]) for p in selected]
        cmd = [
            env.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-c",
            os.devnull,
            "--rootdir",
            str(root / "smoke"),
            # no conftest.py above smoke/: with -c /dev/null pytest would load one from every
            # folder up to / (a /tmp/conftest.py anybody wrote ran as root)
            "--confcutdir",
            str(root / "smoke"),
            f"--junitxml={junit}",
            "-q",
            *files,
        ]
        run_env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        run_env["PYTHONDONTWRITEBYTECODE"] = "1"  # nothing written into the patchset (umask)
        stream = None if show_output else subprocess.DEVNULL
        proc = subprocess.run(cmd, cwd=tmp, env=run_env, stdout=stream, stderr=stream)
        outcomes = _outcomes(junit)
    results = {}
    for p in selected:
        cases = outcomes.get(Path(p.fields["smoke-test"]).name, [])
        passed = cases and all(o == "pass" for o, _ in cases)
        verdict = SmokeState.PASS if passed else SmokeState.FAIL
        reason = next((m for o, m in cases if o != "pass"), "" if cases else "no test ran")
        error = exception_line(reason)
        results[p.id] = SmokeResult(verdict, [o for o, _ in cases], reason, error=error)
    return proc.returncode, _blocked(ps, env, results)


def _blocked(
    ps: Patchset, env: Environment, results: dict[str, SmokeResult]
) -> dict[str, SmokeResult]:
    """A failing test whose Smoke-Needs are not met fails for their reason, not its own: say
    so. A need is met when that patch is applied here, or when its own smoke test passed in
    this run (the fix is there: applied, or already upstream in this release)."""
    applied = _applied_here(ps, env)
    out = {}
    for pid, r in results.items():
        patch = ps.patch(pid)
        needs = patch.smoke_needs if patch is not None else []
        missing = tuple(
            n
            for n in needs
            if n not in applied and results.get(n, r).verdict is not SmokeState.PASS
        )
        if r.verdict is SmokeState.FAIL and missing:
            why = (
                f"blocked: needs {', '.join(missing)} applied to reach the code {pid} fixes "
                f"(not applied here), so this may be their failure, not {pid}'s; it failed "
                f"with: {r.reason}"
            )
            r = SmokeResult(r.verdict, r.tests, why, missing, r.error)
        out[pid] = r
    return out


def applied_state(ps: Patchset, env: Environment) -> tuple[list[str], list[str]] | None:
    """The patches of ``ps`` applied here and those excluded (None: ``ps`` is not applied)."""
    dist = env.find(ps.distribution)
    state = load_state(dist, ps.name) if dist is not None else None
    return (state.applied, state.excluded) if state else None


def _applied_here(ps: Patchset, env: Environment) -> set[str]:
    dist = env.find(ps.distribution)
    state = load_state(dist, ps.name) if dist is not None else None
    return set(state.applied) if state else set()


_WRAPPED = re.compile(r'failed on (?:setup|teardown|call) with "(.*)"')


def exception_line(message: str) -> str:
    """The exception line of a pytest failure message, without pytest's fixture wrapper.

    >>> exception_line('failed on setup with "ModuleNotFoundError: No module named x"')
    'ModuleNotFoundError: No module named x'
    """
    m = _WRAPPED.fullmatch(message)
    return m.group(1) if m else message


_TMP = re.compile(r"\S*/pytest-of-[^/\s]+/pytest-\d+/")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _one_line(message: str) -> str:
    """A failure message on one line, at most 200 characters, the same on every run: pytest's
    temp paths and object addresses (which differ on every run) are replaced before the cut,
    so the cut falls in the same place (docs/compatibility.md changes only when results do).

    >>> _one_line("no file /tmp/pytest-of-root/pytest-41/t0/m \\t (<Scheduler object at 0x7f1>)")
    'no file <tmp>/t0/m (<Scheduler object>)'
    """
    return stable(" ".join(message.split()))[:200].rstrip()


def stable(text: str) -> str:
    """``text`` with pytest's temp paths and object addresses (new on every run) replaced."""
    return _ADDRESS.sub("", _TMP.sub("<tmp>/", text))
