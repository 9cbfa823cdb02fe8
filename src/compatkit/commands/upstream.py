"""``compatkit upstream PATCHSET --against DIST==VERSION``: did upstream absorb the fixes?

The verdicts and their two oracles: :mod:`compatkit.ops.classify`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from compatkit.errors import CompatkitError, UsageError
from compatkit.ops.classify import classify, throwaway_env
from compatkit.ops.smoke import require_pytest
from compatkit.output import Output
from compatkit.patchset import Patchset
from compatkit.registry import Registry
from compatkit.results import Status
from compatkit.target import Environment


def _throwaway(ps: Patchset, against: Requirement, folder: Path, out: Output) -> Environment:
    packages = [str(against), *(str(r) for r in ps.requires), "pytest"]
    out.line(f"building a throw-away environment: {' '.join(packages)}")
    return throwaway_env(packages, folder)


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
        require_pytest(target)
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
    gone = [v.id for v in verdicts if v.state is Status.UPSTREAM]
    out.line(
        f"{len(gone)}/{len(verdicts)} patches are upstream in {dist.name} {dist.version}"
        + (f": {', '.join(gone)} can retire" if gone else "")
    )
    return 0
