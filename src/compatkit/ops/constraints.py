"""A patchset's ``[[constraints]]`` as a constraints file (``compatkit constraints PATCHSET``).

The output is for ``uv pip install -c FILE`` / ``pip install -c FILE``: each pin on its own
line, its rationale above it as ``#`` comments (both tools skip comments).
"""

from __future__ import annotations

from compatkit.load.registry import Registry
from compatkit.value import Value


def constraints_text(name: str, version: str, pins: tuple[tuple[str, str], ...]) -> str:
    r"""The file's text: a header line, then each rationale as comments above its pin.

    >>> print(constraints_text("p", "1.0", (("a==1", "why\nand how"),)), end="")
    # constraints of patchset p 1.0 (compatkit constraints p)
    <BLANKLINE>
    # why
    # and how
    a==1
    """
    out = [f"# constraints of patchset {name} {version} (compatkit constraints {name})"]
    for pin, why in pins:
        out.append("")
        out += [f"# {line}".rstrip() for line in why.splitlines()]
        out.append(pin)
    return "\n".join(out) + "\n"


class ConstraintsResult(Value):
    __slots__ = ("patchset", "version", "pins")

    def __init__(self, patchset: str, version: str, pins: tuple[tuple[str, str], ...]) -> None:
        self.patchset, self.version, self.pins = patchset, version, pins  # (pin, rationale)

    def text(self) -> str:
        return constraints_text(self.patchset, self.version, self.pins)

    def to_json(self) -> dict[str, object]:
        rows = [{"pin": pin, "rationale": why} for pin, why in self.pins]
        return {"ok": True, "patchset": self.patchset, "version": self.version, "constraints": rows}


def constraints(registry: Registry, name: str) -> ConstraintsResult:
    ps = registry.get(name)
    return ConstraintsResult(ps.name, ps.version, ps.constraints)
