"""CycloneDX 1.6 JSON documents, written with the standard library (pure; no IO).

compatkit writes its SBOMs itself rather than through cyclonedx-python-lib, so that a patched
wheel's bytes (its SBOM is inside) depend only on its inputs, never on whether an optional
library, or which version of it, is installed. The tests validate every document against the
CycloneDX 1.6 JSON schema.

A patched component carries ``pedigree.ancestors`` (the pristine release) and
``pedigree.patches`` in series order; the patch schema has no properties, so each patch's
ordinal is a component property ``compatkit:ordinal:PATCHSET:ID`` (1, 2, ...) naming the
issue the patch resolves (id ``PATCHSET:ID``).

>>> purl("My_Pkg", "1.0+ck.ab")
'pkg:pypi/my-pkg@1.0%2Bck.ab'
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from urllib.parse import quote

from compatkit.model.names import normalize_name
from compatkit.value import Value

SCHEMA_URL = "http://cyclonedx.org/schema/bom-1.6.schema.json"
_URL = re.compile(r"https?://[^\s,;)]+")


class PatchInfo(Value):
    """One applied patch: the issue id ``PATCHSET:ID``, and what is known of it."""

    __slots__ = ("issue_id", "title", "description", "diff", "origin_urls", "references")

    def __init__(
        self,
        issue_id: str,
        title: str = "",
        description: str = "",
        diff: str | None = None,
        origin_urls: Sequence[str] = (),
        references: Sequence[str] = (),
    ) -> None:
        self.issue_id, self.title, self.description, self.diff = issue_id, title, description, diff
        self.origin_urls, self.references = list(origin_urls), list(references)


def urls(text: str) -> list[str]:
    """The http(s) URLs in a header's text, each once, in order."""
    return list(dict.fromkeys(_URL.findall(text)))


def purl(name: str, version: str) -> str:
    return f"pkg:pypi/{normalize_name(name)}@{quote(version, safe='')}"


def _patch(p: PatchInfo) -> dict[str, object]:
    issue: dict[str, object] = {"type": "defect", "id": p.issue_id}
    if p.title:
        issue["name"] = p.title
    if p.description:
        issue["description"] = p.description
    if p.references:
        issue["references"] = p.references
    out: dict[str, object] = {"type": "unofficial"}
    diff: dict[str, object] = {}
    if p.diff is not None:
        diff["text"] = {"content": p.diff}
    if p.origin_urls:
        diff["url"] = p.origin_urls[0]
    if diff:
        out["diff"] = diff
    out["resolves"] = [issue]
    return out


def component(
    name: str,
    version: str,
    base: str | None = None,
    patches: Sequence[PatchInfo] = (),
    properties: Sequence[tuple[str, str]] = (),
) -> dict[str, object]:
    """A PyPI library; with ``base`` (the pristine version), its pedigree: ancestor and
    ``patches`` in the order given (series order), each with its ordinal property."""
    ref = purl(name, version)
    out: dict[str, object] = {
        "type": "library",
        "bom-ref": ref,
        "name": name,
        "version": version,
        "purl": ref,
    }
    if base is not None:
        ancestor = {"type": "library", "name": name, "version": base, "purl": purl(name, base)}
        out["pedigree"] = {"ancestors": [ancestor], "patches": [_patch(p) for p in patches]}
    ordinals = [(f"compatkit:ordinal:{p.issue_id}", str(i)) for i, p in enumerate(patches, 1)]
    props = [*properties, *ordinals]
    if props:
        out["properties"] = [{"name": k, "value": v} for k, v in props]
    return out


def document(
    components: Sequence[dict[str, object]],
    root: dict[str, object] | None,
    serial: str,
    timestamp: str,
    tool_properties: Sequence[tuple[str, str]] = (),
) -> str:
    """The BOM as JSON text: the same arguments give the same bytes."""
    tool: dict[str, object] = {"type": "application", "name": "compatkit"}
    if tool_properties:
        tool["properties"] = [{"name": k, "value": v} for k, v in tool_properties]
    metadata: dict[str, object] = {"timestamp": timestamp, "tools": {"components": [tool]}}
    if root is not None:
        metadata["component"] = root
    bom: dict[str, object] = {
        "$schema": SCHEMA_URL,
        "bomFormat": "CycloneDX",
        "specVersion": "1.6",
        "serialNumber": f"urn:uuid:{serial}",
        "version": 1,
        "metadata": metadata,
        "components": list(components),
    }
    refs = [c["bom-ref"] for c in [*([root] if root else []), *components]]
    bom["dependencies"] = [{"ref": r} for r in refs]
    return json.dumps(bom, indent=2, ensure_ascii=False) + "\n"
