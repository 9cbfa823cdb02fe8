"""Verify: is a patchset fully applied and intact? (Is a distribution pristine:
:mod:`compatkit.ops.pristine`.)

A patchset's files are checked twice: against the hashes its state records (the cheap check,
with the precise words: edited, reinstalled, missing), then, when those agree, against what its
patch files make of the original bytes (:mod:`compatkit.env.derive`): a record is only a claim.
"""

from __future__ import annotations

from compatkit.env import derive
from compatkit.env.checks import constraint_problems, state_problems
from compatkit.env.session import Session, locate
from compatkit.env.state import states_of
from compatkit.env.target import Dist, Environment
from compatkit.errors import CompatkitError
from compatkit.load.registry import Registry
from compatkit.value import Value

TYPE_CHECKING = False

if TYPE_CHECKING:
    from compatkit.load.config import ProjectConfig
    from compatkit.ops.project import Selection


class VerifyResult(Value):
    """Each patchset's problems (empty: verified), in the order named; ``hashes_only``: those
    checked only against the hashes recorded at apply time; ``skipped``: the project's
    patchsets that do not fit here, and ``notes`` the lines that say so; ``empty``: why
    nothing was there to verify (for when nothing was)."""

    __slots__ = ("found", "hashes_only", "skipped", "notes", "empty")

    def __init__(
        self,
        found: dict[str, list[str]],
        hashes_only: list[str],
        skipped: list[dict[str, str]] | None = None,
        notes: list[tuple[str, str | None]] | None = None,
        empty: str = "no patchset is applied in this environment",
    ) -> None:
        self.found, self.hashes_only = found, hashes_only
        self.skipped, self.notes, self.empty = skipped or [], notes or [], empty

    @property
    def problems(self) -> list[str]:
        return [p for found in self.found.values() for p in found]

    def to_json(self, allow_empty: bool = False) -> dict[str, object]:
        """With nothing verified, ``ok`` only if ``allow_empty``; the reason is the problem."""
        patchsets = [
            {"name": n, "ok": not p, "problems": p, "hashes_only": n in self.hashes_only}
            for n, p in self.found.items()
        ]
        problems = self.problems if self.found or allow_empty else [self.empty]
        return {
            "ok": not problems,
            "patchsets": patchsets,
            "problems": problems,
            "skipped": self.skipped,
        }


def verify(registry: Registry, env: Environment, names: list[str]) -> VerifyResult:
    found = {name: problems(registry, env, name) for name in names}
    return VerifyResult(found, unproven(registry, names))


def problems(registry: Registry, env: Environment, name: str) -> list[str]:
    """Every way ``name`` is not fully applied and intact here (empty: verified)."""
    # the patchset is loaded below whenever it is known here: its target first, so that only
    # that distribution is read (issue 36)
    target = registry.get(name).distribution if name in registry.names() else None
    dist = locate(registry, env, name, target)
    if dist is None:  # which environment was looked at, and how to target another
        what = f"its target distribution {target}" if target else "its target distribution"
        return [f"{name}: {what} is not installed in {env.describe()}{env.hint()}"]
    with Session.open(dist) as s:
        state = s.state(name)
        if state is None and (moved := _moved_on(registry, name, dist)):
            return [moved]
        if state is None:
            from compatkit.ops.pristine import is_pristine

            lost = (
                ": the files match their RECORD, so a reinstall removed the patches "
                "or they were never applied"
                if is_pristine(env, dist)
                else ""
            )
            return [f"{name} is not applied to {dist.name} {dist.version}{lost}"]
        found = [f"{name}: {p}" for p in state_problems(dist, state)]
        if state.excluded:
            found.append(f"{name}: applied without {', '.join(state.excluded)} (--exclude)")
        if name not in registry.names():
            return found  # a patched wheel's image: the recorded hashes only (see unproven)
        ps = registry.get(name)
        if ps.digest != state.digest:
            found.append(
                f"{name}: the patchset changed since it was applied "
                f"({state.version} -> {ps.version}); run compatkit apply {name}"
            )
        elif not found:
            others = [o for o in states_of(dist) if o.patchset != name]
            found = [f"{name}: {p}" for p in derive.problems(ps, dist, state, others)]
        found += [f"{name}: {p}" for p in constraint_problems(ps, env)]
    return found


def _moved_on(registry: Registry, name: str, dist: Dist) -> str | None:
    """A patched wheel of another version than ``name`` targets: say so, and what to do."""
    from compatkit.env.checks import target_problem

    ps = registry.get(name) if name in registry.names() else None
    if ps is None or target_problem(ps, dist) is None:
        return None
    from compatkit.delivery.wheelpin import stale_wheel

    hint = stale_wheel(dist, ps.target)
    return f"{name}: {hint}" if hint else None


def unproven(registry: Registry, names: list[str]) -> list[str]:
    """The patchsets verify can check only against their recorded hashes: their patch files
    are not in any patchset folder here (an image with a patched wheel, no patchset)."""
    known = set(registry.names())
    return [n for n in names if n not in known]


def unnamed(
    config: ProjectConfig | None, registry: Registry, env: Environment
) -> tuple[list[str], Selection | None, str]:
    """What ``verify`` checks when given no name (the pytest plugin too): the project's
    patchsets that fit, with the selection (its skipped ones), or without a project every
    patchset applied here; and why that set is empty, for when it is."""
    if config is None:
        from compatkit.env.state import applied_patchsets

        why = "no [tool.compatkit] table was found and no patchset is applied here"
        return applied_patchsets(env), None, why
    from compatkit.ops.project import select

    selection = select(config, registry, env)
    return selection.chosen, selection, f"no patchset of {config.path} fits this environment"


def verify_project(
    config: ProjectConfig | None, registry: Registry, env: Environment
) -> VerifyResult:
    """``verify`` with no name: the project's ``[tool.compatkit]`` set that fits, or without
    a project what is applied here (:func:`unnamed`). An installed patched wheel the project's
    dependencies no longer accept fails it before anything is verified."""
    names, selection, why = unnamed(config, registry, env)
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
    found = {name: problems(registry, env, name) for name in names}
    return VerifyResult(found, unproven(registry, names), skipped, notes, why)


def nothing_verified(why: str, option: str = "--allow-empty") -> CompatkitError:
    """A gate that checked nothing fails, unless ``option`` says an empty set is fine."""
    return CompatkitError(
        f"{why}: nothing was verified (name the patchsets, or pass {option} if an empty "
        "set is expected here)"
    )
