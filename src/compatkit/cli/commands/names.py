"""``compatkit _names patchsets|ids`` (hidden): the names the completion scripts offer, one a
line (compatkit.cli.commands.completion writes the scripts)."""

from __future__ import annotations

from compatkit.cli.output import Output

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from compatkit.cli.context import Context
    from compatkit.load.registry import Registry


def add_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("kind", choices=["patchsets", "ids"])


def names(registry: Registry, kind: str, out: Output) -> int:
    if kind == "patchsets":
        found = registry.names()
    else:
        found = sorted({p.id for ps in registry.all() for p in ps.patches})
        found += [f"{ps.name}:{p.id}" for ps in registry.all() for p in ps.patches]
    out.result({"names": found})
    for name in found:
        out.line(name)
    return 0


def run(args: Namespace, ctx: Context) -> int:
    return names(ctx.registry, args.kind, ctx.out)
