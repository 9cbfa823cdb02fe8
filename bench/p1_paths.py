"""P1 on every path a user runs compatkit from, besides the benchmark's own environment.

- ``P1-unmet``: a venv holding compatkit and speculators 0.3.0 only (no vLLM): every bundled
  patchset's requirements are unmet, so ``explain patch-6`` decides them (the path that used
  to import packaging).
- ``P1-tool``: compatkit in a venv of its own (as ``uv tool install`` leaves it), run with
  ``--python`` against the benchmark's environment, patchset applied (the probe is cached
  after the first run, as for any user).
- ``P1-pytest``: what the pytest plugin adds to a session with ``compatkit_verify = true``
  (``[tool.compatkit] patchsets = ["speculators-vllm016"]``, applied): a one-test session
  with the plugin, minus the same session with ``-p no:compatkit``.

Every venv gets compatkit as users get it: a real install with compiled bytecode. Each row is
a ratio to ``python -c pass`` of the interpreter that runs compatkit.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from common import P1_TARGET, ROOT, Figure, Report, interleaved, median_of, timed

PYPROJECT = """\
[tool.compatkit]
patchsets = ["speculators-vllm016"]

[tool.pytest.ini_options]
compatkit_verify = true
"""


def _venv(path: Path, *packages: str) -> Path:
    subprocess.run(["uv", "venv", "-q", "-p", sys.executable, str(path)], check=True)
    python = path / "bin" / "python"
    base = ["uv", "pip", "install", "-q", "--python", str(python), "--compile-bytecode"]
    subprocess.run([*base, str(ROOT)], check=True)
    if packages:
        subprocess.run([*base, "--no-deps", *packages], check=True)
    return python


def run(report: Report, target: Path, env: dict[str, str], runs: int) -> None:
    """Call with the speculators-vllm016 patchset applied in ``target``'s environment."""
    with tempfile.TemporaryDirectory(prefix="compatkit-p1-") as tmp:
        work = Path(tmp)
        unmet = _venv(work / "unmet", "speculators==0.3.0")
        tool = _venv(work / "tool")
        for row, python, args, what in (
            ("P1-unmet", unmet, ["explain", "patch-6"], "requirements unmet (no vLLM)"),
            (
                "P1-tool",
                tool,
                ["--python", str(target), "explain", "patch-6"],
                "from a tool venv with --python",
            ),
        ):
            exe = python.parent / "compatkit"
            ref, value = interleaved(
                runs,
                lambda p=python: timed([str(p), "-c", "pass"], env=env),
                lambda a=args, e=exe: timed([str(e), *a], env=env),
            )
            report.add(
                Figure(
                    row,
                    f"compatkit explain patch-6, {what}",
                    value,
                    "python -c pass",
                    ref,
                    P1_TARGET,
                )
            )
        project = work / "project"
        project.mkdir()
        (project / "pyproject.toml").write_text(PYPROJECT)
        (project / "test_one.py").write_text("def test_one():\n    pass\n")
        pytest = [str(target), "-m", "pytest", "-q", "-p", "no:cacheprovider"]

        def with_plugin() -> float:
            return timed(pytest, env=env, cwd=project)

        def without() -> float:
            return timed([*pytest, "-p", "no:compatkit"], env=env, cwd=project)

        with_plugin(), without()  # warm-up (and: the session passes with the plugin on)
        pairs = [(with_plugin(), without()) for _ in range(runs)]
        pairs.sort(key=lambda p: p[0] - p[1])
        on, off = pairs[len(pairs) // 2]
        ref = median_of(runs, lambda: timed([str(target), "-c", "pass"], env=env), 3)
        report.add(
            Figure(
                "P1-pytest",
                f"pytest plugin overhead per session (compatkit_verify; session {on * 1000:.0f} "
                f"vs {off * 1000:.0f} ms without the plugin)",
                max(on - off, 0.0),
                "python -c pass",
                ref,
                P1_TARGET,
            )
        )
