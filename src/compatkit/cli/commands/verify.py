"""``compatkit verify [PATCHSET]...``, ``verify --pristine DIST|--all`` and
``verify --runtime DIR`` (:mod:`compatkit.ops.verify`).

With no name, the project's ``[tool.compatkit]`` patchsets that fit this environment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from compatkit.errors import CompatkitError, UsageError

if TYPE_CHECKING:
    from argparse import Namespace
    from pathlib import Path

    from compatkit.cli.context import Context
    from compatkit.cli.output import Output
    from compatkit.load.registry import Registry
    from compatkit.ops.verify import VerifyResult


def run(args: Namespace, ctx: Context) -> int:
    if args.runtime is not None:
        _no_names(args)
        return _runtime(ctx.registry, args.runtime, ctx.out)
    if args.pristine is not None or args.all:
        return _pristine(args, ctx)
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
        if allow_empty:
            out.result({**doc, "ok": True, "problems": []})
            out.line(f"{why}; nothing to verify (--allow-empty)")
            return 0
        from compatkit.ops.verify import nothing_verified

        return out.fail(doc, nothing_verified(why).message, [why])
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


def _pristine(args: Namespace, ctx: Context) -> int:
    """``verify --pristine DIST`` or ``verify --pristine --all``."""
    if args.all and (args.pristine is None or args.pristine or args.patchset):
        raise UsageError("--all goes with --pristine alone: verify --pristine --all")
    out = ctx.out
    if args.all:
        from compatkit.ops.pristine import check_all

        checked, reports = check_all(ctx.env)
        found = {"ok": not reports, "checked": checked, "distributions": [r.doc() for r in reports]}
        if reports:
            verbose = getattr(args, "verbose", False)  # the first ten files each, or all
            return out.fail(
                found,
                f"{len(reports)} of {checked} distributions are not pristine",
                [r.line() if out.json_mode else r.text(verbose) for r in reports],
            )
        out.result(found)
        out.line(f"all {checked} distributions: every file matches its RECORD", style="green")
        return 0
    if not args.pristine:
        raise UsageError("--pristine takes a distribution (or --all)")
    from compatkit.ops import verify as ops

    dist, problems = ops.pristine(ctx.env, args.pristine)
    doc = {"ok": not problems, "distribution": dist.name, "version": dist.version}
    if problems:
        return out.fail(doc, f"{dist.name} {dist.version} is not pristine", problems)
    out.result({**doc, "problems": problems})
    out.line(f"{dist.name} {dist.version}: every file matches its RECORD", style="green")
    return 0


def _no_names(args: Namespace) -> None:
    if args.patchset:
        raise UsageError(f"{args.command} --runtime DIR checks the patchsets DIR holds; name none")


def _runtime(registry: Registry, root: Path, out: Output) -> int:
    from compatkit.model.results import PatchState
    from compatkit.ops import runtime

    checks = runtime.check(registry, root)
    problems = [p for c in checks for p in c.problems]
    names = [c.name for c in checks]
    doc = {"ok": not problems, "runtime": str(root), "patchsets": names, "problems": problems}
    if problems:
        return out.fail(doc, f"verify failed: {len(problems)} problem(s)", problems)
    out.result(doc)
    served = sum(s.status is PatchState.RUNTIME for c in checks for s in c.statuses)
    out.line(
        f"verified: {', '.join(names)} applied at import time by {root} ({served} patches); "
        "every installed file is the one they were prepared for",
        style="green",
    )
    return 0
