"""``compatkit explain ID|"ERROR TEXT"``: the story of one patch, and its state here."""

from __future__ import annotations

import re
import textwrap

from compatkit.errors import UsageError
from compatkit.ops.inspect import inspect_patchset
from compatkit.output import Output
from compatkit.patchset import Patch, Patchset
from compatkit.registry import Registry
from compatkit.target import Environment

_ORDER = ("symptom", "cause", "fix", "retire-when", "origin", "forwarded", "last-update")


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9_]+", text.lower()) if len(w) > 2}


def _score(query: str, patch: Patch) -> float:
    q = " ".join(query.lower().split())
    symptom = " ".join(patch.fields.get("symptom", "").lower().split())
    if q and q in symptom:
        return 2.0
    lines = [
        " ".join(line.lower().split()) for line in patch.fields.get("symptom", "").splitlines()
    ]
    if any(len(line) >= 20 and line in q for line in lines):
        return 1.5
    words = _words(query)
    if not words:
        return 0.0
    haystack = _words(" ".join(patch.fields.get(f, "") for f in ("symptom", "title")))
    return len(words & haystack) / len(words)


def find(registry: Registry, query: str) -> list[tuple[Patchset, Patch]]:
    if ":" in query and not query.startswith(" "):
        ps_name, _, pid = query.partition(":")
        if ps_name in registry.names() and registry.get(ps_name).patch(pid):
            ps = registry.get(ps_name)
            return [(ps, ps.patch(pid))]  # type: ignore[list-item]
    exact = registry.find_patch(query)
    if exact:
        return exact
    scored = [(_score(query, p), ps, p) for ps in registry.all() for p in ps.patches]
    best = max((s for s, _, _ in scored), default=0.0)
    if best < 0.6:
        raise UsageError(f"no patch id or symptom matches {query!r}")
    return [(ps, p) for s, ps, p in scored if s == best]


def explain(registry: Registry, env: Environment, query: str, out: Output | None = None) -> int:
    out = out or Output()
    matches = find(registry, query)
    out.doc["matches"] = []
    for ps, patch in matches:
        statuses = inspect_patchset(ps, env).statuses
        here = next(s for s in statuses if s.id == patch.id)
        out.doc["matches"].append(
            {
                "patchset": ps.name,
                "id": patch.id,
                "fields": patch.fields,
                "state": here.status,
                "detail": here.detail,
                "startup_code": here.startup,  # also in detail: "start-up code: creates x.pth"
                "diff": patch.diff_text,
            }
        )
        _render(out, ps, patch, f"{here.status}{f' ({here.detail})' if here.detail else ''}")
    return 0


def reflow(text: str) -> str:
    """Join a header field's wrapped lines into paragraphs; indented lines stay verbatim."""
    blocks: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            blocks.append("")
        elif line[:1].isspace() or not blocks or not blocks[-1] or blocks[-1][:1].isspace():
            blocks.append(line)
        else:
            blocks[-1] += " " + line.strip()
    return "\n".join(blocks)


def _sections(ps: Patchset, patch: Patch, state: str) -> list[tuple[str, str]]:
    """(heading, body) pairs; the first heading is the title line."""
    parts = [
        (
            f"{patch.id}: {patch.title}",
            f"{ps.name} {ps.version} → {ps.target}   here: {state}",
        )
    ]
    for name in _ORDER:
        value = patch.fields.get(name)
        if value:
            parts.append((f"{name.replace('-', ' ').title()}:", reflow(value)))
    parts.append((f"Smoke test: {patch.fields.get('smoke-test', '(none)')}", ""))
    return parts


def _render(out: Output, ps: Patchset, patch: Patch, state: str) -> None:
    if out.json_mode:
        return
    sections = _sections(ps, patch, state)
    if not out.rich:
        for heading, body in sections:
            print(heading)
            print(textwrap.indent(textwrap.fill(body, 98) if "\n" not in body else body, "  "))
        print(patch.diff_text.strip("\n"))
        return
    from rich.padding import Padding
    from rich.syntax import Syntax
    from rich.text import Text

    (title, subtitle), *rest = sections
    out.renderable(Text(title, style="bold"))
    out.renderable(Text(subtitle, style="dim"))
    for heading, body in rest:
        out.renderable(Text(heading, style="bold cyan"))
        if body:
            out.renderable(Padding(Text(body), (0, 0, 0, 2)))
    diff = patch.diff_text.strip("\n")
    out.renderable(Syntax(diff, "diff", theme="ansi_dark", background_color="default"))
