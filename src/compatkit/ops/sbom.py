"""CycloneDX SBOMs whose patched components carry ``pedigree.patches`` (``compatkit sbom``).

Built with cyclonedx-python-lib, the optional extra ``compatkit[sbom]``: it is imported only
here, inside the functions that need it, never on the start-up path of other commands. Each
patch of an applied (or built-in) patchset becomes a CycloneDX patch of type ``unofficial``
with its diff, resolving one issue named after the patch (its title, symptom and cause, and
the URLs of its ``Origin`` / ``Forwarded`` headers as references). The pristine release is the
component's ``pedigree.ancestors``.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from compatkit import __version__
from compatkit.errors import CompatkitError
from compatkit.names import canonical_name
from compatkit.patchset import Patch, Patchset
from compatkit.registry import Registry
from compatkit.state import State, states_of
from compatkit.target import Environment, installed
from compatkit.value import Value

if TYPE_CHECKING:
    from cyclonedx.model.component import Component

INSTALL_HINT = "pip install 'compatkit[sbom]'"
FORMATS = ("cyclonedx",)
_URL = re.compile(r"https?://[^\s,;)]+")
_OUR_LABEL = re.compile(r"[+.]ck\.[0-9a-f]+$")


def available() -> bool:
    try:
        import cyclonedx  # noqa: F401  # a small package __init__; the model loads on use
    except ImportError:
        return False
    return True


def require() -> None:
    if not available():
        raise CompatkitError(f"compatkit sbom needs cyclonedx-python-lib: {INSTALL_HINT}")


class Applied(Value):
    """One patchset in a component: its state there, and the patchset if it is known here."""

    __slots__ = ("state", "patchset")

    def __init__(self, state: State, patchset: Patchset | None) -> None:
        self.state, self.patchset = state, patchset


class SbomResult(Value):
    __slots__ = ("document", "components", "patched", "unknown")

    def __init__(
        self, document: str, components: int, patched: list[str], unknown: list[str]
    ) -> None:
        self.document = document
        self.components = components
        self.patched = patched  # "speculators 0.3.0: speculators-vllm016"
        self.unknown = unknown  # applied patchsets not found here: no diffs for them


def _purl(name: str, version: str) -> Any:
    from packageurl import PackageURL

    return PackageURL("pypi", name=canonical_name(name), version=version)


def _issue(ps_name: str, patch: Patch | None, pid: str) -> Any:
    from cyclonedx.model import XsUri
    from cyclonedx.model.issue import IssueClassification, IssueType

    if patch is None:
        return IssueType(type=IssueClassification.DEFECT, id=f"{ps_name}:{pid}")
    fields = patch.fields
    text = "\n".join(f"{k.title()}: {fields[k]}" for k in ("symptom", "cause") if fields.get(k))
    urls = _URL.findall(" ".join(fields.get(k, "") for k in ("origin", "forwarded")))
    return IssueType(
        type=IssueClassification.DEFECT,
        id=f"{ps_name}:{pid}",
        name=patch.title or None,
        description=text or None,
        references=[XsUri(u) for u in dict.fromkeys(urls)],
    )


def _patches(applied: Applied) -> Iterator[Any]:
    from cyclonedx.model import AttachedText
    from cyclonedx.model.component import Diff, Patch, PatchClassification

    ps, state = applied.patchset, applied.state
    for pid in state.applied:
        patch = ps.patch(pid) if ps is not None else None
        diff = Diff(text=AttachedText(content=patch.diff_text)) if patch is not None else None
        resolves = [_issue(state.patchset, patch, pid)]
        yield Patch(type=PatchClassification.UNOFFICIAL, diff=diff, resolves=resolves)


def _properties(applied: list[Applied]) -> list[Any]:
    from cyclonedx.model import Property

    out = []
    for a in applied:
        s = a.state
        out.append(Property(name="compatkit:patchset", value=f"{s.patchset} {s.version}"))
        out.append(Property(name="compatkit:patchset-digest", value=s.digest))
        out.append(Property(name="compatkit:built-in", value=str(s.built_in).lower()))
    return out


def component(name: str, version: str, applied: list[Applied]) -> Component:
    """A PyPI library component; with ``applied``, its pedigree: ancestor and patches."""
    from cyclonedx.model.component import Component, ComponentType, Pedigree

    purl = _purl(name, version)
    pedigree = None
    if applied:
        base = _OUR_LABEL.sub("", version)
        ancestor = Component(name=name, version=base, purl=_purl(name, base))
        patches = [p for a in applied for p in _patches(a)]
        pedigree = Pedigree(ancestors=[ancestor], patches=patches)
    return Component(
        type=ComponentType.LIBRARY,
        name=name,
        version=version,
        purl=purl,
        bom_ref=purl.to_string(),
        pedigree=pedigree,
        properties=_properties(applied),
    )


def _render(
    components: list[Component], root: Component | None, serial: uuid.UUID, when: datetime
) -> str:
    from cyclonedx.model.bom import Bom, BomMetaData
    from cyclonedx.model.component import Component as C
    from cyclonedx.model.component import ComponentType
    from cyclonedx.model.tool import ToolRepository
    from cyclonedx.output import make_outputter
    from cyclonedx.schema import OutputFormat, SchemaVersion

    tool = C(type=ComponentType.APPLICATION, name="compatkit", version=__version__)
    meta = BomMetaData(tools=ToolRepository(components=[tool]), component=root, timestamp=when)
    bom = Bom(components=components, serial_number=serial, metadata=meta)
    if root is not None:
        bom.register_dependency(root, [])
    out = make_outputter(bom, OutputFormat.JSON, SchemaVersion.V1_6)
    return out.output_as_string(indent=2) + "\n"


def wheel_document(ps: Patchset, name: str, base: str, version: str, epoch: int) -> str:
    """The patched wheel's own SBOM (PEP 770): the same bytes for the same input."""
    require()
    state = State(ps.name, ps.version, ps.digest, ps.distribution, version, ps.ids)
    state.built_in = True
    root = component(name, version, [Applied(state, ps)])
    serial = uuid.uuid5(uuid.NAMESPACE_URL, f"compatkit:{canonical_name(name)}=={version}")
    return _render([], root, serial, datetime.fromtimestamp(epoch, timezone.utc))


def _known(registry: Registry, state: State) -> Patchset | None:
    """The patchset exactly as applied (same digest), if this registry has it."""
    if state.patchset not in registry.names():
        return None
    ps = registry.get(state.patchset)
    return ps if ps.digest == state.digest else None


def environment_document(registry: Registry, env: Environment) -> SbomResult:
    """The SBOM of every distribution in ``env``; patched ones carry their patches."""
    require()
    components, patched, unknown = [], [], []
    for dist in installed(env):
        applied = [Applied(s, _known(registry, s)) for s in states_of(dist)]
        components.append(component(dist.name, dist.version, applied))
        for a in applied:
            patched.append(f"{dist.name} {dist.version}: {a.state.patchset}")
            if a.patchset is None:
                unknown.append(a.state.patchset)
    when = datetime.now(timezone.utc).replace(microsecond=0)
    doc = _render(components, None, uuid.uuid4(), when)
    return SbomResult(doc, len(components), patched, unknown)
