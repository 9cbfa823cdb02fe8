"""Classify each patch against a release: upstream, still needed, or needs port.

Two oracles, reported side by side, because they can disagree:

- behavioural: the patch's smoke test on the *unpatched* release (pass: the fix is upstream);
- textual: the patch applies forward, is already present (applies in reverse), or conflicts.

A patch is **upstream** when its smoke test passes unpatched, **needs port** when it fails and
the diff conflicts, and **still needed** when it fails and the diff would still apply.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from compatkit.checks import textual_status
from compatkit.errors import CompatkitError
from compatkit.ops.smoke import run_smoke, select
from compatkit.patchset import Patchset
from compatkit.results import Status
from compatkit.target import Environment


@dataclass(frozen=True)
class Verdict:
    id: str
    state: Status  # UPSTREAM, STILL_NEEDED, NEEDS_PORT
    smoke: Status  # PASS or FAIL
    textual: str  # applies cleanly / applies, offset N / its change is already present / conflict
    reason: str = ""


def classify(ps: Patchset, env: Environment) -> list[Verdict]:
    """Classify every patch of ``ps`` against what is installed (and unpatched) in ``env``."""
    dist = env.require(ps.distribution)
    texts = {s.id: s for s in textual_status(ps, dist)}
    _, smoke = run_smoke(ps, env, select(ps, []), show_output=False)
    verdicts = []
    for patch in ps.patches:
        result, text = smoke[patch.id], texts[patch.id]
        if result.verdict is Status.PASS:
            state = Status.UPSTREAM
        elif text.textual is Status.CONFLICT:
            state = Status.NEEDS_PORT
        else:
            state = Status.STILL_NEEDED
        verdicts.append(Verdict(patch.id, state, result.verdict, text.detail, result.reason))
    return verdicts


def throwaway_env(packages: list[str], folder: Path) -> Environment:
    """A new venv in ``folder`` with ``packages`` installed."""
    uv = shutil.which("uv")
    python = folder / "bin" / "python"
    if uv:
        subprocess.run([uv, "venv", "-q", "-p", sys.executable, str(folder)], check=True)
        cmd = [uv, "pip", "install", "-q", "--python", str(python), *packages]
    else:
        subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
        cmd = [str(python), "-m", "pip", "install", "-q", *packages]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["install failed"])[-1]
        raise CompatkitError(f"cannot install {' '.join(packages)}: {last}")
    return Environment.for_python(str(python))
