"""What runtime mode will serve: the patched sources of every module the patchsets touch.

Computed in compatkit's process, before the target runs: the same checks as ``apply`` (target
version and requirements), the same engine (``engine.apply_series``, exact context, no fuzz),
on the installed files as they are, read only (no lock, no journal: site-packages may be
read-only). The import hook (:mod:`compatkit.runtime.hook`) then only compares hashes.

>>> module_name("speculators/data_generation/__init__.py")
'speculators.data_generation'
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from compatkit.engine.hunks import SeriesConflict, apply_series
from compatkit.env.checks import _uncompilable, requirement_problems
from compatkit.env.state import load_state
from compatkit.env.target import Dist, Environment
from compatkit.errors import CompatkitError, UsageError
from compatkit.load.registry import Registry
from compatkit.model import startup_code
from compatkit.model.patchset import Patchset
from compatkit.model.records import hash_bytes
from compatkit.runtime.startfiles import BOOT
from compatkit.value import Value

HOOK_SOURCE = Path(__file__).with_name("hook.py")


class RuntimeFile(Value):
    """One module file: where it is installed, what it held, what runtime mode serves."""

    __slots__ = ("relpath", "module", "origin", "original", "patched", "patches")

    def __init__(
        self,
        relpath: str,
        module: str,
        origin: str,
        original: bytes | None,  # None: a patch creates it
        patched: bytes | None,  # None: a patch deletes it
        patches: tuple[str, ...],  # "patchset:patch-id" of every patch touching it
    ) -> None:
        self.relpath, self.module, self.origin = relpath, module, origin
        self.original, self.patched, self.patches = original, patched, patches

    @property
    def package(self) -> bool:
        return self.relpath.endswith("/__init__.py")


class PreparedSet(Value):
    """One patchset as prepared: its identity and what it was checked against."""

    __slots__ = ("name", "version", "digest", "ids", "dist", "guards")

    def __init__(
        self,
        name: str,
        version: str,
        digest: str,
        ids: list[str],
        dist: Dist,
        guards: list[tuple[str, str]],
    ) -> None:
        self.name, self.version, self.digest, self.ids = name, version, digest, ids
        self.dist = dist
        self.guards = guards  # (.dist-info folder, "name version") that must stay installed


class Prepared(Value):
    __slots__ = ("patchsets", "files", "python", "pyc_tag")

    def __init__(
        self,
        patchsets: list[PreparedSet],
        files: list[RuntimeFile],
        python: str,
        pyc_tag: str | None = None,  # the target's cache tag, if our bytecode is its own
    ) -> None:
        self.patchsets, self.files, self.python = patchsets, files, python
        self.pyc_tag = pyc_tag

    @property
    def key(self) -> str:
        """A hash of everything the runtime directory holds (the hook's code included)."""
        h = hashlib.sha256(HOOK_SOURCE.read_bytes() + BOOT.encode())
        for ps in self.patchsets:
            h.update(f"\0{ps.name}\0{ps.digest}\0{ps.dist.root}".encode())
        for f in self.files:
            for part in (f.relpath, f.origin, f.original, f.patched):
                h.update(b"\0" + (part.encode() if isinstance(part, str) else part or b"-"))
        return h.hexdigest()[:20]


def module_name(relpath: str) -> str:
    parts = relpath[: -len(".py")].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _check_paths(ps: Patchset) -> None:
    """Runtime mode serves Python modules only; start-up code and data files are refused."""
    for patch in ps.patches:
        for fd in patch.files:
            if fd.source is not None:
                raise CompatkitError(
                    f"{ps.name}: {patch.id} {fd.kind}s {fd.source} to {fd.path}, which an "
                    "import hook cannot do; use compatkit apply"
                )
            if startup_code.is_startup_path(fd.path):
                raise CompatkitError(
                    f"{ps.name}: {patch.id} touches start-up code ({fd.path}), "
                    "which an import hook cannot patch; use compatkit apply"
                )
            if not fd.path.endswith(".py") or not all(p.isidentifier() for p in _parts(fd.path)):
                raise CompatkitError(
                    f"{ps.name}: {patch.id} changes {fd.path}, which is not an importable "
                    "module; runtime mode patches .py modules only (use compatkit apply)"
                )


def _parts(relpath: str) -> list[str]:
    return relpath[: -len(".py")].split("/")


def _fitting(ps: Patchset, env: Environment, force: bool) -> tuple[Dist, list[tuple[str, str]]]:
    """``ps``'s installed target and its guards; a misfit is refused unless ``force`` (as
    ``apply --force``: a version mismatch or an unmet requirement)."""
    dist = env.find(ps.distribution)
    problems = requirement_problems(ps, env, dist)
    if dist is None:  # which environment was looked at, and how to target another
        raise CompatkitError(f"{ps.name}: {problems[0]} in {env.describe()}{env.hint()}")
    if problems and not force:
        raise CompatkitError(f"{ps.name} does not fit this environment: {problems[0]}")
    if load_state(dist, ps.name) is not None:
        raise CompatkitError(
            f"{ps.name} is applied to the installed files already (compatkit apply); "
            f"revert it first, or leave runtime mode out"
        )
    guards = [(str(dist.dist_info), f"{dist.name} {dist.version}")]
    for req in ps.requires:
        if req.marker is None or req.marker.evaluate(env.markers):
            found = env.find(req.name)
            if found is not None:
                guards.append((str(found.dist_info), f"{found.name} {found.version}"))
    return dist, guards


def _check_record(dist: Dist, originals: dict[str, bytes | None]) -> None:
    """As ``apply`` without ``--force``: every file to patch still matches its RECORD hash."""
    record = dist.read_record()
    edited = [
        path
        for path, data in originals.items()
        if data is not None
        and (row := record.get(path)) is not None
        and row.hash
        and hash_bytes(data) != row.hash
    ]
    if edited:
        raise CompatkitError(
            f"{dist.name}: {edited[0]} does not match its RECORD hash (edited after install?); "
            "reinstall it, or pass --force to patch it as it is",
            [f"{path} does not match its RECORD hash" for path in edited[1:]],
        )


def _patch_dist(dist: Dist, sets: list[Patchset], force: bool) -> list[RuntimeFile]:
    """The series of every patchset on ``dist``, in the order given, on its files as they are."""
    for ps in sets:
        ps.bind_names(dist.files.is_file)
    paths = sorted({path for ps in sets for p in ps.patches for fd in p.files for path in fd.paths})
    originals = {path: dist.read(path) for path in paths}
    if not force:
        _check_record(dist, originals)
    series = [(f"{ps.name}:{p.id}", p.files) for ps in sets for p in ps.patches]
    try:
        result = apply_series(originals, series)
    except SeriesConflict as exc:
        raise CompatkitError(
            f"{exc.message.replace(':', ' ', 1)}; runtime mode refuses it, as apply would"
        ) from None
    broken = _uncompilable(result.contents, tuple(fd for _, files in series for fd in files))
    if broken:
        raise CompatkitError(f"{broken} no longer compiles once patched; runtime mode refuses it")
    files = []
    for path in paths:
        origin, original = os.path.join(str(dist.root), path), originals[path]
        patches = tuple(result.touched_by[path])
        files.append(
            RuntimeFile(path, module_name(path), origin, original, result.contents[path], patches)
        )
    return files


def prepare(
    registry: Registry, env: Environment, names: list[str], force: bool = False
) -> Prepared:
    """Check and apply ``names`` in memory for ``env``; raise CompatkitError on any misfit
    (``force``: as ``apply --force``, a version mismatch or files that differ from RECORD)."""
    if len(set(names)) != len(names):
        raise UsageError(f"a patchset is named twice: {' '.join(names)}")
    _check_interpreter(env)
    sets: list[PreparedSet] = []
    by_dist: dict[Path, tuple[Dist, list[Patchset]]] = {}
    for name in names:
        ps = registry.get(name)
        _check_paths(ps)
        dist, guards = _fitting(ps, env, force)
        sets.append(PreparedSet(ps.name, ps.version, ps.digest, ps.ids, dist, guards))
        by_dist.setdefault(dist.dist_info, (dist, []))[1].append(ps)
    files = [f for dist, group in by_dist.values() for f in _patch_dist(dist, group, force)]
    clash = sorted({f.module for f in files if sum(g.module == f.module for g in files) > 1})
    if clash:
        raise CompatkitError(f"two distributions patch the same module: {', '.join(clash)}")
    return Prepared(sets, files, env.executable, _same_bytecode(env))


def _check_interpreter(env: Environment) -> None:
    """Refuse a target the hook was never checked against (``hook.KNOWN``), before anything
    is written: there its start-up file might not run at all (PEP 829: from 3.18 ``site``
    ignores a ``.pth`` file's import lines), and nothing would say so."""
    from compatkit.runtime.hook import unknown_interpreter

    name = env.markers.get("implementation_name", "")
    full = env.markers.get("python_full_version", "")
    version = [int(p) for p in full.split(".")[:3] if p.isdigit()]
    why = (
        unknown_interpreter(name, version)
        if len(version) >= 2
        else f"Python {full!r} is unreadable"
    )
    if why:
        raise CompatkitError(
            f"{env.executable}: {why}; runtime mode cannot be used there (use compatkit "
            "apply, or a compatkit that knows this Python)"
        )


def _same_bytecode(env: Environment) -> str | None:
    """The target's cache tag if compatkit's interpreter writes the bytecode it reads (the same
    tag, both final releases: one magic number), so install can write the hook's pycs."""
    version = env.markers.get("python_full_version", "")
    ours = (
        sys.version_info.releaselevel == "final" and env.cache_tag == sys.implementation.cache_tag
    )
    return env.cache_tag if ours and version.replace(".", "").isdigit() else None


def sha(data: bytes | None) -> str | None:
    """The hex SHA-256 the hook compares (None: no file)."""
    return None if data is None else hashlib.sha256(data).hexdigest()
