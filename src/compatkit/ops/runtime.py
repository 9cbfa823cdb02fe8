"""Runtime mode: patchsets applied at import time, nothing in site-packages written.

``exec`` prepares a runtime directory in the cache (``$COMPATKIT_CACHE_DIR/runtime/<key>/``,
keyed by everything it holds, so a re-run with nothing changed writes nothing) and runs a
command with it first on ``PYTHONPATH``; ``runtime install`` writes one where the user says.
``check`` is what ``status --runtime`` and ``verify --runtime`` report: would the hook serve
each patch, or refuse it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from compatkit import cache
from compatkit.checks import PatchStatus
from compatkit.errors import CompatkitError
from compatkit.registry import Registry
from compatkit.results import Status
from compatkit.runtime import install as disk
from compatkit.runtime.prepare import prepare
from compatkit.target import Environment
from compatkit.value import Value

TYPE_CHECKING = False  # not typing's: `import typing` moves bench P1 explain 3.95× → 4.24×
if TYPE_CHECKING:
    from typing import Any


def exec_dir(registry: Registry, env: Environment, names: list[str]) -> Path:
    """The runtime directory for ``names`` in ``env``, written to the cache if new."""
    prep = prepare(registry, env, names)
    root = cache.base_dir() / "runtime" / prep.key
    try:
        if disk.read_manifest(root).get("key") == prep.key:
            return root
    except CompatkitError:
        pass
    try:
        root.mkdir(parents=True, exist_ok=True)
        disk.write(root, prep)
    except OSError as exc:
        raise CompatkitError(
            f"cannot write the runtime directory {root} ({exc.strerror}); "
            "set COMPATKIT_CACHE_DIR to a writable folder"
        ) from None
    return root


def child_environ(root: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: ours) with ``root`` first on PYTHONPATH."""
    environ = dict(os.environ if base is None else base)
    rest = environ.get("PYTHONPATH")
    environ["PYTHONPATH"] = os.pathsep.join([str(root), *([rest] if rest else [])])
    return environ


class Installed(Value):
    __slots__ = ("root", "patchsets", "pth")

    def __init__(self, root: Path, patchsets: list[str], pth: Path | None) -> None:
        self.root, self.patchsets, self.pth = root, patchsets, pth


def install(
    registry: Registry, env: Environment, names: list[str], root: Path, pth: bool
) -> Installed:
    prep = prepare(registry, env, names)
    root = root.resolve()
    try:
        root.mkdir(parents=True, exist_ok=True)
        written = disk.write(root, prep, Path(env.paths[0]) if pth else None)
    except OSError as exc:
        raise CompatkitError(f"cannot write {root} ({exc.strerror})") from None
    return Installed(root, [ps.name for ps in prep.patchsets], written)


def uninstall(root: Path) -> list[str]:
    try:
        return disk.remove(root.resolve())
    except OSError as exc:
        raise CompatkitError(f"cannot remove the runtime in {root} ({exc.strerror})") from None


def _file_problem(root: Path, key: str, f: dict[str, Any]) -> str | None:
    """Why the hook would refuse this file (None: it serves it)."""
    origin, original = str(f["origin"]), f["original"]
    try:
        current: str | None = hashlib.sha256(Path(origin).read_bytes()).hexdigest()
    except FileNotFoundError:
        current = None
    if current != original:
        if original is None:
            return f"{origin} exists, though a patch creates it"
        return f"{origin} is missing" if current is None else f"{origin} changed since prepare"
    if f["patched"] is not None:
        src = root / disk.DATA / "src" / key / str(f["relpath"])
        data = src.read_bytes() if src.is_file() else b""
        if hashlib.sha256(data).hexdigest() != f["patched"]:
            return f"{src}: not the patched source compatkit wrote"
    return None


class RuntimeCheck(Value):
    """One patchset of a runtime directory: each patch's status, every problem found."""

    __slots__ = ("name", "version", "statuses", "problems")

    def __init__(
        self, name: str, version: str, statuses: list[PatchStatus], problems: list[str]
    ) -> None:
        self.name, self.version, self.statuses, self.problems = name, version, statuses, problems


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
            statuses.append(PatchStatus(patch_id, Status.DRIFTED, (bad or problems)[0]))
        else:
            statuses.append(PatchStatus(patch_id, Status.RUNTIME, f"served from {root}"))
    unique = sorted(set(problems), key=problems.index)
    return RuntimeCheck(name, str(ps["version"]), statuses, unique)


def check(registry: Registry, root: Path) -> list[RuntimeCheck]:
    """What the hook in ``root`` would do with each patch: serve it, or refuse it (and why)."""
    root = root.resolve()
    manifest = disk.read_manifest(root)
    try:
        files: list[dict[str, Any]] = manifest["files"]
        broken = {f["relpath"]: _file_problem(root, str(manifest["key"]), f) for f in files}
        hook = root / f"{manifest['hook']}.py"
        missing = [] if hook.is_file() else [f"{hook} is missing"]
        return [
            _check_set(registry, root, ps, files, broken, missing) for ps in manifest["patchsets"]
        ]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        where = root / disk.DATA / "manifest.json"
        raise CompatkitError(f"{where}: malformed manifest ({type(exc).__name__}: {exc})") from None
