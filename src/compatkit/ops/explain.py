"""``explain ID|"ERROR TEXT"|-``: which patch a query names or an error text points to (read,
ranked, chosen), and each chosen patch's story and state here, as an :class:`Explanation`
that renders its own text and ``--json`` document."""

from __future__ import annotations

import re

from compatkit.errors import CompatkitError, UsageError
from compatkit.model.patchset import Patch, Patchset
from compatkit.model.results import PatchState
from compatkit.ops.status import inspect_patchset
from compatkit.value import Value

_ORDER = ("symptom", "cause", "fix", "retire-when", "origin", "forwarded", "last-update")


# A patch id (patch-6, PATCHSET:patch-6) that names no patch is a usage error, not a search.
_ID_LIKE = re.compile(r"(?:[\w.-]+:)?[A-Za-z][\w.]*-\d+")
MIN_SCORE = 3.0  # below this, a candidate matched a word or two by chance
AHEAD = 1.5  # the best is explained in full when it beats every other id by this factor
SHOWN = 5
STDIN_KEEP = 1 << 20  # explain -: the last 1 MiB of standard input (where a traceback ends)
NOT_UTF8 = 100  # explain -: more than 1 character in this many not UTF-8: not text
WIDTH = 98  # a section's body, wrapped in plain text

TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any

    from compatkit.engine.search import Candidate
    from compatkit.env.target import Environment
    from compatkit.load.registry import Registry

Match = tuple[Patchset, Patch]
Found = tuple["Candidate", Patchset, Patch]


def _by_id(registry: Registry, query: str) -> list[Match]:
    if ":" in query and not query.startswith(" "):
        ps_name, _, pid = query.partition(":")
        if ps_name in registry.names() and registry.get(ps_name).patch(pid):
            ps = registry.get(ps_name)
            return [(ps, ps.patch(pid))]  # type: ignore[list-item]
    return registry.find_patch(query)


def search(registry: Registry, query: str) -> list[Found]:
    """Every patch of every known patchset that matches ``query`` well enough, best first."""
    from compatkit.engine.search import Doc, parse_query, rank  # only for free text: start-up time

    patches = {f"{ps.name}:{p.id}": (ps, p) for ps in registry.all() for p in ps.patches}
    ranked = rank(parse_query(query), [Doc(key, p.fields) for key, (_, p) in patches.items()])
    best = ranked[0].score if ranked else 0.0
    kept = [c for c in ranked if c.score >= max(MIN_SCORE, best / 5)][:SHOWN]
    return [(c, *patches[c.key]) for c in kept]


def _leaders(found: list[Found]) -> list[Match]:
    """The best candidate (and its namesakes in other patchsets, if as good) when it is
    clearly ahead of every other patch id; else nothing: the list has to speak."""
    best, _, top = found[0]
    others = [c.score for c, _, p in found if p.id != top.id]
    if others and best.score < AHEAD * max(others):
        return []
    return [(ps, p) for c, ps, p in found if p.id == top.id and c.score >= 0.9 * best.score]


def find(registry: Registry, query: str) -> tuple[list[Match], list[Found]]:
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


def read_query(query: str, stdin_fd: int | None = None) -> str:
    """``-`` is standard input (``stdin_fd``; None: it is closed or not a file): a traceback
    piped in (``pytest ... 2>&1 | compatkit explain -``). Read to its end, keeping the last
    :data:`STDIN_KEEP` bytes from their first whole line (:func:`compatkit.bounded.tail`);
    binary input (a NUL byte, or more than 1% not UTF-8) is refused, exit 1."""
    if query != "-":
        return query
    from compatkit import bounded

    where = "explain -: standard input"
    if stdin_fd is None:
        raise UsageError(f"{where} is closed (pipe the error text in)")
    data, cut = bounded.tail(stdin_fd, STDIN_KEEP, where)
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


class Story(Value):
    """One patch told in full: the patchset that tells it, every patchset carrying its id
    (``carriers``), and its state here (``state``, ``detail``, ``startup``)."""

    __slots__ = ("patchset", "patch", "carriers", "state", "detail", "startup")

    def __init__(
        self,
        patchset: Patchset,
        patch: Patch,
        carriers: list[Patchset],
        state: PatchState,
        detail: str,
        startup: list[dict[str, object]],
    ) -> None:
        self.patchset, self.patch, self.carriers = patchset, patch, carriers
        self.state, self.detail, self.startup = state, detail, startup

    @property
    def note(self) -> str | None:
        """Which patchset's copy is shown when several carry the id; else None."""
        if len(self.carriers) <= 1:
            return None
        ps, pid = self.patchset, self.patch.id
        names = ", ".join(f"{c.name} {c.version}" for c in self.carriers)
        others = ", ".join(f"{c.name}:{pid}" for c in self.carriers if c is not ps)
        return f"{pid} is in {names}; shown: {ps.name}'s (the others: explain {others})"

    def sections(self) -> list[tuple[str, str]]:
        """(heading, body) pairs; the first heading is the title line."""
        ps, patch = self.patchset, self.patch
        here = f"{self.state}{f' ({self.detail})' if self.detail else ''}"
        title = f"{ps.name} {ps.version} → {ps.target}   here: {here}"
        parts = [(f"{patch.id}: {patch.title}", title)]
        for name in _ORDER:
            value = patch.fields.get(name)
            if value:
                parts.append((f"{name.replace('-', ' ').title()}:", reflow(value)))
        parts.append((f"Smoke test: {patch.fields.get('smoke-test', '(none)')}", ""))
        return parts

    @property
    def diff(self) -> str:
        return self.patch.diff_text.strip("\n")

    def text(self) -> str:
        """The story as plain text: each section, its body indented, then the diff."""
        import textwrap

        out: list[str] = []
        for heading, body in self.sections():
            out.append(heading)
            if "\n" in body:
                lines = body.split("\n")
            else:
                lines = textwrap.wrap(body, WIDTH, break_on_hyphens=False)
            out.append("\n".join(f"  {line}" if line.strip() else line for line in lines))
        out.append(self.diff)
        return "\n".join(out)

    def to_json(self) -> dict[str, Any]:
        return {
            "patchset": self.patchset.name,
            "id": self.patch.id,
            "patchsets": [c.name for c in self.carriers],  # every patchset with this id
            "fields": self.patch.fields,
            "state": self.state,
            "detail": self.detail,
            "startup_code": self.startup,  # also in detail: "start-up code: creates x.pth"
            "diff": self.patch.diff_text,
        }


class Explanation(Value):
    """What ``explain`` found: the ranked candidates of an error text (none for an id), and
    the stories told in full. ``failure``: the message when no candidate is close enough."""

    __slots__ = ("candidates", "stories")

    def __init__(self, candidates: list[Found], stories: list[Story]) -> None:
        self.candidates, self.stories = candidates, stories

    @property
    def failure(self) -> str | None:
        if self.candidates and not self.candidates[0][0].sure:
            return (
                "no patch matches this error text: the candidates above share only a word or "
                "two with it ('compatkit explain PATCHSET:ID' tells one's story)"
            )
        return None

    def candidate_lines(self) -> list[tuple[str, str | None]]:
        """The candidates, best first, as (text, style) lines; an empty list for an id."""
        if not self.candidates:
            return []
        heading = "Patches that match this error text, best first:"
        if self.failure:
            heading = "No patch matches this error text; the closest, for reference:"
        lines: list[tuple[str, str | None]] = [(heading, "bold")]
        for n, (c, ps, p) in enumerate(self.candidates, 1):
            lines.append((f"{n}. {ps.name}:{p.id}  score {c.score:g}  {p.title}", None))
            lines += [(f"     {why}", "dim") for why in c.why]
        if self.failure is None:
            ahead = bool(self.stories)
            lines.append(("" if ahead else _NO_LEADER, None))
        return lines

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"matches": [s.to_json() for s in self.stories]}
        if self.candidates:
            doc["candidates"] = [_candidate(*found) for found in self.candidates]
        return doc


def _candidate(c: Candidate, ps: Patchset, p: Patch) -> dict[str, Any]:
    return {"patchset": ps.name, "id": p.id, "title": p.title, "score": c.score, "why": [*c.why]}


_NO_LEADER = "No clear best match: 'compatkit explain PATCHSET:ID' tells one's story."


def _story(env: Environment, ps: Patchset, patch: Patch, carriers: list[Patchset]) -> Story:
    here = next(s for s in inspect_patchset(ps, env).statuses if s.id == patch.id)
    return Story(ps, patch, carriers, here.status, here.detail, here.startup)


def explain(
    registry: Registry, env: Environment, query: str, stdin_fd: int | None = None
) -> Explanation:
    """The patches ``query`` names (an id, error text, or ``-``: standard input's text) and
    the story of each one chosen; no story when no candidate is clearly ahead."""
    matches, found = find(registry, read_query(query, stdin_fd))
    if found and not found[0][0].sure:
        return Explanation(found, [])
    stories = [_story(env, *chosen) for chosen in _one_story_per_id(matches, env)]
    return Explanation(found, stories)
