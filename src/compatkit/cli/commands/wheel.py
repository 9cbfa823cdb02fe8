"""``compatkit wheel PATCHSET [-o DIR] [--sha256 HEX] [--force]``: the target's wheel with the
patchset built in."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from compatkit.cli.output import Output
from compatkit.cli.outputs import output_dir
from compatkit.ops.wheel import build_wheel

if TYPE_CHECKING:
    from argparse import Namespace

    from compatkit.cli.context import Context
    from compatkit.delivery.wheels import WheelSource
    from compatkit.env.target import Environment
    from compatkit.load.registry import Registry


def wheel(
    registry: Registry,
    env: Environment,
    name: str,
    out_dir: Path,
    wheels: WheelSource,
    out: Output | None = None,
    sha256: str | None = None,
    force: bool = False,
) -> int:
    out = out or Output()
    output_dir(out_dir, "-o")
    result = build_wheel(registry, env, name, out_dir, wheels, sha256, force)
    out.doc.update(
        ok=True,
        patchset=name,
        wheel=str(result.path),
        distribution=result.name,
        version=result.version,
        base_version=result.base_version,
        sha256=result.sha256,
        applied=result.applied,
        files=result.files,
        source=result.source,
        proof=result.proof,
        sbom=result.sbom,
        unchanged=result.unchanged,
        notes=wheels.notes,
    )
    for note in wheels.notes:
        out.line(note)
    verb = "unchanged" if result.unchanged else "built"
    out.line(
        f"{verb} {result.path} ({result.name} {result.base_version} with {name}: "
        f"{len(result.applied)} patches, {len(result.files)} files)",
        style="green",
    )
    out.line(f"from {result.source} (proven by {result.proof})")
    out.line(f"sha256={result.sha256}")
    return 0


def run(args: Namespace, ctx: Context) -> int:
    where = (args.patchset, args.out_dir, ctx.wheels(), ctx.out, args.sha256, args.force)
    return wheel(ctx.registry, ctx.env, *where)
