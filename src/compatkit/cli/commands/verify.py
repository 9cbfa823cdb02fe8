"""``compatkit verify [PATCHSET]...`` (:mod:`compatkit.ops.verify`).

With no name, the project's ``[tool.compatkit]`` patchsets that fit this environment.
"""

from __future__ import annotations

from compatkit.cli import options

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from compatkit.cli.context import Context
    from compatkit.cli.output import Output
    from compatkit.ops.verify import VerifyResult


def add_arguments(parser: ArgumentParser) -> None:
    options.patchset(parser, "*", options.DEFAULT_SET)
    parser.add_argument(
        "--allow-empty",
        action="store_true",
        help="exit 0 when there is nothing to verify (default: that is a failure)",
    )


def run(args: Namespace, ctx: Context) -> int:
    from compatkit.ops import verify as ops

    if args.patchset:
        result = ops.verify(ctx.registry, ctx.env, args.patchset)
    else:  # the project's [tool.compatkit] set that fits, or what is applied here
        result = ops.verify_project(ctx.config, ctx.registry, ctx.env)
    return _render(result, ctx.out, args.allow_empty)


def _render(result: VerifyResult, out: Output, allow_empty: bool) -> int:
    out.lines(result.notes)
    doc = result.to_json(allow_empty)
    names = list(result.found)
    if not names:  # a CI gate that checked nothing fails, unless told an empty set is fine
        if allow_empty:
            out.result(doc)
            out.line(f"{result.empty}; nothing to verify (--allow-empty)")
            return 0
        from compatkit.ops.verify import nothing_verified

        return out.fail(doc, nothing_verified(result.empty).message, [result.empty])
    problems = result.problems
    if problems:
        return out.fail(doc, f"verify failed: {len(problems)} problem(s)", problems)
    out.result(doc)
    out.line(
        f"verified: {', '.join(names)} fully applied, every patched file intact", style="green"
    )
    if result.hashes_only:
        out.line(
            f"note: {', '.join(result.hashes_only)} checked only against the hashes recorded at "
            "apply time (no patch files here to re-derive the bytes from: --patchset-dir)"
        )
    return 0
