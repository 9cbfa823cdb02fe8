"""Runtime mode: patchsets applied at import time, nothing in site-packages written.

``exec`` prepares a runtime directory in the cache (``$COMPATKIT_CACHE_DIR/runtime/<key>/``,
keyed by everything it holds, so a re-run with nothing changed writes nothing) and runs a
command with it first on ``PYTHONPATH``; ``runtime install`` writes one where the user says.
``check`` is what ``runtime status`` and ``runtime verify`` report: would the hook serve each
patch, or refuse it.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from compatkit import bounded
from compatkit.env.checks import PatchStatus
from compatkit.env.target import Environment
from compatkit.errors import CompatkitError, UsageError
from compatkit.load import cache
from compatkit.load.registry import Registry
from compatkit.model.results import PatchState
from compatkit.runtime import folder as trust
from compatkit.runtime import install as disk
from compatkit.runtime.integrity import damage, served, startup_problem
from compatkit.runtime.prepare import Prepared, prepare
from compatkit.value import Value

TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any


def _reusable(base: trust.Folder, key: str) -> bool:
    """Whether the cached folder ``key`` is there and whole. A damaged one is written again
    over itself (every file, atomically: a second exec writing it at once writes the same)."""
    if key not in base.names():
        return False
    with trust.Folder.open(base.root / key, whole=False) as folder:
        try:
            manifest = disk.manifest_in(folder)
            return manifest.get("key") == key and not damage(folder, manifest)
        except trust.Untrusted:
            raise  # refused: never reused, never written
        except (CompatkitError, KeyError, TypeError, AttributeError):
            return False  # no manifest (never finished), or a damaged one


def exec_dir(registry: Registry, env: Environment, names: list[str], force: bool = False) -> Path:
    """The runtime directory for ``names`` in ``env``, written to the cache if new or damaged."""
    prep = prepare(registry, env, names, force)
    base = Path(os.path.realpath(cache.base_dir())) / "runtime"  # links above it resolved
    try:
        with trust.Folder.create(base) as folder:
            if _reusable(folder, prep.key):
                return base / prep.key
        disk.write(base / prep.key, prep)
    except OSError as exc:
        raise CompatkitError(
            f"cannot write the runtime directory {base / prep.key} ({exc.strerror}); "
            "set COMPATKIT_CACHE_DIR to a writable folder"
        ) from None
    return base / prep.key


def child_environ(
    root: Path, base: dict[str, str] | None = None, python: str | None = None
) -> dict[str, str]:
    """``base`` (default: ours) with ``root`` first on PYTHONPATH; with ``python`` (the target
    interpreter), as a venv's activation leaves it: its folder first on PATH, and VIRTUAL_ENV
    naming the venv when it is one (a ``pyvenv.cfg`` above that folder)."""
    environ = dict(os.environ if base is None else base)
    rest = environ.get("PYTHONPATH")
    environ["PYTHONPATH"] = os.pathsep.join([str(root), *([rest] if rest else [])])
    if python is not None:
        folder = os.path.dirname(os.path.abspath(python))
        path = environ.get("PATH")
        environ["PATH"] = os.pathsep.join([folder, *([path] if path else [])])
        venv = os.path.dirname(folder)
        if os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
            environ["VIRTUAL_ENV"] = venv
    return environ


class ExecResult(Value):
    """``compatkit exec``'s result: the patchsets, the runtime directory, COMMAND's exit code."""

    __slots__ = ("patchsets", "root", "returncode")

    def __init__(self, patchsets: list[str], root: Path, returncode: int) -> None:
        self.patchsets, self.root, self.returncode = patchsets, root, returncode

    def to_json(self) -> dict[str, object]:
        return {
            "ok": self.returncode == 0,
            "patchsets": self.patchsets,
            "runtime": str(self.root),
            "returncode": self.returncode,
        }


class Installed(Value):
    __slots__ = ("root", "patchsets", "pth")

    def __init__(self, root: Path, patchsets: list[str], pth: Path | None) -> None:
        self.root, self.patchsets, self.pth = root, patchsets, pth

    def to_json(self) -> dict[str, object]:
        pth = None if self.pth is None else str(self.pth)
        return {"ok": True, "dir": str(self.root), "patchsets": self.patchsets, "pth": pth}


class Uninstalled(Value):
    """What ``runtime uninstall`` removed from ``root``: files and folders, by path."""

    __slots__ = ("root", "removed")

    def __init__(self, root: Path, removed: list[str]) -> None:
        self.root, self.removed = root, removed

    def to_json(self) -> dict[str, object]:
        return {"ok": True, "dir": str(self.root), "removed": self.removed}


def _refuse_site_packages(root: Path, env: Environment) -> None:
    for site in env.paths:
        site_path = Path(os.path.realpath(site))
        if root == site_path or site_path in root.parents:
            raise UsageError(
                f"--dir {root} is inside site-packages ({site}); runtime mode writes nothing "
                "there: choose a folder outside it, or use compatkit apply or compatkit wheel"
            )


def _active_roots(env: Environment) -> list[Path]:
    """Runtime folders a start of ``env`` would run: the ``.pth`` one, and PYTHONPATH's."""
    found = [Path(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    pth = Path(env.paths[0]) / f"{disk.PTH_NAME}.pth"
    with contextlib.suppress(OSError, UnicodeDecodeError, IndexError):
        found.append(Path(_head(pth).decode().splitlines()[1]))
    found = [Path(os.path.realpath(p)) for p in found]  # as install records them
    return [p for p in found if (p / disk.DATA / "manifest.json").is_file()]


def _refuse_conflicts(root: Path, prep: Prepared, env: Environment, pth: bool) -> None:
    """A module another active runtime folder patches, or a second ``--pth`` folder, is refused:
    one of the two would be dropped silently at start-up."""
    mine = {f.module for f in prep.files}
    pth_file = Path(env.paths[0]) / f"{disk.PTH_NAME}.pth"
    for other in _active_roots(env):
        if other == root:
            continue
        try:
            theirs = {str(f["module"]) for f in disk.read_manifest(other)["files"]}
        except (CompatkitError, KeyError, TypeError):
            continue
        both = sorted(mine & theirs)
        if both:
            raise CompatkitError(
                f"{', '.join(both)}: already patched by the active runtime folder {other}; "
                f"uninstall it first (compatkit runtime uninstall --dir {other})"
            )
    boot = pth_file.with_name(disk.BOOT)
    if pth and os.path.lexists(boot) and not _head(boot).startswith(disk.MARKER.encode()):
        raise CompatkitError(f"{boot} is not compatkit's; move it away, then install again")
    head = _head(pth_file)
    if pth and head.startswith(disk.MARKER.encode()) and f"\n{root}\n".encode() not in head:
        raise CompatkitError(
            f"{pth_file} already starts another runtime folder; uninstall that one first "
            f"(or delete {pth_file} and its .start file if the folder is gone)"
        )


def _head(path: Path) -> bytes:
    """The first 4 KiB of a start-up file (compatkit's are a few lines), through
    :func:`compatkit.bounded.read`: one that is a FIFO or a device raises
    :class:`compatkit.bounded.Refused`, naming it (Python itself would hang on it)."""
    try:
        return bounded.read(path, 4096, head=True)
    except OSError:
        return b""


def install(
    registry: Registry,
    env: Environment,
    names: list[str],
    root: Path,
    pth: bool,
) -> Installed:
    """Write the runtime folder ``root`` for ``names`` (``pth``: started by a ``.pth`` file),
    then start the target interpreter to prove it serves them; if not, take it back."""
    root = trust.resolve(root)
    _refuse_site_packages(root, env)
    prep = prepare(registry, env, names)
    _refuse_conflicts(root, prep, env, pth)
    blocked = startup_problem(env.executable, env.paths)  # before anything is written
    if blocked:
        raise CompatkitError(f"cannot prove the runtime hook works: {blocked}")
    try:
        written = disk.write(root, prep, Path(env.paths[0]) if pth else None)
        problems = served(root, disk.read_manifest(root), dict(os.environ), env.paths)
    except OSError as exc:
        raise CompatkitError(f"cannot write {root} ({exc.strerror})") from None
    if problems:
        disk.remove(root)  # it would refuse every start, or serve a module unpatched
        raise CompatkitError(
            f"the runtime hook in {root} does not work, so it was removed again: {problems[0]}",
            problems[1:],
        )
    return Installed(root, [ps.name for ps in prep.patchsets], written)


def uninstall(root: Path, env: Environment | None = None) -> Uninstalled:
    """Remove the runtime folder's files, and its ``.pth`` (the manifest's, or ``env``'s that
    names the folder: a folder that lost its manifest still has one)."""
    site = None if env is None else Path(env.paths[0])
    try:
        return Uninstalled(root, disk.remove(trust.resolve(root), site))
    except OSError as exc:
        raise CompatkitError(f"cannot remove the runtime in {root} ({exc.strerror})") from None


def _file_problem(folder: trust.Folder, key: str, f: dict[str, Any]) -> str | None:
    """Why the hook would refuse this file (None: it serves it)."""
    origin, original = str(f["origin"]), f["original"]
    try:
        current: str | None = bounded.sha256(origin).hex()  # streamed: any size
    except FileNotFoundError:
        current = None
    except bounded.Refused as exc:  # a FIFO, a device: never opened
        return f"{origin}: {exc.why}"
    if current != original:
        if original is None:
            return f"{origin} exists, though a patch creates it"
        return f"{origin} is missing" if current is None else f"{origin} changed since prepare"
    if f["patched"] is not None:
        src = f"{disk.DATA}/src/{key}/{f['relpath']}"
        try:
            patched = folder.sha256(src)  # streamed, through the folder's descriptors
        except (OSError, bounded.Refused):
            patched = None
        if patched != f["patched"]:
            return f"{folder.root / src}: not the patched source compatkit wrote"
    return None


class RuntimeCheck(Value):
    """One patchset of a runtime directory: each patch's status, every problem found."""

    __slots__ = ("name", "version", "statuses", "problems")

    def __init__(
        self, name: str, version: str, statuses: list[PatchStatus], problems: list[str]
    ) -> None:
        self.name, self.version, self.statuses, self.problems = name, version, statuses, problems

    @property
    def summary(self) -> str:
        return "applied (runtime)" if not self.problems else "drifted: the hook refuses it"


class RuntimeReport(Value):
    """``runtime status`` and ``runtime verify``: each patchset the folder ``root`` holds."""

    __slots__ = ("root", "checks")

    def __init__(self, root: Path, checks: list[RuntimeCheck]) -> None:
        self.root, self.checks = root, checks

    @property
    def problems(self) -> list[str]:
        return [p for c in self.checks for p in c.problems]

    @property
    def served(self) -> int:
        """How many patches the hook serves."""
        return sum(s.status is PatchState.RUNTIME for c in self.checks for s in c.statuses)

    def status_json(self) -> dict[str, object]:
        patchsets = [
            {
                "name": c.name,
                "version": c.version,
                "state": c.summary,
                "patches": [
                    {"id": s.id, "status": s.status, "detail": s.detail} for s in c.statuses
                ],
            }
            for c in self.checks
        ]
        return {"dir": str(self.root), "patchsets": patchsets}

    def verify_json(self) -> dict[str, object]:
        patchsets = [
            {"name": c.name, "version": c.version, "ok": not c.problems, "problems": c.problems}
            for c in self.checks
        ]
        problems = self.problems
        return {
            "ok": not problems,
            "dir": str(self.root),
            "patchsets": patchsets,
            "problems": problems,
        }


def _set_problems(registry: Registry, ps: dict[str, Any]) -> list[str]:
    name = str(ps["name"])
    found = [
        f"{what} is no longer installed" for info, what in ps["guards"] if not Path(info).is_dir()
    ]
    if name not in registry.names():
        found.append(f"{name} is not a known patchset any more")
    elif registry.get(name).digest != ps["digest"]:
        now = registry.get(name).version
        found.append(f"the patchset changed since it was prepared ({ps['version']} -> {now})")
    return found


def _check_set(
    registry: Registry,
    root: Path,
    ps: dict[str, Any],
    files: list[dict[str, Any]],
    broken: dict[str, str | None],
    missing: list[str],
) -> RuntimeCheck:
    name = str(ps["name"])
    problems = missing + _set_problems(registry, ps)
    statuses = []
    for patch_id in ps["patches"]:
        mine = [f for f in files if f"{name}:{patch_id}" in f["patches"]]
        bad = [p for f in mine if (p := broken[f["relpath"]])]
        problems += [f"{name} {patch_id}: {b}; the hook refuses to import it" for b in bad]
        if bad or problems:
            statuses.append(PatchStatus(patch_id, PatchState.DRIFTED, (bad or problems)[0]))
        else:
            statuses.append(PatchStatus(patch_id, PatchState.RUNTIME, f"served from {root}"))
    unique = sorted(set(problems), key=problems.index)
    return RuntimeCheck(name, str(ps["version"]), statuses, unique)


def check(registry: Registry, root: Path) -> RuntimeReport:
    """What the hook in ``root`` would do with each patch: serve it, or refuse it (and why).
    The folder is compared with its manifest, and a fresh interpreter asked (integrity)."""
    root = trust.resolve(root)
    with trust.Folder.open(root, whole=False) as folder:
        try:
            manifest = disk.manifest_in(folder)
        except UsageError:
            if not disk.leftovers(folder):
                raise
            raise CompatkitError(
                f"{root}: its manifest is missing, but its start-up code is there (a damaged "
                "runtime folder); run 'compatkit runtime install' again, or "
                f"'compatkit runtime uninstall --dir {root}'"
            ) from None
        try:
            files: list[dict[str, Any]] = manifest["files"]
            broken = {f["relpath"]: _file_problem(folder, str(manifest["key"]), f) for f in files}
            damaged = damage(folder, manifest)
            live = [] if damaged else served(root, manifest, dict(os.environ))
            found = damaged + [f"a fresh interpreter: {p}" for p in live]
            return RuntimeReport(
                root,
                [
                    _check_set(registry, root, ps, files, broken, found)
                    for ps in manifest["patchsets"]
                ],
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            where = root / disk.DATA / "manifest.json"
            raise CompatkitError(
                f"{where}: malformed manifest ({type(exc).__name__}: {exc})"
            ) from None
