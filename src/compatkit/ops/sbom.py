"""CycloneDX SBOMs whose patched components carry ``pedigree.patches`` (``compatkit sbom``).

Each patch of a patchset applied (``apply``), built in (a patched wheel) or served by a
runtime folder (``runtime install``, ``exec``) becomes a CycloneDX patch of type
``unofficial``, in series order with its ordinal, carrying its diff, ``diff.url`` (the first URL
of its ``Origin`` header) and the issue it resolves (its title, symptom and cause, and the URLs
of its ``Origin`` / ``Forwarded`` headers). The pristine release is ``pedigree.ancestors``.
The JSON is written by :mod:`compatkit.delivery.sbomdoc` (standard library only).
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timezone
from pathlib import Path

from compatkit import atomic, bounded
from compatkit.delivery import sbomdoc
from compatkit.env.state import State, states_of
from compatkit.env.target import Environment, installed
from compatkit.errors import CompatkitError
from compatkit.load.registry import Registry
from compatkit.model.names import normalize_name
from compatkit.model.patchset import Patch, Patchset
from compatkit.value import Value

FORMATS = ("cyclonedx",)
_OUR_LABEL = re.compile(r"[+.]ck\.[0-9a-f]+$")


class Applied(Value):
    """One patchset in a component: how it got there, its patches in the order applied, and
    the patchset if it is known here (same digest)."""

    __slots__ = ("name", "version", "digest", "how", "ids", "patchset")

    def __init__(
        self, name: str, version: str, digest: str, how: str, ids: list[str], ps: Patchset | None
    ) -> None:
        self.name, self.version, self.digest, self.how = name, version, digest, how
        self.ids, self.patchset = ids, ps

    @classmethod
    def of_state(cls, state: State, ps: Patchset | None) -> Applied:
        how = "built in" if state.built_in else "applied"
        return cls(state.patchset, state.version, state.digest, how, state.applied, ps)


class SbomResult(Value):
    __slots__ = ("document", "components", "patched", "unknown", "path")

    def __init__(
        self, document: str, components: int, patched: list[str], unknown: list[str]
    ) -> None:
        self.document = document
        self.components = components
        self.patched = patched  # "speculators 0.3.0: speculators-vllm016"
        self.unknown = unknown  # applied patchsets not found here: no diffs for them
        self.path: Path | None = None  # where it was written (None: not written)

    def to_json(self) -> dict[str, object]:
        return {
            "ok": True,
            "path": str(self.path),
            "components": self.components,
            "patched": self.patched,
            "unknown": self.unknown,
        }


def _info(ps_name: str, patch: Patch | None, pid: str) -> sbomdoc.PatchInfo:
    if patch is None:
        return sbomdoc.PatchInfo(f"{ps_name}:{pid}")
    fields = patch.fields
    text = "\n".join(f"{k.title()}: {fields[k]}" for k in ("symptom", "cause") if fields.get(k))
    origin = sbomdoc.urls(fields.get("origin", ""))
    refs = sbomdoc.urls(" ".join(fields.get(k, "") for k in ("origin", "forwarded")))
    return sbomdoc.PatchInfo(f"{ps_name}:{pid}", patch.title, text, patch.diff_text, origin, refs)


def _series(a: Applied) -> list[str]:
    """The applied ids in series order (the patchset's, when it is known here)."""
    if a.patchset is None:
        return list(a.ids)
    return [i for i in a.patchset.ids if i in a.ids] + [i for i in a.ids if i not in a.patchset.ids]


def component(name: str, version: str, applied: list[Applied]) -> dict[str, object]:
    """A PyPI library component; with ``applied``, its pedigree: ancestor and patches."""
    if not applied:
        return sbomdoc.component(name, version)
    patches, props = [], []
    for a in applied:
        ps = a.patchset
        patches += [_info(a.name, ps.patch(i) if ps else None, i) for i in _series(a)]
        props += [
            ("compatkit:patchset", f"{a.name} {a.version}"),
            ("compatkit:patchset-digest", a.digest),
            ("compatkit:built-in", str(a.how == "built in").lower()),
            ("compatkit:delivery", a.how),
        ]
    base = _OUR_LABEL.sub("", version)
    return sbomdoc.component(name, version, base, patches, props)


def wheel_document(
    ps: Patchset, name: str, base: str, version: str, epoch: int, wheel_format: int
) -> str:
    """The patched wheel's own SBOM (PEP 770): its bytes depend only on the patchset, the
    versions, ``epoch`` and ``wheel_format`` (never on compatkit's version)."""
    applied = Applied(ps.name, ps.version, ps.digest, "built in", ps.ids, ps)
    root = component(name, version, [applied])
    serial = str(uuid.uuid5(uuid.NAMESPACE_URL, f"compatkit:{normalize_name(name)}=={version}"))
    when = datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    tool = [("compatkit:wheel-format", str(wheel_format))]
    return sbomdoc.document([], root, serial, when, tool)


def _known(registry: Registry, name: str, digest: str) -> Patchset | None:
    """The patchset exactly as applied (same digest), if this registry has it."""
    if name not in registry.names():
        return None
    ps = registry.get(name)
    return ps if ps.digest == digest else None


def active_runtimes(env: Environment) -> list[Path]:
    """The runtime folders that ``env``'s site-packages start (their ``.pth`` form). Only
    each ``.pth``'s head is read (compatkit's is a few lines); one that is a FIFO or a device
    raises :class:`compatkit.bounded.Refused`, naming it."""
    from compatkit.runtime.install import MARKER

    found = []
    for base in env.paths:
        for pth in sorted(Path(base).glob("*.pth")):
            try:
                lines = bounded.read(pth, bounded.SMALL, head=True).decode().splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            if len(lines) > 1 and lines[0].startswith(MARKER):
                found.append(Path(lines[1].strip()))
    return list(dict.fromkeys(found))


def runtime_patchsets(registry: Registry, root: Path) -> dict[str, list[Applied]]:
    """What the runtime folder ``root`` serves, by distribution name (canonical): read from
    its manifest through :func:`compatkit.runtime.install.read_manifest`, its only reader."""
    from compatkit.runtime.install import read_manifest

    manifest = read_manifest(root)
    out: dict[str, list[Applied]] = {}
    try:
        for ps in manifest["patchsets"]:
            name, digest = str(ps["name"]), str(ps["digest"])
            a = Applied(
                name,
                str(ps["version"]),
                digest,
                f"runtime {root}",
                list(ps["patches"]),
                _known(registry, name, digest),
            )
            out.setdefault(normalize_name(str(ps["distribution"])), []).append(a)
    except (KeyError, TypeError, ValueError) as exc:
        raise CompatkitError(f"{root}: malformed runtime manifest ({exc})") from None
    return out


def environment_document(
    registry: Registry, env: Environment, runtimes: list[Path] | None = None
) -> SbomResult:
    """The SBOM of every distribution in ``env``; patched ones carry their patches (applied,
    built in, or served by ``runtimes`` and the runtime folders ``env`` starts)."""
    served: dict[str, list[Applied]] = {}
    for root in dict.fromkeys([*(runtimes or []), *active_runtimes(env)]):
        for dist_name, sets in runtime_patchsets(registry, root).items():
            served.setdefault(dist_name, []).extend(sets)
    components, patched, unknown = [], [], []
    for dist in installed(env):
        states = states_of(dist)
        applied = [Applied.of_state(s, _known(registry, s.patchset, s.digest)) for s in states]
        applied += served.get(normalize_name(dist.name), [])
        components.append(component(dist.name, dist.version, applied))
        for a in applied:
            patched.append(f"{dist.name} {dist.version}: {a.name} ({a.how})")
            if a.patchset is None:
                unknown.append(a.name)
    when = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    doc = sbomdoc.document(components, None, str(uuid.uuid4()), when)
    return SbomResult(doc, len(components), patched, unknown)


def write_sbom(
    registry: Registry, env: Environment, output: Path, runtimes: list[Path] | None = None
) -> SbomResult:
    """:func:`environment_document`, written to ``output``."""
    result = environment_document(registry, env, runtimes)
    atomic.write(output, result.document.encode())
    result.path = output
    return result
