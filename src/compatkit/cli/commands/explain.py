"""``compatkit explain ID|"ERROR TEXT"``: the story of one patch, and its state here."""

from __future__ import annotations

import re
import textwrap

from compatkit.cli.output import Output
from compatkit.errors import CompatkitError, UsageError
from compatkit.load.registry import Registry
from compatkit.model.patchset import Patch, Patchset
from compatkit.ops.status import inspect_patchset

_ORDER = ("symptom", "cause", "fix", "retire-when", "origin", "forwarded", "last-update")


# A patch id (patch-6, PATCHSET:patch-6) that names no patch is a usage error, not a search.
_ID_LIKE = re.compile(r"(?:[\w.-]+:)?[A-Za-z][\w.]*-\d+")
MIN_SCORE = 3.0  # below this, a candidate matched a word or two by chance
AHEAD = 1.5  # the best is explained in full when it beats every other id by this factor
SHOWN = 5
STDIN_KEEP = 1 << 20  # explain -: the last 1 MiB of standard input (where a traceback ends)
NOT_UTF8 = 100  # explain -: more than 1 character in this many not UTF-8: not text

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import Namespace
    from typing import Any

    from compatkit.cli.context import Context
    from compatkit.engine.search import Candidate
    from compatkit.env.target import Environment

Match = tuple[Patchset, Patch]


def _by_id(registry: Registry, query: str) -> list[Match]:
    if ":" in query and not query.startswith(" "):
        ps_name, _, pid = query.partition(":")
        if ps_name in registry.names() and registry.get(ps_name).patch(pid):
            ps = registry.get(ps_name)
            return [(ps, ps.patch(pid))]  # type: ignore[list-item]
    return registry.find_patch(query)


def search(registry: Registry, query: str) -> list[tuple[Candidate, Patchset, Patch]]:
    """Every patch of every known patchset that matches ``query`` well enough, best first."""
    from compatkit.engine.search import Doc, parse_query, rank  # only for free text: start-up time

    patches = {f"{ps.name}:{p.id}": (ps, p) for ps in registry.all() for p in ps.patches}
    ranked = rank(parse_query(query), [Doc(key, p.fields) for key, (_, p) in patches.items()])
    best = ranked[0].score if ranked else 0.0
    kept = [c for c in ranked if c.score >= max(MIN_SCORE, best / 5)][:SHOWN]
    return [(c, *patches[c.key]) for c in kept]


def _leaders(found: list[tuple[Candidate, Patchset, Patch]]) -> list[Match]:
    """The best candidate (and its namesakes in other patchsets, if as good) when it is
    clearly ahead of every other patch id; else nothing: the list has to speak."""
    best, _, top = found[0]
    others = [c.score for c, _, p in found if p.id != top.id]
    if others and best.score < AHEAD * max(others):
        return []
    return [(ps, p) for c, ps, p in found if p.id == top.id and c.score >= 0.9 * best.score]


def find(
    registry: Registry, query: str
) -> tuple[list[Match], list[tuple[Candidate, Patchset, Patch]]]:
    """(patches to explain in full, ranked candidates); an id query has no candidates. No
    candidate is explained unless the best one is ``sure``
    (see compatkit.engine.search.Candidate)."""
    exact = _by_id(registry, query)
    if exact:
        return exact, []
    if _ID_LIKE.fullmatch(query.strip()):
        raise UsageError(f"no patch has the id {query.strip()!r} (see 'compatkit status')")
    found = search(registry, query)
    if not found:
        raise CompatkitError("no patch's symptom, cause or fix matches this error text")
    return (_leaders(found) if found[0][0].sure else []), found


def _read_query(query: str) -> str:
    """``-`` is standard input: a traceback piped in (``pytest ... 2>&1 | compatkit explain -``).
    Read to its end, keeping the last :data:`STDIN_KEEP` bytes from their first whole line
    (:func:`compatkit.bounded.tail`); binary input (a NUL byte, or more than 1% not UTF-8) is
    refused, exit 1."""
    if query != "-":
        return query
    import sys

    from compatkit import bounded

    where = "explain -: standard input"
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # closed (`<&-`), or not a file
        raise UsageError(f"{where} is closed (pipe the error text in)") from None
    data, cut = bounded.tail(fd, STDIN_KEEP, where)
    text = data.decode("utf-8", "replace")
    rest = text.partition("\n")[2]
    if cut and rest.strip():
        text = rest  # its first line was cut: start at a whole one
    bad = text.count("\ufffd")
    if bad * NOT_UTF8 > len(text):
        raise CompatkitError(
            f"{where}: binary, not text ({bad} of {len(text)} characters are not UTF-8)"
        )
    if not text.strip():
        raise UsageError("explain -: nothing on standard input (pipe the error text in)")
    return text


def _show_candidates(
    out: Output, found: list[tuple[Candidate, Patchset, Patch]]
) -> list[dict[str, Any]]:
    """Show the candidates; their ``--json`` entries."""
    heading = "Patches that match this error text, best first:"
    if not found[0][0].sure:
        heading = "No patch matches this error text; the closest, for reference:"
    out.line(heading, style="bold")
    for n, (c, ps, p) in enumerate(found, 1):
        out.line(f"{n}. {ps.name}:{p.id}  score {c.score:g}  {p.title}")
        for why in c.why:
            out.line(f"     {why}", style="dim")
    return [
        {"patchset": ps.name, "id": p.id, "title": p.title, "score": c.score, "why": list(c.why)}
        for c, ps, p in found
    ]


def explain(registry: Registry, env: Environment, query: str, out: Output | None = None) -> int:
    out = out or Output()
    matches, found = find(registry, _read_query(query))
    doc: dict[str, Any] = {"matches": []}
    if found:
        doc["candidates"] = _show_candidates(out, found)
        if not found[0][0].sure:
            return out.fail(
                doc,
                "no patch matches this error text: the candidates above share only a word or "
                "two with it ('compatkit explain PATCHSET:ID' tells one's story)",
            )
        if not matches:
            out.line("No clear best match: 'compatkit explain PATCHSET:ID' tells one's story.")
        else:
            out.line("")
    for ps, patch, carriers in _one_story_per_id(matches, env):
        doc["matches"].append(_story(out, env, ps, patch, carriers))
    out.result(doc)
    return 0


def _one_story_per_id(
    matches: list[Match], env: Environment
) -> list[tuple[Patchset, Patch, list[Patchset]]]:
    """One (patchset, patch) per patch id, with every patchset that carries that id: the
    first that fits here (target and requirements), else the first whose target is
    installed, else the first by name, tells the story."""
    from compatkit.ops.status import fits

    def rank(match: Match) -> int:
        dist = env.find(match[0].distribution)
        if dist is None:
            return 2
        return 0 if fits(match[0], env, dist) else 1

    by_id: dict[str, list[Match]] = {}
    for ps, patch in matches:
        by_id.setdefault(patch.id, []).append((ps, patch))
    chosen = []
    for same in by_id.values():
        ps, patch = min(same, key=rank) if len(same) > 1 else same[0]
        chosen.append((ps, patch, [m[0] for m in same]))
    return chosen


def _story(
    out: Output, env: Environment, ps: Patchset, patch: Patch, carriers: list[Patchset]
) -> dict[str, Any]:
    """Tell one patch's story; its ``--json`` entry."""
    statuses = inspect_patchset(ps, env).statuses
    here = next(s for s in statuses if s.id == patch.id)
    if len(carriers) > 1:
        names = ", ".join(f"{c.name} {c.version}" for c in carriers)
        others = ", ".join(f"{c.name}:{patch.id}" for c in carriers if c is not ps)
        out.line(f"{patch.id} is in {names}; shown: {ps.name}'s (the others: explain {others})")
    _render(out, ps, patch, f"{here.status}{f' ({here.detail})' if here.detail else ''}")
    return {
        "patchset": ps.name,
        "id": patch.id,
        "patchsets": [c.name for c in carriers],  # every patchset with this id
        "fields": patch.fields,
        "state": here.status,
        "detail": here.detail,
        "startup_code": here.startup,  # also in detail: "start-up code: creates x.pth"
        "diff": patch.diff_text,
    }


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
            if "\n" in body:
                lines = body.split("\n")
            else:
                lines = textwrap.wrap(body, 98, break_on_hyphens=False)
            print("\n".join(f"  {line}" if line.strip() else line for line in lines))
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


def run(args: Namespace, ctx: Context) -> int:
    return explain(ctx.registry, ctx.env, args.query, ctx.out)
