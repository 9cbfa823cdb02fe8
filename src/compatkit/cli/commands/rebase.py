"""``compatkit rebase PATCHSET --to DIST==VERSION``: a new patchset for a new upstream version.

The old patchset stays as it is. The new one (``NAME-VERSION`` unless ``--name``) targets
``==VERSION`` and holds each patch ported by :mod:`compatkit.engine.rebase`: rewritten when it
applies or merges, left out (moved to ``retired/``) when upstream already holds it, and kept
unchanged with a conflict-marked copy of each file under ``conflicts/<id>/`` when it conflicts.
"""

from __future__ import annotations

from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from compatkit import atomic
from compatkit.cli.output import Output
from compatkit.cli.outputs import output_dir
from compatkit.delivery.wheels import WheelSource, pristine
from compatkit.engine.rebase import PatchPort, port_series
from compatkit.errors import CompatkitError, UsageError
from compatkit.load import authoring
from compatkit.load.registry import Registry, bundled_dirs
from compatkit.model.patchset import Patch, Patchset
from compatkit.model.results import PortState


def _new_version(ps: Patchset, to: str) -> str:
    try:
        req = Requirement(to)
    except InvalidRequirement as exc:
        raise UsageError(f"--to {to!r}: {exc}") from None
    pins = [s.version for s in req.specifier if s.operator == "==" and "*" not in s.version]
    if canonicalize_name(req.name) != ps.distribution or len(pins) != 1:
        raise UsageError(f"--to must be {ps.distribution}==VERSION, not {to!r}")
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


def rebase(
    registry: Registry,
    name: str,
    to: str,
    new_name: str | None,
    into: Path | None,
    wheels: WheelSource,
    out: Output | None = None,
) -> int:
    out = out or Output()
    if into is not None:
        output_dir(into, "--into")
    ps = registry.get(name)
    new_ver = _new_version(ps, to)
    old_ver = _old_version(ps, wheels)
    new_name = new_name or f"{ps.name}-{new_ver}"
    base = into or (Path("patchsets") if ps.root.parent in bundled_dirs() else ps.root.parent)
    dest = base / new_name
    if dest.exists():
        raise UsageError(f"{dest} already exists; pass --name or --into")
    paths = sorted({fd.path for p in ps.patches for fd in p.files})
    old = pristine(wheels, ps.distribution, old_ver, paths)
    new = pristine(wheels, ps.distribution, new_ver, paths)
    labels = (f"{ps.distribution} {old_ver}", f"{ps.distribution} {new_ver}")
    ports = port_series([(p.id, p.files) for p in ps.patches], old.files, new.files, labels)
    conflicts = _write(ps, dest, new_name, new_ver, old_ver, ports)
    out.doc.update(
        ok=not conflicts,
        patchset=ps.name,
        new_patchset=new_name,
        path=str(dest),
        old_version=old_ver,
        new_version=new_ver,
        patches=[
            {
                "id": p.id,
                "status": p.status,
                "detail": p.detail,
                "conflicts": conflicts.get(p.id, []),
                "files": [
                    {"path": f.path, "status": f.status, "offset": f.offset} for f in p.files
                ],
            }
            for p in ports
        ],
    )
    out.table(
        f"{ps.name}: {labels[0]} → {new_ver}, written to {dest}",
        ["patch", "result", "detail"],
        [[p.id, str(p.status), p.detail] for p in ports],
    )
    counts = {
        str(s): sum(p.status is s for p in ports)
        for s in (PortState.CLEAN, PortState.OFFSET, PortState.UPSTREAM, PortState.CONFLICT)
    }
    out.line(", ".join(f"{n} {s}" for s, n in counts.items()))
    if conflicts:
        fix = [f"{pid}: resolve {dest / p}" for pid, ps_ in conflicts.items() for p in ps_]
        raise CompatkitError(f"{len(conflicts)} patch(es) conflict with {labels[1]}", fix)
    return 0
