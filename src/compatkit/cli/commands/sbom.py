"""``compatkit sbom [--format cyclonedx] [--runtime DIR] [-o FILE]``: the environment's
CycloneDX SBOM, with the patches applied, built in or served by runtime folders."""

from __future__ import annotations

import sys
from pathlib import Path

from compatkit import atomic
from compatkit.cli.output import Output
from compatkit.cli.outputs import output_file
from compatkit.env.target import Environment
from compatkit.load.registry import Registry
from compatkit.ops.sbom import environment_document


def sbom(
    registry: Registry,
    env: Environment,
    output: Path | None,
    out: Output | None = None,
    runtimes: list[Path] | None = None,
) -> int:
    out = out or Output()
    if output is not None:
        output_file(output, "-o", make=False)  # atomic.write makes no folder
    result = environment_document(registry, env, runtimes)
    if output is None:  # the document is the output (JSON already): --json changes nothing
        sys.stdout.write(result.document)
        out.json_mode = False
        return 0
    atomic.write(output, result.document.encode())
    out.doc.update(
        ok=True,
        path=str(output),
        components=result.components,
        patched=result.patched,
        unknown=result.unknown,
    )
    out.line(f"wrote {output}: {result.components} components, {len(result.patched)} patched")
    for name in result.unknown:
        out.line(f"warning: {name} is not known here as applied: its patches have no diff")
    return 0
