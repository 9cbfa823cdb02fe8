"""``compatkit verify [PATCHSET]...`` (:mod:`compatkit.ops.verify`).

With no name, the project's ``[tool.compatkit]`` patchsets that fit this environment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from compatkit.errors import CompatkitError

if TYPE_CHECKING:
    from argparse import Namespace

    from compatkit.cli.context import Context
    from compatkit.cli.output import Output
    from compatkit.ops.verify import VerifyResult


def run(args: Namespace, ctx: Context) -> int:
    from compatkit.ops import verify as ops

    if args.patchset:
        result = ops.verify(ctx.registry, ctx.env, args.patchset)
        return _render(result, ctx.out, args.allow_empty, "")
    return _project(args, ctx)


def _project(args: Namespace, ctx: Context) -> int:
    """No name: the project's ``[tool.compatkit]`` set that fits, or without a project what
    is applied here (:func:`compatkit.ops.verify.unnamed`)."""
    from compatkit.ops import verify as ops

    config, registry, env = ctx.config, ctx.registry, ctx.env
    names, selection, why = ops.unnamed(config, registry, env)
    skipped: list[dict[str, str]] = []
    notes: list[tuple[str, str | None]] = []
    if selection is not None and config is not None:
        from compatkit.delivery.wheelpin import project_mismatches

        targets = [registry.get(n).distribution for n in selection.chosen]
        moved = project_mismatches(config.path, env, targets)
        if moved:
            raise CompatkitError(
                "the installed patched wheel is not what the project asks for", moved
            )
        skipped, notes = selection.skipped_doc(), selection.notices()
    result = ops.verify(registry, env, names)
    result.skipped, result.notes = skipped, notes
    return _render(result, ctx.out, args.allow_empty, why)


def _render(result: VerifyResult, out: Output, allow_empty: bool, why: str) -> int:
    out.lines(result.notes)
    doc = result.to_json()
    names = list(result.found)
    if not names:  # a CI gate that checked nothing fails, unless told an empty set is fine
        why = why or "no patchset is applied in this environment"
        out.result({**doc, "ok": allow_empty, "problems": [] if allow_empty else [why]})
        if allow_empty:
            out.line(f"{why}; nothing to verify (--allow-empty)")
            return 0
        from compatkit.ops.verify import nothing_verified

        raise nothing_verified(why)
    out.result(doc)
    problems = result.problems
    if problems:
        raise CompatkitError(f"verify failed: {len(problems)} problem(s)", problems)
    out.line(
        f"verified: {', '.join(names)} fully applied, every patched file intact", style="green"
    )
    if result.hashes_only:
        out.line(
            f"note: {', '.join(result.hashes_only)} checked only against the hashes recorded at "
            "apply time (no patch files here to re-derive the bytes from: --patchset-dir)"
        )
    return 0
