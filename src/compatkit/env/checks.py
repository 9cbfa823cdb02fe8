"""Read-only questions about a patchset in an environment: does it fit, is it applied, drifted?

packaging's answers and the compile check's verdicts come through
:func:`compatkit.model.answers.remember` (remembered only for the commands that write nothing).

>>> need = "vllm>=0.16,<0.17"
>>> _version_problem(("vllm", "<0.17,>=0.16", False, "vllm<0.17,>=0.16"), need, "0.11.0")
'needs vllm<0.17,>=0.16, found vllm 0.11.0'
"""

from __future__ import annotations

from functools import partial
from hashlib import sha256

from compatkit.engine.hunks import SeriesConflict, apply_series
from compatkit.env.state import FileState, State, states_of
from compatkit.env.target import Dist, Environment
from compatkit.model import answers, startup_code
from compatkit.model.diff import FileDiff
from compatkit.model.patchset import Patchset, marker_holds, requirement_admits
from compatkit.value import Value

TYPE_CHECKING = False

if TYPE_CHECKING:
    from compatkit.model.patchset import Facts
    from compatkit.model.results import DiffState, PatchState


def _version_problem(facts: Facts, text: str, found: str | None) -> str | None:
    name, specifier, _, shown = facts
    if found is None:
        return f"needs {shown}, which is not installed"
    if not requirement_admits(text, found):
        return f"needs {name}{specifier}, found {name} {found}"
    return None


def target_problem(ps: Patchset, dist: Dist | None) -> str | None:
    """Why the installed target does not fit ``ps`` (None: it fits)."""
    if dist is None:
        return f"needs {ps.target}, which is not installed"
    if not ps.accepts(dist.version):
        return f"needs {ps.target}, found {ps.distribution} {dist.version}"
    return None


def requirement_problems(ps: Patchset, env: Environment, dist: Dist | None) -> list[str]:
    """Every way the environment misses the patchset's target and requirements."""
    problems = [target_problem(ps, dist)]
    for text in ps.requires_text:
        facts = ps.requirement(text)
        if facts[2] and not marker_holds(text, env.markers):
            continue
        found = env.find(facts[0])
        problems.append(_version_problem(facts, text, found.version if found else None))
    return [p for p in problems if p]


def constraint_problems(ps: Patchset, env: Environment) -> list[str]:
    """Every ``[[constraints]]`` pin the environment breaks (an absent distribution breaks
    none: a constraint limits what is installed, as ``pip install -c`` reads it)."""
    found = []
    for pin, _ in ps.constraints:
        name, _, marker, _ = ps.requirement(pin, "constraint")
        dist = env.find(name)
        if dist is None:
            continue
        if marker and not marker_holds(pin, env.markers):
            continue
        if not requirement_admits(pin, dist.version):
            found.append(f"constraint {pin} unmet: found {dist.name} {dist.version}")
    return found


def expected_sha(state: State, f: FileState, others: list[State]) -> str | None:
    """What ``f`` should hold now: what ``state`` wrote, or, where another applied patchset
    started from exactly those bytes (two patchsets stacked on one file), what that one wrote."""
    sha, seen = f.written_sha, {state.patchset}
    while sha is not None:
        on_top = next(
            (
                (o, g)
                for o in others
                if o.patchset not in seen
                for g in o.files
                if g.path == f.path and g.original_sha == sha
            ),
            None,
        )
        if on_top is None:
            break
        seen.add(on_top[0].patchset)
        sha = on_top[1].written_sha
    return sha


def state_problems(dist: Dist, state: State) -> list[str]:
    """Files that no longer hold the bytes compatkit wrote (or a patchset stacked on top)."""
    problems = []
    others = [s for s in states_of(dist) if s.patchset != state.patchset]
    for f in state.files:
        current = dist.hash(f.path)  # streamed: a patched file may be a large one
        if current == expected_sha(state, f, others):
            continue
        if current is None:
            problems.append(f"{f.path} is missing")
        elif f.written_sha is None:
            problems.append(f"{f.path} is back, though {state.patchset} deleted it")
        elif current == f.original_sha:
            problems.append(f"{f.path} is back to its original bytes (reinstalled?)")
        else:
            problems.append(f"{f.path} was edited after compatkit patched it")
    return problems


class PatchStatus(Value):
    __slots__ = ("id", "status", "detail", "textual", "startup")

    def __init__(
        self, id: str, status: PatchState, detail: str = "", textual: DiffState | None = None
    ) -> None:
        self.id = id
        self.status = status  # APPLIED, NOT_APPLIED, DRIFTED, EXCLUDED, OUTDATED, NOT_APPLICABLE
        self.detail = detail
        self.textual = textual  # not applied: APPLIES, PRESENT or CONFLICT on the files here
        self.startup: list[dict[str, object]] = []  # what startup_code.touches() says


def _drifted_ids(dist: Dist, state: State) -> set[str]:
    drifted: set[str] = set()
    others = [s for s in states_of(dist) if s.patchset != state.patchset]
    for f in state.files:
        if dist.hash(f.path) != expected_sha(state, f, others):
            drifted.update(f.patches)
    return drifted


# A source above this is not compiled to check it: the compiler holds many times the size of
# a source of short lines (a generated table; docs/reliability.md, 3f); the text check still
# runs.
COMPILE_LIMIT = 1 << 20


def _uncompilable(contents: dict[str, bytes | None], files: tuple[FileDiff, ...]) -> str | None:
    """The first patched Python file that no longer compiles (a context match is not enough:
    a patch can land where upstream already made the same change, and repeat it); one over
    :data:`COMPILE_LIMIT` is not compiled."""
    for fd in files:
        data = contents.get(fd.path)
        if fd.path.endswith(".py") and data is not None and len(data) <= COMPILE_LIMIT:
            question = sha256(data).hexdigest()
            if not answers.remember("compiles", question, partial(_compiles, data)):
                return fd.path
    return None


def _compiles(source: bytes) -> bool:
    try:
        compile(source, "<patched>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def textual_status(ps: Patchset, dist: Dist) -> list[PatchStatus]:
    """Try every patch on the current files: applies, already present, or conflicts."""
    from compatkit.model.results import DiffState, PatchState  # the states: not apply's

    ps.bind_names(dist.files.is_file)
    paths = {path for p in ps.patches for fd in p.files for path in fd.paths}
    contents = {path: dist.read(path) for path in paths}
    out = []
    for patch in ps.patches:
        pairs = [(patch.id, patch.files)]
        try:
            result = apply_series(contents, pairs)
            broken = _uncompilable(result.contents, patch.files)
            if broken:
                detail = f"conflict: applies as text, but {broken} no longer compiles"
                out.append(
                    PatchStatus(patch.id, PatchState.NOT_APPLIED, detail, DiffState.CONFLICT)
                )
                continue
            contents = result.contents
            moved = [o for offs in result.offsets[patch.id].values() for o in offs if o]
            detail = f"applies, offset {moved[0]:+d}" if moved else "applies cleanly"
            textual = DiffState.APPLIES
        except SeriesConflict as exc:
            try:
                apply_series(contents, pairs, reverse=True)
                detail, textual = "its change is already present", DiffState.PRESENT
            except SeriesConflict:
                detail, textual = f"conflict: {exc.mismatch.message}", DiffState.CONFLICT
        out.append(PatchStatus(patch.id, PatchState.NOT_APPLIED, detail, textual))
    return out


def _mark_startup(ps: Patchset, statuses: list[PatchStatus]) -> list[PatchStatus]:
    """Say which patches touch start-up code; one that would apply but is undeclared is
    refused, as ``apply`` refuses it."""
    from compatkit.model.results import DiffState, PatchState  # the states: not apply's

    for s, patch in zip(statuses, ps.patches, strict=True):
        s.startup = startup_code.touches(ps, patch)
        if not s.startup:
            continue
        files = startup_code.files(patch)
        refused = [startup_code.reason(p, k) for p, k in files if p not in ps.startup_code]
        if refused and s.status is PatchState.NOT_APPLIED and s.textual is DiffState.APPLIES:
            s.detail = "refused: " + "; ".join(refused)
        else:
            s.detail = "; ".join(filter(None, [s.detail, startup_code.marker(ps, patch)]))
    return statuses


def patch_statuses(
    ps: Patchset, env: Environment, dist: Dist | None, state: State | None
) -> list[PatchStatus]:
    return _mark_startup(ps, _statuses(ps, env, dist, state))


def _statuses(
    ps: Patchset, env: Environment, dist: Dist | None, state: State | None
) -> list[PatchStatus]:
    from compatkit.model.results import PatchState  # the states: not apply's

    if state is None:
        mismatch = target_problem(ps, dist)
        problems = [mismatch] if mismatch else requirement_problems(ps, env, dist)
        if dist is None or problems:
            return [PatchStatus(p.id, PatchState.NOT_APPLICABLE, problems[0]) for p in ps.patches]
        return textual_status(ps, dist)
    assert dist is not None
    drifted = _drifted_ids(dist, state)
    outdated = state.digest != ps.digest
    out = []
    for patch in ps.patches:
        if patch.id in state.excluded:
            out.append(PatchStatus(patch.id, PatchState.EXCLUDED, "left out with --exclude"))
        elif patch.id not in state.applied:
            out.append(PatchStatus(patch.id, PatchState.NOT_APPLIED, "not in the applied version"))
        elif patch.id in drifted:
            out.append(PatchStatus(patch.id, PatchState.DRIFTED, "a file changed after the apply"))
        elif outdated:
            again = "build the wheel again" if state.built_in else "re-run apply"
            detail = f"{'built in' if state.built_in else 'applied'} {state.version}; {again}"
            out.append(PatchStatus(patch.id, PatchState.OUTDATED, detail))
        elif state.built_in:
            detail = f"by the installed wheel {dist.name} {dist.version}"
            out.append(PatchStatus(patch.id, PatchState.BUILT_IN, detail))
        else:
            offs = [o for per in state.offsets.get(patch.id, {}).values() for o in per if o]
            detail = f"offset {offs[0]:+d}" if offs else ""
            out.append(PatchStatus(patch.id, PatchState.APPLIED, detail))
    return out
