"""A page per bundled patchset and per patch, generated from ``patchset.toml``, the patch
headers and ``matrix.toml``: the story ``compatkit explain`` tells (the same fields in the same
order), the smoke test, and the versions the patch is proven on (the matrix cells that expect it
applied with its smoke test passing, which CI's ``nox -s matrix`` checks).

Patchsets are read with compatkit's own loader (``compatkit.load.registry``).
"""

from __future__ import annotations

import re
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from compatkit.model.matrix import Cell
    from compatkit.model.patchset import Patch, Patchset

# explain's order of the rationale fields (compatkit.cli.commands.explain._ORDER), and the
# headings it gives them
FIELDS = ("symptom", "cause", "fix", "retire-when", "origin", "forwarded", "last-update")
_CODE = re.compile(r"(`+)(.+?)\1")
_PUNCT = re.compile(r"([\\*_<>\[\]|$#])")


def bundled() -> list[Patchset]:
    """The patchsets compatkit ships, by name."""
    from compatkit.load.registry import Registry

    registry = Registry([])
    return sorted(
        (ps for ps in registry.all() if registry.source(ps) == "bundled"), key=lambda p: p.name
    )


def _inline(text: str) -> str:
    """``text`` as Markdown: code spans kept, every other character taken literally."""
    out, at = [], 0
    for match in _CODE.finditer(text):
        out += [_PUNCT.sub(r"\\\1", text[at : match.start()]), match.group(0)]
        at = match.end()
    return "".join([*out, _PUNCT.sub(r"\\\1", text[at:])])


# where explain's ``reflow`` lives: issue 47 moves it from the command to ops/explain.py
# (the first that has it is used; the lead keeps one at the merge)
_EXPLAIN = ("compatkit.ops.explain", "compatkit.cli.commands.explain")


def _reflow(text: str) -> str:
    """A header field's paragraphs as ``compatkit explain`` joins them."""
    import importlib

    for name in _EXPLAIN:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "reflow"):
            return str(module.reflow(text))
    raise ImportError(f"compatkit's reflow is in none of {', '.join(_EXPLAIN)}")


def _field(value: str) -> list[str]:
    """A header field as explain shows it: paragraphs, and its indented lines as a literal
    block."""
    lines: list[str] = []
    verbatim: list[str] = []
    for line in [*_reflow(value).split("\n"), ""]:
        if line[:1].isspace():
            verbatim.append(line)
            continue
        if verbatim:
            lines += ["```text", *verbatim, "```", ""]
            verbatim = []
        lines.append(_inline(line) if line else "")
    return lines


def proven_on(cells: list[Cell], ps: Patchset, patch: Patch) -> list[Cell]:
    """The matrix cells where ``patch`` is expected applied, its smoke test passing."""
    found = []
    for cell in cells:
        expected = cell.expected(ps.name, patch.id) if ps.name in cell.patchsets else None
        if expected is not None and str(expected[0]) == "applied" and expected[1] == "pass":
            found.append(cell)
    return found


def _smoke(ps: Patchset, patch: Patch) -> str:
    name = patch.fields.get("smoke-test", "")
    if not name:
        return "(none)"
    if ps.smoke_root == ps.root:
        return f"`{name}`"
    return f"`{name}` (shared: from `{ps.smoke_root.name}`)"


def patch_page(ps: Patchset, patch: Patch, cells: list[Cell], carriers: list[str]) -> str:
    lines = [
        f"# {patch.id}: {_inline(patch.title)}",
        "",
        "```{index} " + f"!single: {patch.id}; {ps.name}",  # a main entry: first in search
        "```",
        "",
        f"In [{ps.name}](../{ps.name}.md) {ps.version} → `{ps.target}`.",
        "",
    ]
    others = [n for n in carriers if n != ps.name]
    if others:
        also = ", ".join(f"[{n}](../{n}/{patch.id}.md)" for n in others)
        lines += [f"The same id is in {also}.", ""]
    for name in FIELDS:
        value = patch.fields.get(name, "")
        if value:
            lines += [f"## {name.replace('-', ' ').title()}", "", *_field(value)]
    lines += ["## Smoke test", "", _smoke(ps, patch), ""]
    if patch.smoke_needs:
        lines += [f"It needs {', '.join(patch.smoke_needs)} applied to reach this code.", ""]
    lines += ["## Proven on", ""]
    proven = proven_on(cells, ps, patch)
    if proven:
        lines += ["Applied, smoke test passing, in these cells of `matrix.toml`:", ""]
        lines += [f"- `{c.id}`: {', '.join(f'`{p}`' for p in c.packages)}" for c in proven]
    else:
        lines.append("No cell of `matrix.toml` applies it with its smoke test passing.")
    lines += ["", "## The diff", "", "````diff", patch.diff_text.strip("\n"), "````", ""]
    return "\n".join(lines)


def patchset_page(ps: Patchset) -> str:
    lines = [f"# {ps.name}", "", "```{index} " + f"!single: {ps.name}", "```", ""]
    lines += [_inline(ps.summary), "", f"- version: {ps.version}", f"- target: `{ps.target}`"]
    if ps.requires_text:
        lines.append("- requires: " + ", ".join(f"`{r}`" for r in ps.requires_text))
    if ps.smoke_root != ps.root:
        lines.append(f"- smoke tests: shared, from [{ps.smoke_root.name}]({ps.smoke_root.name}.md)")
    if ps.startup_code:
        lines.append("- start-up code: " + ", ".join(f"`{f}`" for f in ps.startup_code))
    lines.append("")
    if ps.constraints:
        lines += ["## Constraints", ""]
        lines += [f"- `{pin}`: {_inline(' '.join(why.split()))}" for pin, why in ps.constraints]
        lines.append("")
    lines += ["## Patches", "", "| id | title |", "|---|---|"]
    lines += [f"| [{p.id}]({ps.name}/{p.id}.md) | {_inline(p.title)} |" for p in ps.patches]
    lines += ["", "```{toctree}", ":hidden:", "", *[f"{ps.name}/{p.id}" for p in ps.patches]]
    return "\n".join([*lines, "```", ""])


def index_page(sets: list[Patchset]) -> str:
    lines = [
        "# Bundled patchsets",
        "",
        "Generated from each `patchset.toml` and its patch headers when the site is built: "
        "every patch's story as `compatkit explain` tells it, its smoke test and the versions "
        "it is proven on (the cells of `matrix.toml` that CI runs).",
        "",
        "| patchset | version | target | patches |",
        "|---|---|---|---|",
    ]
    for ps in sets:
        ids = ", ".join(f"[{p.id}]({ps.name}/{p.id}.md)" for p in ps.patches)
        lines.append(f"| [{ps.name}]({ps.name}.md) | {ps.version} | `{ps.target}` | {ids} |")
    lines += ["", "```{toctree}", ":hidden:", "", *[ps.name for ps in sets], "```", ""]
    return "\n".join(lines)


def write(out: Path, matrix: Path) -> list[Path]:
    """Every page under ``out`` (the folder is made anew); the paths written."""
    import shutil

    from compatkit.model.matrix import load_matrix

    cells = load_matrix(matrix)
    sets = bundled()
    carriers: dict[str, list[str]] = {}
    for ps in sets:
        for p in ps.patches:
            carriers.setdefault(p.id, []).append(ps.name)
    shutil.rmtree(out, ignore_errors=True)
    pages = {out / "index.md": index_page(sets)}
    for ps in sets:
        pages[out / f"{ps.name}.md"] = patchset_page(ps)
        for p in ps.patches:
            pages[out / ps.name / f"{p.id}.md"] = patch_page(ps, p, cells, carriers[p.id])
    for path, text in pages.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
    return list(pages)
