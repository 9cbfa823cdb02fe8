"""``compatkit upstream PATCHSET --against DIST==VERSION``: did upstream absorb the fixes?

``--against DIST`` (or ``DIST==latest``) checks the newest release on the index.

The verdicts and their two oracles: :mod:`compatkit.ops.upstream`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from compatkit.cli.output import Output
from compatkit.cli.progress import reporter
from compatkit.errors import UsageError
from compatkit.model.patchset import Patchset
from compatkit.model.results import UpstreamState
from compatkit.ops.upstream import against_newest, check_release, throwaway_env

if TYPE_CHECKING:
    from argparse import Namespace

    from compatkit.cli.context import Context
    from compatkit.env.target import Environment
    from compatkit.load.registry import Registry


def _throwaway(against: Requirement, extra: list[str], folder: Path, out: Output) -> Environment:
    """The release under test with its own dependencies (and ``--with``); the patchset's
    requirements are checked against it afterwards, never installed beside it."""
    packages = [str(against), *extra, "pytest"]
    out.line(f"building a throw-away environment: {' '.join(packages)}")
    return throwaway_env(packages, folder, reporter(out.json_mode))


def _parse_against(ps: Patchset, against: str, out: Output) -> Requirement:
    try:
        named = canonicalize_name(Requirement(against.split("==")[0]).name)
    except InvalidRequirement as exc:
        raise UsageError(f"--against {against!r}: {str(exc).splitlines()[0]}") from None
    if named != ps.distribution:
        raise UsageError(f"--against names {named}, but {ps.name} targets {ps.distribution}")
    req = against_newest(against)
    if str(req) != against.strip():
        out.line(f"the newest {req.name} on the index: {req}")
    return req


def upstream(
    registry: Registry,
    env: Environment | None,
    name: str,
    against: str,
    out: Output | None = None,
    extra: tuple[str, ...] = (),
) -> int:
    out = out or Output()
    ps = registry.get(name)
    req = _parse_against(ps, against, out)
    with tempfile.TemporaryDirectory(prefix="compatkit-upstream-") as tmp:
        target = env or _throwaway(req, _parse_with(extra), Path(tmp) / "venv", out)
        dist, unmet, verdicts = check_release(ps, target, req)
    out.doc.update(
        ok=True,
        patchset=ps.name,
        against=f"{dist.name}=={dist.version}",
        unmet_requirements=unmet,
        patches=[v.__dict__ for v in verdicts],
    )
    for line in unmet:
        out.line(f"{ps.name}'s requirement unmet here (checked, not installed): {line}")
    out.table(
        f"{ps.name} against unpatched {dist.name} {dist.version}",
        ["patch", "verdict", "smoke (unpatched)", "diff"],
        [
            [v.id, v.state, v.smoke + (f": {v.reason}" if v.reason else ""), v.textual]
            for v in verdicts
        ],
    )
    for state in (UpstreamState.UPSTREAM, UpstreamState.REMOVED_UPSTREAM):
        gone = [v.id for v in verdicts if v.state is state]
        out.line(
            f"{len(gone)}/{len(verdicts)} patches are {state} in {dist.name} {dist.version}"
            + (f": {', '.join(gone)} can retire" if gone else "")
        )
    return 0


def _parse_with(extra: tuple[str, ...]) -> list[str]:
    for text in extra:
        try:
            Requirement(text)
        except InvalidRequirement as exc:
            raise UsageError(f"--with {text!r}: {exc}") from None
    return list(extra)


def run(args: Namespace, ctx: Context) -> int:
    if args.python and args.with_:
        raise UsageError("--with adds to the throw-away environment; with --python there is none")
    target = ctx.env if args.python else None
    where = (args.patchset, args.against, ctx.out, tuple(args.with_))
    return upstream(ctx.registry, target, *where)
