"""Classify each patch against a release: upstream, still needed, needs port, or removed.

Two oracles, reported side by side, because they can disagree:

- behavioural: the patch's smoke test on the *unpatched* release (pass: the fix is upstream);
- textual: the patch applies forward, is already present (applies in reverse), or conflicts.

A patch is **upstream** when its smoke test passes unpatched, **removed upstream** when it
fails and every file the diff changes is gone from the release (the code was deleted: the patch
can retire, there is nothing to port to), **needs port** when it fails and the diff conflicts
with files that are still there, and **still needed** when it fails and the diff would still
apply. A removed patch's reason is its smoke test's own first error (the exception line), never
"blocked: needs patch-N": the blocker is that the code is gone.

When the release cannot be installed with its dependencies (the resolver finds no solution:
vLLM 0.34.0 pins a flashinfer-python the index does not serve), the smoke tests cannot run:
the release alone is installed without its dependencies and each patch is classified from its
files only (:func:`classify_files`: applies, already present, conflict, files gone), with the
resolver's first reason for the smoke tests that did not run.

The release to check may be named without a version (``DIST`` or ``DIST==latest``): it is then
the newest release on the index (:func:`against_newest`), which the weekly CI job checks every
bundled patchset against.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet

from compatkit.delivery.wheels import WheelSource
from compatkit.env.checks import requirement_problems, target_problem, textual_status
from compatkit.env.target import Dist, Environment
from compatkit.errors import CompatkitError, UsageError
from compatkit.model.names import normalize_name
from compatkit.model.patchset import Patch, Patchset
from compatkit.model.progress import NONE
from compatkit.model.results import DiffState, SmokeState, UpstreamState
from compatkit.ops.smoke import require_pytest, run_smoke, smoke_patches
from compatkit.value import Value


class Verdict(Value):
    """One patch against upstream: ``textual`` says how its diff applies ("applies cleanly",
    "applies, offset N", "its change is already present", "conflict"); ``error`` is the smoke
    test's own first failure (the exception line), if it failed."""

    __slots__ = ("id", "state", "smoke", "textual", "reason", "error", "files")

    def __init__(
        self,
        id: str,
        state: UpstreamState,
        smoke: SmokeState,
        textual: str,
        reason: str = "",
        error: str = "",
        files: str = "",
    ) -> None:
        self.id, self.state, self.smoke, self.textual = id, state, smoke, textual
        self.reason, self.error = reason, error
        self.files = files  # the file verdict: applies, already present, conflict, files gone


FILES_GONE = "files gone"


def classify(ps: Patchset, env: Environment) -> list[Verdict]:
    """Classify every patch of ``ps`` against what is installed (and unpatched) in ``env``."""
    dist = env.require(ps.distribution)
    texts = {s.id: s for s in textual_status(ps, dist)}
    _, smoke = run_smoke(ps, env, smoke_patches(ps, []), show_output=False)
    verdicts = []
    for patch in ps.patches:
        result, text = smoke[patch.id], texts[patch.id]
        reason, detail = result.reason, text.detail
        gone = removed_files(patch, dist)
        if result.verdict is SmokeState.PASS:
            state = UpstreamState.UPSTREAM
        elif gone:
            state, reason = UpstreamState.REMOVED_UPSTREAM, result.error
            detail = f"{', '.join(gone)} no longer in {dist.name} {dist.version}"
        elif text.textual is DiffState.CONFLICT:
            state = UpstreamState.NEEDS_PORT
        else:
            state = UpstreamState.STILL_NEEDED
        error = "" if result.verdict is SmokeState.PASS else result.error
        files = FILES_GONE if gone else str(text.textual)
        verdicts.append(Verdict(patch.id, state, result.verdict, detail, reason, error, files))
    return verdicts


def classify_files(ps: Patchset, dist: Dist, why: str) -> list[Verdict]:
    """Classify every patch of ``ps`` from ``dist``'s files alone, its smoke test not run
    (``why``): files gone (removed upstream), already present (upstream), conflict (needs
    port), applies (still needed)."""
    texts = {s.id: s for s in textual_status(ps, dist)}
    by_text = {
        DiffState.PRESENT: UpstreamState.UPSTREAM,
        DiffState.CONFLICT: UpstreamState.NEEDS_PORT,
        DiffState.APPLIES: UpstreamState.STILL_NEEDED,
    }
    verdicts = []
    for patch in ps.patches:
        text, gone = texts[patch.id], removed_files(patch, dist)
        textual = text.textual or DiffState.CONFLICT
        state, files, detail = by_text[textual], str(textual), text.detail
        if gone:
            state, files = UpstreamState.REMOVED_UPSTREAM, FILES_GONE
            detail = f"{', '.join(gone)} no longer in {dist.name} {dist.version}"
        verdicts.append(Verdict(patch.id, state, SmokeState.NOT_RUN, detail, why, "", files))
    return verdicts


LATEST = "==latest"


def against_newest(against: str, source: WheelSource | None = None) -> Requirement:
    """``DIST==VERSION`` as given; ``DIST`` or ``DIST==latest`` pinned to the newest release
    of DIST on the index (and in ``COMPATKIT_WHEEL_DIR``): a final release, or a pre-release
    where there is none, as an installer picks one (packaging's default filter)."""
    text = against.strip()
    latest = text.replace(" ", "").lower().endswith(LATEST)
    if latest:
        text = text[: text.lower().rindex("==")]  # "==latest" is not PEP 440: strip it
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise UsageError(f"--target {against!r}: {str(exc).splitlines()[0]}") from None
    if req.url or (latest and req.specifier):
        raise UsageError(f"--target {against!r}: 'latest' takes a bare distribution name")
    if req.specifier:
        return req
    src = source or WheelSource.configure()
    found = list(SpecifierSet().filter(src.versions(req.name)))
    if not found:
        where = src.index_url if src.index else "the wheel directories"
        raise CompatkitError(f"no release of {req.name} found in {where}")
    req.name, req.specifier = normalize_name(req.name), SpecifierSet(f"=={max(found)}")
    return req


def removed_files(patch: Patch, dist: Dist) -> list[str]:
    """The files ``patch`` changes or deletes, when every one of them is gone (else [])."""
    patch.bind_names(dist.files.is_file)  # as apply and textual_status bind them
    paths = [fd.path for fd in patch.files if fd.kind != "create"]
    if not paths or any(dist.files.lexists(p) for p in paths):
        return []
    return paths


def install_error(stderr: str) -> str:
    """The installer's failure in one line: a resolver conflict's sentence naming the
    conflicting pair ("Because ... we can conclude that ..."), else the last line.

    >>> install_error("x No solution found:\\n  -> Because a==1 depends on b<2 and you\\n"
    ...     "     require b>=2, we can conclude that it is unsatisfiable.\\n")
    'Because a==1 depends on b<2 and you require b>=2, we can conclude that it is unsatisfiable.'
    """
    text = " ".join(stderr.split())
    at = text.find("Because ")
    if at >= 0:
        end = text.find("unsatisfiable.", at)
        return text[at : end + len("unsatisfiable.")] if end >= 0 else text[at:][:400]
    if "ResolutionImpossible" in text or "conflict is caused by" in text:  # pip
        at = text.find("The conflict is caused by")
        return text[at:][:400] if at >= 0 else text[-400:]
    return (stderr.strip().splitlines() or ["install failed"])[-1].strip()


def first_reason(reason: str) -> str:
    """The resolver's first sentence: what it concluded first, the rest follows from it.

    >>> first_reason("Because b was not found and a==1 depends on b, we can conclude that "
    ...     "a==1 cannot be used. And because you require a==1, we can conclude that it is "
    ...     "unsatisfiable.")
    'Because b was not found and a==1 depends on b, we can conclude that a==1 cannot be used.'
    """
    found = re.match(r"Because .*?we can conclude that .*?\.(?=\s|$)", reason)
    return found.group(0) if found else reason


class InstallError(CompatkitError):
    """The throw-away environment cannot be installed; ``reason``: the installer's, one line."""

    def __init__(self, packages: list[str], reason: str) -> None:
        super().__init__(f"cannot install {' '.join(packages)}: {reason}")
        self.reason = reason


def throwaway_env(
    packages: list[str], folder: Path, wheels: WheelSource | None = None, deps: bool = True
) -> Environment:
    """A new venv in ``folder`` with ``packages`` installed (from ``wheels``' folders first;
    not from the index when it is off: ``--offline``), without their dependencies when not
    ``deps``. ``wheels``' reporter is told its two steps, the venv and the install (each one
    command: no total of its own). Raises :class:`InstallError`."""
    uv = shutil.which("uv")
    python = folder / "bin" / "python"
    links = [a for d in (wheels.wheel_dirs if wheels else ()) for a in ("--find-links", str(d))]
    offline = wheels is not None and not wheels.index
    reporter = wheels.reporter if wheels is not None else NONE
    with reporter.task("creating a throw-away venv", total=2) as task:
        if uv:
            subprocess.run([uv, "venv", "-q", "-p", sys.executable, str(folder)], check=True)
            cmd = [uv, "pip", "install", "-q", "--python", str(python), *links]
            cmd += ["--offline"] if offline else []
        else:
            subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
            cmd = [str(python), "-m", "pip", "install", "-q", *links]
            cmd += ["--no-index"] if offline else []
        cmd += [*([] if deps else ["--no-deps"]), *packages]
        task.advance()
        task.describe(f"installing {' '.join(packages)}")
        proc = subprocess.run(cmd, capture_output=True, text=True)
        task.advance()
    if proc.returncode != 0:
        raise InstallError(packages, install_error(proc.stderr))
    return Environment.for_python(str(python))


def check_release(
    ps: Patchset, target: Environment, req: Requirement
) -> tuple[Dist, list[str], list[Verdict]]:
    """Classify ``ps`` against the release ``req`` installed in ``target``: the installed
    distribution, the patchset's requirements it does not meet (checked, never installed),
    and each patch's verdict."""
    require_pytest(target, ps)
    dist = target.require(ps.distribution)
    if not req.specifier.contains(dist.version, prereleases=True):
        raise CompatkitError(f"the target has {dist.name} {dist.version}, not {req}")
    mismatch = target_problem(ps, dist)  # an older target release: expected here
    unmet = [p for p in requirement_problems(ps, target, dist) if p != mismatch]
    return dist, unmet, classify(ps, target)


class UpstreamResult(Value):
    """``compatkit upstream``'s result: the release checked, the patchset's requirements it
    does not meet (checked, never installed), each patch's verdict; ``smoke_not_run``: why the
    smoke tests could not run ("" when they ran), the verdicts then from the files only."""

    __slots__ = ("patchset", "dist", "unmet", "verdicts", "smoke_not_run")

    def __init__(
        self,
        patchset: str,
        dist: Dist,
        unmet: list[str],
        verdicts: list[Verdict],
        smoke_not_run: str = "",
    ) -> None:
        self.patchset, self.dist, self.unmet, self.verdicts = patchset, dist, unmet, verdicts
        self.smoke_not_run = smoke_not_run

    def to_json(self) -> dict[str, object]:
        return {
            "ok": True,
            "patchset": self.patchset,
            "target": f"{self.dist.name}=={self.dist.version}",
            "unmet_requirements": self.unmet,
            "smoke_tests": {"ran": not self.smoke_not_run, "reason": self.smoke_not_run},
            "patches": [v.as_dict() for v in self.verdicts],
        }


def target_release(ps: Patchset, target: str, wheels: WheelSource) -> Requirement:
    """``--target``'s release of ``ps``'s distribution (:func:`against_newest`)."""
    try:
        named = normalize_name(Requirement(target.split("==")[0]).name)
    except InvalidRequirement as exc:
        raise UsageError(f"--target {target!r}: {str(exc).splitlines()[0]}") from None
    if named != ps.distribution:
        raise UsageError(f"--target names {named}, but {ps.name} targets {ps.distribution}")
    return against_newest(target, wheels)


def upstream(
    ps: Patchset,
    env: Environment | None,
    req: Requirement,
    extra: list[str],
    wheels: WheelSource,
    progress: Callable[[str], None],
) -> UpstreamResult:
    """Classify ``ps`` against the release ``req``: in ``env`` (``--python``), else in a
    throw-away venv with the release, its own dependencies, ``extra`` (``--with``) and pytest;
    the patchset's requirements are checked against it afterwards, never installed beside it.
    When that venv cannot be installed (and no ``--with`` asked for more), the release alone
    (no dependencies) is classified from its files (:func:`classify_files`)."""
    with tempfile.TemporaryDirectory(prefix="compatkit-upstream-") as tmp:
        if env is not None:
            return UpstreamResult(ps.name, *check_release(ps, env, req))
        packages = [str(req), *extra, "pytest"]
        progress(f"building a throw-away environment: {' '.join(packages)}")
        try:
            env = throwaway_env(packages, Path(tmp) / "venv", wheels)
        except InstallError as exc:
            if extra:  # the user's --with may be what conflicts: theirs to change
                raise
            why = f"cannot install {' '.join(packages)}: {first_reason(exc.reason)}"
            progress(f"{why}; installing {req} alone, without its dependencies, to read its files")
            try:
                bare = throwaway_env([str(req)], Path(tmp) / "bare", wheels, deps=False)
            except InstallError:
                raise exc from None  # the release itself is not there: the first error says why
            dist = bare.require(ps.distribution)
            return UpstreamResult(ps.name, dist, [], classify_files(ps, dist, why), why)
        return UpstreamResult(ps.name, *check_release(ps, env, req))
