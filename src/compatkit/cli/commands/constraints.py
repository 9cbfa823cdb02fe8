"""``compatkit constraints PATCHSET``: the patchset's ``[[constraints]]`` as a constraints file.

The output is for ``uv pip install -c FILE`` / ``pip install -c FILE``: each pin on its own
line, its rationale above it as ``#`` comments (both tools skip comments).
"""

from __future__ import annotations

from compatkit.cli.output import Output
from compatkit.load.registry import Registry


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


def constraints(registry: Registry, name: str, out: Output | None = None) -> int:
    out = out or Output()
    ps = registry.get(name)
    out.doc.update(
        ok=True,
        patchset=ps.name,
        version=ps.version,
        constraints=[{"pin": pin, "rationale": why} for pin, why in ps.constraints],
    )
    if out.json_mode:
        return 0
    print(constraints_text(ps.name, ps.version, ps.constraints), end="")
    return 0
