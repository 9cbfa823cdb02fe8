"""``compatkit apply [PATCHSET]``: all-or-nothing, idempotent, journaled.

With no name, every patchset of the project's ``[tool.compatkit]`` table that fits this
environment (:mod:`compatkit.ops.project`).
"""

from __future__ import annotations

from compatkit.cli.output import Output
from compatkit.env.state import State
from compatkit.env.target import Environment
from compatkit.load.config import ProjectConfig
from compatkit.load.registry import Registry
from compatkit.model import startup_code
from compatkit.model.patchset import Patchset
from compatkit.model.results import Action
from compatkit.ops.apply import ApplyResult, apply_patchset
from compatkit.ops.project import select


def apply(result: ApplyResult, out: Output) -> int:
    """Render what :func:`compatkit.ops.apply.apply_patchset` did (the CLI runs it)."""
    return render(result, out)


def apply_project(
    config: ProjectConfig,
    registry: Registry,
    env: Environment,
    out: Output,
    force: bool = False,
    dry_run: bool = False,
) -> int:
    selection = select(config, registry, env)
    out.lines(selection.notices())
    if selection.skipped:
        out.doc["skipped"] = selection.skipped_doc()
    for name in selection.chosen:
        render(apply_patchset(registry, env, name, [], force, dry_run), out)
    out.doc.update({"ok": True, "would_apply" if dry_run else "applied": selection.chosen})
    return 0


def render(result: ApplyResult, out: Output) -> int:
    ps, dist, state = result.patchset, result.dist, result.state
    dry_run = result.action is Action.DRY_RUN
    out.doc.update(patchset=ps.name, version=ps.version, distribution=dist.name, dry_run=dry_run)
    if result.recovered:
        out.line("recovered an interrupted compatkit run: its changes were rolled back")
    if result.action is Action.NONE:
        out.doc.update(ok=True, action=Action.NONE, applied=state.applied)
        out.line(f"{ps.name} {ps.version} is already applied to {dist.name} {dist.version}")
        return 0
    replaced = result.replaced
    out.doc.update(
        ok=True,
        action=result.action,
        files=result.files,
        **{"would_apply" if dry_run else "applied": state.applied},
        excluded=state.excluded,
        replaced_version=replaced.version if replaced else None,
    )
    _warn_startup(out, ps, state.applied, dry_run)
    verb = "would apply" if dry_run else "applied"
    report = result.files
    shown = [(p, i) for p, i in report.items() if len(report) <= 20 or i["offsets"]]
    for path, info in shown:
        out.line(f"  {path}: {', '.join(info['patches'])}{info['note']}")
    if len(shown) < len(report):
        out.line(f"  ... and {len(report) - len(shown)} more files (--json lists them all)")
    if dry_run:
        out.line(
            f"{ps.name}: {verb} {len(state.applied)} patches: {result.writes} file changes "
            "(patched files, RECORD, compatkit's state and backups, moved bytecode); nothing "
            "was changed"
        )
        return 0
    again = _replacing(replaced, ps.version, ps.digest)
    left = f", excluded {', '.join(state.excluded)}" if state.excluded else ""
    out.line(
        f"{ps.name} {ps.version}: {verb} {len(state.applied)} patches to "
        f"{dist.name} {dist.version}{again}{left}",
        style="green",
    )
    return 0


def _warn_startup(out: Output, ps: Patchset, applied: list[str], dry_run: bool) -> None:
    """Declared start-up code is applied, but never silently (compatkit.model.startup_code)."""
    chosen = [p for p in ps.patches if p.id in applied]
    found = [(p.id, path, kind) for p in chosen for path, kind in startup_code.files(p)]
    entries = [{"patchset": ps.name, "patch": i, "path": p, "change": k} for i, p, k in found]
    out.doc.setdefault("startup_code", []).extend(entries)  # `apply` without a name: several
    if found:
        what = "; ".join(f"{i} {startup_code.VERBS[k]} {p}" for i, p, k in found)
        verb = "would change" if dry_run else "changed"
        out.line(
            f"warning: {ps.name} {verb} start-up code, which runs at every interpreter start: "
            f"{what} (declared in [patchset] {startup_code.KEY})",
            style="yellow",
        )


def _replacing(replaced: State | None, version: str, digest: str) -> str:
    """Why an applied state was replaced: another version, an edit, or other exclusions."""
    if replaced is None:
        return ""
    if replaced.digest == digest:  # the same patchset: only the excluded set changed
        was = ", ".join(replaced.excluded) or "nothing"
        return f" (replacing the applied {replaced.version}, which excluded {was})"
    if replaced.version == version:
        return f" (replacing the applied {replaced.version}: the patchset was edited since)"
    return f" (replacing {replaced.version})"
