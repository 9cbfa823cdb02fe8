"""The Sphinx extension that writes the generated pages before Sphinx reads the sources:
``generated/cli.md`` (the command reference, :mod:`ckdocs_cli`) and ``generated/patchsets/``
(a page per bundled patchset and per patch, :mod:`ckdocs_patchsets`). ``generated/`` is
never committed (.gitignore): it is made anew at every build.

``python docs/ext/ckdocs.py`` writes the same pages without Sphinx.
"""

from __future__ import annotations

from pathlib import Path

import ckdocs_cli
import ckdocs_patchsets

DOCS = Path(__file__).resolve().parents[1]
MATRIX = DOCS.parent / "matrix.toml"


def generate(docs: Path = DOCS, matrix: Path = MATRIX) -> list[Path]:
    """Every generated page under ``docs/generated``; the paths written."""
    out = docs / "generated"
    out.mkdir(exist_ok=True)
    written = ckdocs_patchsets.write(out / "patchsets", matrix)
    cli = out / "cli.md"
    cli.write_text(ckdocs_cli.render(), "utf-8")
    return [cli, *written]


def _on_config(app: object, config: object) -> None:
    generate()


def setup(app: object) -> dict[str, object]:
    app.connect("config-inited", _on_config)  # type: ignore[attr-defined]
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    for path in generate():
        print(path)
