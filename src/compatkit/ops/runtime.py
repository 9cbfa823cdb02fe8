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
from compatkit.errors import CompatkitError, UsageError
from compatkit.registry import Registry
from compatkit.results import Status
from compatkit.runtime import install as disk
from compatkit.runtime.prepare import prepare
from compatkit.target import Environment
from compatkit.value import Value


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


def _file_problem(root: Path, key: str, f: dict[str, object]) -> str | None:
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


def _set_problems(registry: Registry, ps: dict[str, object]) -> list[str]:
    name = str(ps["name"])
    found = [f"{what} is no longer installed" for info, what in ps["guards"] if not Path(info).is_dir()]  # type: ignore[attr-defined]
    if name not in registry.names():
        found.append(f"{name} is not a known patchset any more")
    elif registry.get(name).digest != ps["digest"]:
        found.append(f"the patchset changed since it was prepared ({ps['version']} -> "
                     f"{registry.get(name).version})")
    return found


def check(registry: Registry, root: Path) -> list[RuntimeCheck]:
    """What the hook in ``root`` would do with each patch: serve it, or refuse it (and why)."""
    root = root.resolve()
    manifest = disk.read_manifest(root)
    key = str(manifest["key"])
    files: list[dict[str, object]] = manifest["files"]  # type: ignore[assignment]
    broken = {str(f["relpath"]): _file_problem(root, key, f) for f in files}
    missing = [] if (root / f"{manifest['hook']}.py").is_file() else [f"{root}: the hook is missing"]
    out = []
    for ps in manifest["patchsets"]:  # type: ignore[attr-defined]
        name = str(ps["name"])
        problems = missing + _set_problems(registry, ps)
        statuses = []
        for patch_id in ps["patches"]:
            mine = [f for f in files if f"{name}:{patch_id}" in f["patches"]]  # type: ignore[operator]
            bad = [p for f in mine if (p := broken[str(f["relpath"])])]
            problems += [f"{name} {patch_id}: {b}; the hook refuses to import it" for b in bad]
            if bad or problems:
                detail = (bad or problems)[0]
                statuses.append(PatchStatus(patch_id, Status.DRIFTED, detail))
            else:
                statuses.append(PatchStatus(patch_id, Status.RUNTIME, f"served from {root}"))
        out.append(RuntimeCheck(name, str(ps["version"]), statuses, sorted(set(problems), key=problems.index)))
    return out


def require_names(names: list[str], verb: str) -> None:
    if not names:
        raise UsageError(f"{verb} needs at least one patchset name")
