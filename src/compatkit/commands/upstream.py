"""``compatkit upstream PATCHSET --against DIST==VERSION``: did upstream absorb the fixes?

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
import tempfile
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from compatkit.checks import textual_status
from compatkit.commands.smoke import _require_pytest, _select, run_smoke
from compatkit.errors import CompatkitError, UsageError
from compatkit.output import Output
from compatkit.patchset import Patchset
from compatkit.registry import Registry
from compatkit.target import Environment


@dataclass(frozen=True)
class Verdict:
    id: str
    state: str  # upstream, still needed, needs port
    smoke: str  # pass or fail
    textual: str  # applies cleanly / applies, offset N / its change is already present / conflict
    reason: str = ""


def classify(ps: Patchset, env: Environment) -> list[Verdict]:
    """Classify every patch of ``ps`` against what is installed (and unpatched) in ``env``."""
    dist = env.require(ps.distribution)
    texts = {s.id: s.detail for s in textual_status(ps, dist)}
    _, smoke = run_smoke(ps, env, _select(ps, []), show_output=False)
    verdicts = []
    for patch in ps.patches:
        result, text = smoke[patch.id], texts[patch.id]
        if result.verdict == "pass":
            state = "upstream"
        elif text.startswith("conflict"):
            state = "needs port"
        else:
            state = "still needed"
        verdicts.append(Verdict(patch.id, state, result.verdict, text, result.reason))
    return verdicts


def _throwaway(ps: Patchset, against: Requirement, folder: Path, out: Output) -> Environment:
    uv = shutil.which("uv")
    packages = [str(against), *(str(r) for r in ps.requires), "pytest"]
    out.line(f"building a throw-away environment: {' '.join(packages)}")
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


def _parse_against(ps: Patchset, against: str) -> Requirement:
    try:
        req = Requirement(against)
    except InvalidRequirement as exc:
        raise UsageError(f"--against {against!r}: {exc}") from None
    if req.name.lower().replace("_", "-") != ps.distribution:
        raise UsageError(f"--against names {req.name}, but {ps.name} targets {ps.distribution}")
    return req


def upstream(
    registry: Registry, env: Environment | None, name: str, against: str, out: Output | None = None
) -> int:
    out = out or Output()
    ps = registry.get(name)
    req = _parse_against(ps, against)
    with tempfile.TemporaryDirectory(prefix="compatkit-upstream-") as tmp:
        target = env or _throwaway(ps, req, Path(tmp) / "venv", out)
        _require_pytest(target)
        dist = target.require(ps.distribution)
        if not req.specifier.contains(dist.version, prereleases=True):
            raise CompatkitError(f"the target has {dist.name} {dist.version}, not {req}")
        verdicts = classify(ps, target)
    out.doc.update(
        ok=True,
        patchset=ps.name,
        against=f"{dist.name}=={dist.version}",
        patches=[v.__dict__ for v in verdicts],
    )
    out.table(
        f"{ps.name} against unpatched {dist.name} {dist.version}",
        ["patch", "verdict", "smoke (unpatched)", "diff"],
        [
            [v.id, v.state, v.smoke + (f": {v.reason}" if v.reason else ""), v.textual]
            for v in verdicts
        ],
    )
    gone = [v.id for v in verdicts if v.state == "upstream"]
    out.line(
        f"{len(gone)}/{len(verdicts)} patches are upstream in {dist.name} {dist.version}"
        + (f": {', '.join(gone)} can retire" if gone else "")
    )
    return 0
