"""``compatkit prove PATCHSET``: each smoke test fails without its patch and passes with it
(the three runs per patch and the report: :mod:`compatkit.ops.prove`)."""

from __future__ import annotations

from compatkit.cli import options
from compatkit.cli.destinations import output_dir

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from compatkit.cli.context import Context


def add_arguments(parser: ArgumentParser) -> None:
    options.patchset(parser)
    options.output(
        parser,
        "DIR",
        "the folder the table goes to, as JSON and Markdown (PATCHSET.json, PATCHSET.md)",
    )


def run(args: Namespace, ctx: Context) -> int:
    from compatkit.ops.prove import prove

    if args.output is not None:
        output_dir(args.output, "-o")
    out = ctx.out
    result = prove(ctx.registry, ctx.env, args.patchset, args.output, out.line)
    proofs, doc = result.proofs, result.to_json()
    out.table(
        f"{args.patchset}: smoke test per patch (expected fail / fail / pass)",
        ["patch", "unpatched", "all but this patch", "patched", "verdict"],
        result.rows,
    )
    for note in result.notes:
        out.line(note)
    bad = [p.id for p in proofs if not p.proven]
    if bad:
        return out.fail(doc, f"{len(bad)} patch(es) not proven both ways: {', '.join(bad)}")
    missing = [f"{p.id} ({', '.join(p.needs_missing)})" for p in proofs if p.needs_missing]
    if missing:
        return out.fail(
            doc,
            f"smoke tests that fail without a patch their Smoke-Needs does not name: "
            f"{'; '.join(missing)}",
        )
    out.result(doc)
    out.line(f"{len(proofs)}/{len(proofs)} patches proven: fail / fail / pass", style="green")
    return 0
