"""``compatkit runtime install|uninstall`` (:mod:`compatkit.ops.runtime`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from compatkit.cli.output import Output
from compatkit.errors import UsageError
from compatkit.ops import runtime as ops

if TYPE_CHECKING:
    from argparse import Namespace

    from compatkit.cli.context import Context
    from compatkit.env.target import Environment
    from compatkit.load.registry import Registry


def install(
    registry: Registry, env: Environment, names: list[str], root: Path, pth: bool, out: Output
) -> int:
    if not names:
        raise UsageError("runtime install needs at least one patchset name")
    done = ops.install(registry, env, names, root, pth)
    out.doc.update(ok=True, dir=str(done.root), patchsets=done.patchsets, pth=done.pth)
    what = ", ".join(done.patchsets)
    if done.pth is not None:
        out.line(f"{what}: applied at import time by {done.pth} (every start)", style="green")
    else:
        out.line(f"{what}: runtime hook written to {done.root}; put it first on PYTHONPATH:")
        out.line(f'  export PYTHONPATH="{done.root}${{PYTHONPATH:+:$PYTHONPATH}}"')
    return 0


def uninstall(root: Path, out: Output, env: Environment | None = None) -> int:
    removed = ops.uninstall(root, env)
    out.doc.update(ok=True, removed=removed)
    out.line(f"removed the runtime hook in {root} ({len(removed)} files and folders)")
    return 0


def run(args: Namespace, ctx: Context) -> int:
    if args.action == "install":
        return install(ctx.registry, ctx.env, args.patchset, args.dir, args.pth, ctx.out)
    if args.patchset or args.pth:
        raise UsageError("runtime uninstall takes only --dir")
    return uninstall(args.dir, ctx.out, ctx.env)
