"""``compatkit verify [PATCHSET]`` and ``compatkit verify --pristine DIST``.

With no name, the project's ``[tool.compatkit]`` patchsets that fit this environment.
"""

from __future__ import annotations

from compatkit.cli.output import Output
from compatkit.env.target import Environment
from compatkit.errors import CompatkitError
from compatkit.load.config import ProjectConfig
from compatkit.load.registry import Registry
from compatkit.ops import verify as ops


def verify(
    registry: Registry,
    env: Environment,
    names: list[str],
    out: Output | None = None,
    allow_empty: bool = False,
    why_empty: str = "no patchset is applied in this environment",
) -> int:
    out = out or Output()
    if not names:
        return _nothing(out, allow_empty, why_empty)
    problems: list[str] = []
    for name in names:
        problems += ops.problems(registry, env, name)
    hashes_only = ops.unproven(registry, names)
    out.doc.update(ok=not problems, patchsets=names, problems=problems, hashes_only=hashes_only)
    if problems:
        raise CompatkitError(f"verify failed: {len(problems)} problem(s)", problems)
    out.line(
        f"verified: {', '.join(names)} fully applied, every patched file intact", style="green"
    )
    if hashes_only:
        out.line(
            f"note: {', '.join(hashes_only)} checked only against the hashes recorded at "
            "apply time (no patch files here to re-derive the bytes from: --patchset-dir)"
        )
    return 0


def verify_here(
    config: ProjectConfig | None,
    registry: Registry,
    env: Environment,
    out: Output,
    allow_empty: bool = False,
) -> int:
    """``compatkit verify`` with no name: the project's ``[tool.compatkit]`` set that fits,
    or without a project what is applied here (:func:`compatkit.ops.verify.unnamed`)."""
    names, selection, why = ops.unnamed(config, registry, env)
    if selection is not None and config is not None:
        from compatkit.delivery.wheelpin import project_mismatches

        targets = [registry.get(n).distribution for n in selection.chosen]
        moved = project_mismatches(config.path, env, targets)
        if moved:
            raise CompatkitError(
                "the installed patched wheel is not what the project asks for", moved
            )
        out.lines(selection.notices())
        if selection.skipped:
            out.doc["skipped"] = selection.skipped_doc()
    return verify(registry, env, names, out, allow_empty, why)


def _nothing(out: Output, allow_empty: bool, why: str) -> int:
    """A CI gate that checked nothing fails, unless told an empty set is fine."""
    out.doc.update(ok=allow_empty, patchsets=[], problems=[] if allow_empty else [why])
    if allow_empty:
        out.line(f"{why}; nothing to verify (--allow-empty)")
        return 0
    raise ops.nothing_verified(why)


def verify_pristine(env: Environment, name: str, out: Output | None = None) -> int:
    out = out or Output()
    dist, problems = ops.pristine(env, name)
    out.doc.update(ok=not problems, distribution=dist.name, version=dist.version, problems=problems)
    if problems:
        raise CompatkitError(f"{dist.name} {dist.version} is not pristine", problems)
    out.line(f"{dist.name} {dist.version}: every file matches its RECORD", style="green")
    return 0


def verify_pristine_all(env: Environment, out: Output | None = None, verbose: bool = False) -> int:
    """``verify --pristine --all``: per distribution that is not pristine, one line and the
    files that are off (the first ten; ``verbose``: all); ``--json``: every path."""
    from compatkit.ops.pristine import check_all

    out = out or Output()
    checked, reports = check_all(env)
    out.doc.update(ok=not reports, checked=checked, distributions=[r.doc() for r in reports])
    if reports:
        raise CompatkitError(
            f"{len(reports)} of {checked} distributions are not pristine",
            [r.line() if out.json_mode else r.text(verbose) for r in reports],
        )
    out.line(f"all {checked} distributions: every file matches its RECORD", style="green")
    return 0
