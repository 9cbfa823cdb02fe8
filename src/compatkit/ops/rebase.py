"""Rebase a patchset (``compatkit rebase PATCHSET --target DIST==VERSION``): a new patchset for a
new upstream version.

The old patchset stays as it is. The new one (``NAME-VERSION`` unless ``--name``) targets
``==VERSION`` and holds each patch ported by :mod:`compatkit.engine.rebase`: rewritten when it
applies or merges, left out (moved to ``retired/``) when upstream already holds it, and kept
unchanged with a conflict-marked copy of each file under ``conflicts/<id>/`` when it
conflicts.
"""

from __future__ import annotations

from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from compatkit import atomic
from compatkit.delivery.wheels import WheelSource, pristine
from compatkit.engine.rebase import PatchPort, port_series
from compatkit.errors import CompatkitError, UsageError
from compatkit.load import authoring
from compatkit.load.registry import Registry, bundled_dirs
from compatkit.model.names import normalize_name
from compatkit.model.patchset import Patch, Patchset
from compatkit.model.results import PortState
from compatkit.value import Value


def _new_version(ps: Patchset, target: str) -> str:
    try:
        req = Requirement(target)
    except InvalidRequirement as exc:
        raise UsageError(f"--target {target!r}: {exc}") from None
    pins = [s.version for s in req.specifier if s.operator == "==" and "*" not in s.version]
    if normalize_name(req.name) != ps.distribution or len(pins) != 1:
        raise UsageError(f"--target must be {ps.distribution}==VERSION, not {target!r}")
    return pins[0]


def _old_version(ps: Patchset, wheels: WheelSource) -> str:
    pins = [s.version for s in ps.specifier if s.operator == "==" and "*" not in s.version]
    if pins:
        return pins[0]
    matching = [v for v in wheels.versions(ps.distribution) if ps.specifier.contains(v, True)]
    if not matching:
        raise CompatkitError(f"no {ps.distribution} version matches {ps.specifier}")
    return str(max(matching))


def _header(patch: Patch) -> str:
    text = patch.path.read_bytes().decode("utf-8", "surrogateescape").replace("\r\n", "\n")
    at = text.rfind(patch.diff_text) if patch.diff_text else -1
    return text[:at] if at > 0 else text


def _write(
    ps: Patchset, dest: Path, name: str, new_ver: str, old_ver: str, ports: list[PatchPort]
) -> dict[str, list[str]]:
    """Write the new patchset directory; return the conflict files of each conflicting patch."""
    dest.mkdir(parents=True)
    for smoke in ps.smoke_dirs():  # the rebased patchset gets its own copy (smoke-from's + own)
        if smoke.is_dir():
            atomic.copy_tree(smoke, dest / "smoke")
    series, conflicts = [], {}
    for entry, patch, port in zip(ps.series, ps.patches, ports, strict=True):
        header = _header(patch)
        if port.status is PortState.UPSTREAM:
            authoring.write_new(dest / "retired" / Path(entry).name, patch.path.read_text())
            continue
        series.append(entry)
        if port.status is not PortState.CONFLICT:
            authoring.write_new(dest / entry, header + port.diff())
            continue
        paths = []
        for f in port.files:
            if f.conflict is not None:
                rel = f"conflicts/{patch.id}/{f.path}"
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                atomic.write(dest / rel, f.conflict, sync=True)
                paths.append(rel)
        conflicts[patch.id] = paths
        note = "".join(f"Rebase-Conflict: {p}\n" for p in paths)
        text = patch.path.read_bytes().decode("utf-8", "surrogateescape")
        authoring.write_new(dest / entry, note + text)
    summary = f"{ps.summary} (ported from {ps.distribution} {old_ver} by compatkit rebase)"
    toml = authoring.new_patchset_toml(
        name,
        ps.version,
        summary,
        ps.distribution,
        f"=={new_ver}",
        series,
        [str(r) for r in ps.requires],
    )
    authoring.write_new(dest / "patchset.toml", toml)
    return conflicts


class RebaseResult(Value):
    """The new patchset at ``path``: each patch's port, and the conflict files of each patch
    that conflicts (patch id -> paths inside the new patchset)."""

    __slots__ = (
        "patchset",
        "new_patchset",
        "path",
        "old_version",
        "new_version",
        "ports",
        "conflicts",
        "distribution",
    )

    def __init__(
        self,
        patchset: Patchset,
        new_patchset: str,
        path: Path,
        versions: tuple[str, str],
        ports: list[PatchPort],
        conflicts: dict[str, list[str]],
    ) -> None:
        self.patchset, self.new_patchset, self.path = patchset.name, new_patchset, path
        self.distribution = patchset.distribution
        self.old_version, self.new_version = versions
        self.ports, self.conflicts = ports, conflicts

    def counts(self) -> dict[str, int]:
        """How many patches ended clean, with an offset, upstream, in conflict."""
        wanted = (PortState.CLEAN, PortState.OFFSET, PortState.UPSTREAM, PortState.CONFLICT)
        return {str(s): sum(p.status is s for p in self.ports) for s in wanted}

    def to_json(self) -> dict[str, object]:
        return {
            "ok": not self.conflicts,
            "patchset": self.patchset,
            "new_patchset": self.new_patchset,
            "path": str(self.path),
            "old_version": self.old_version,
            "new_version": self.new_version,
            "patches": [
                {
                    "id": p.id,
                    "status": p.status,
                    "detail": p.detail,
                    "conflicts": self.conflicts.get(p.id, []),
                    "files": [
                        {"path": f.path, "status": f.status, "offset": f.offset} for f in p.files
                    ],
                }
                for p in self.ports
            ],
        }


def rebase(
    registry: Registry,
    name: str,
    target: str,
    new_name: str | None,
    output: Path | None,
    wheels: WheelSource,
) -> RebaseResult:
    """Port every patch of ``name`` to ``target`` and write the new patchset (conflicts included:
    the result says which patches need a hand)."""
    ps = registry.get(name)
    new_ver = _new_version(ps, target)
    old_ver = _old_version(ps, wheels)
    new_name = new_name or f"{ps.name}-{new_ver}"
    base = output or (Path("patchsets") if ps.root.parent in bundled_dirs() else ps.root.parent)
    dest = base / new_name
    if dest.exists():
        raise UsageError(f"{dest} already exists; pass --name or -o")
    paths = sorted({path for p in ps.patches for fd in p.files for path in fd.names})
    old = pristine(wheels, ps.distribution, old_ver, paths)
    ps.bind_names(lambda path: old.files.get(path) is not None)  # the names apply patches
    new = pristine(wheels, ps.distribution, new_ver, paths)
    labels = (f"{ps.distribution} {old_ver}", f"{ps.distribution} {new_ver}")
    ports = port_series([(p.id, p.files) for p in ps.patches], old.files, new.files, labels)
    conflicts = _write(ps, dest, new_name, new_ver, old_ver, ports)
    return RebaseResult(ps, new_name, dest, (old_ver, new_ver), ports, conflicts)
