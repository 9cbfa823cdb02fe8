"""Rank patches against pasted error text: tracebacks, exception lines, plain words (pure).

A query is split into frames (``File "…/block_pool.py", line 238, in f`` and ``block_pool.py:238``
alike), exception lines (the last one weighted most) and words; path components count
little. Each patch is scored on its header fields, and every candidate says why it matched.

>>> q = parse_query('  File "/v/site-packages/vllm/core/block_pool.py", line 238, in f\\nOops')
>>> q.frames
(Frame(file='block_pool.py', line=238, function='f'),)
>>> docs = [Doc("p5", {"symptom": "Oops at vllm/core/block_pool.py:238"}), Doc("p6", {})]
>>> [(c.key, c.why[0]) for c in rank(q, docs)]
[('p5', 'frame block_pool.py:238 (in f): named in the symptom')]
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from compatkit.value import Value

FIELD_WEIGHTS = {"title": 1.0, "symptom": 1.0, "cause": 0.6, "fix": 0.4}
PHRASE_FIELDS = ("symptom", "title")
LAST_EXCEPTION, EXCEPTION, PLAIN, PATH = 3.0, 1.5, 1.0, 0.1
FRAME_EXACT, FRAME_FILE, PHRASE_WORD, MIN_PHRASE = 8.0, 1.0, 0.8, 4
MAX_PHRASE = 2000  # words of the last exception matched as a phrase: its start says what it is
SURE_WORDS = 3  # distinct words in common that make a match more than chance
SHORT = 6  # words of a plain description ("prefix caching") that, all in a title, are sure

_FRAME = re.compile(r'File "([^"]+)", line (\d+)(?:, in ([\w.<>]+))?')
# _REF and _PATH start only where a run of their characters starts: tried inside a run too,
# each try scans the rest of the run, and a 50 MB word took hours
_REF = re.compile(r"(?<![\w.-])([\w.-]*\w\.py)(?:\"?, line |:)?(\d+)?((?:(?:, ?|-)?:?\d+)*)")
_PATH = re.compile(r"(?<![\w.~+-])(?:[\w.~+-]*/)+[\w.+-]+")
_EXC = re.compile(r"^(?:E\s+)?([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Failed))\b")
_TOKEN = re.compile(r"[a-z_][a-z0-9_]*")
_CHAIN = ("During handling of the above exception", "The above exception was the direct cause")
_ENGLISH = """
the and for are but not with from this that these those into onto than then there here
when where which while what who whom how why its it's was were been being have has had does
did doing can could should would will shall may might must all any some such only own same
too very just also once out off over under again further each both few more most other nor
our you your they them their his her she him one two get got like
"""
_NOISE = "traceback recent call last file line self return lib python site packages venv usr tmp"
_STOP = frozenset(_ENGLISH.split() + _NOISE.split())  # traceback and path noise too
_SUFFIXES = ("ing", "ed", "es", "s", "e")


class Frame(Value):
    """One traceback frame: the file's basename, its line (if given) and function."""

    __slots__ = ("file", "line", "function")

    def __init__(self, file: str, line: int | None, function: str | None) -> None:
        self.file, self.line, self.function = file, line, function


class Query(Value):
    __slots__ = ("frames", "exceptions", "words", "phrase", "forms")

    def __init__(
        self,
        frames: tuple[Frame, ...],
        exceptions: tuple[str, ...],
        words: dict[str, float],
        phrase: tuple[str, ...],
        forms: dict[str, str] | None = None,
    ) -> None:
        self.frames = frames  # outermost first, as Python prints them
        self.exceptions = exceptions  # the last one is what was raised
        self.words = words  # token -> query weight
        self.phrase = phrase  # the last exception's (or the text's) words, in order
        self.forms = forms or {}  # token -> the word as the query spelt it


class Candidate(Value):
    """A patch that matched: ``sure`` when the match rests on more than a word or two (an
    exact frame, a phrase of MIN_PHRASE words, or SURE_WORDS distinct words), so a generic
    error ("No module named 'vllm'") that shares two words with a patch is not taken for it."""

    __slots__ = ("key", "score", "why", "sure")

    def __init__(self, key: str, score: float, why: tuple[str, ...], sure: bool = True) -> None:
        self.key, self.score, self.why, self.sure = key, score, why, sure


def _stem(word: str) -> str:
    """A crude suffix strip, enough for "share"/"sharing"/"shared" to meet."""
    if not word.isalpha() or len(word) < 4 or word.endswith(("ss", "us", "is")):
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def tokens(text: str, forms: dict[str, str] | None = None) -> dict[str, float]:
    """Search tokens (stems) with their weight: identifiers whole, their ``_`` parts at half
    weight. ``forms`` collects the word first seen for each stem, to show in reasons."""
    out: dict[str, float] = {}
    forms = {} if forms is None else forms
    for raw in _TOKEN.findall(text.lower()):
        word = raw.strip("_")
        parts = [p for p in word.split("_") if p]
        for token, weight in [(word, 1.0)] + ([(p, 0.5) for p in parts] if len(parts) > 1 else []):
            if len(token) >= 3 and token not in _STOP:
                stem = _stem(token)
                out[stem] = max(out.get(stem, 0.0), weight)
                forms.setdefault(stem, token)
    return out


def phrase_words(text: str) -> tuple[str, ...]:
    """Every word, in order, for phrase matching (quotes and punctuation dropped)."""
    return tuple(re.findall(r"[a-z0-9_]+", text.lower()))


def _refs(text: str) -> list[Frame]:
    """``x.py:238``, ``x.py", line 238``, ``x.py:133-146``, ``x.py:180, :362`` and bare ``x.py``."""
    found = []
    for match in _REF.finditer(text):
        name = match.group(1).rsplit("/", 1)[-1]
        lines = [match.group(2), *re.findall(r"\d+", match.group(3) or "")]
        found += [Frame(name, int(n) if n else None, None) for n in lines]
    return found


def _split(text: str) -> tuple[list[Frame], list[str], list[str], list[str]]:
    """Frames, their source lines, exception texts, and the rest of ``text``."""
    frames: list[Frame] = []
    source: list[str] = []
    exceptions: list[str] = []
    plain: list[str] = []
    after_frame = in_exception = False
    for line in text.splitlines():
        s = line.strip()
        frame = _FRAME.search(line)
        if frame:
            frames.append(
                Frame(frame.group(1).rsplit("/", 1)[-1], int(frame.group(2)), frame.group(3))
            )
            after_frame, in_exception = True, False
        elif s.startswith("Traceback (most recent call last)") or s.startswith(_CHAIN):
            after_frame = in_exception = False
        elif not s or set(s) <= set("^~ "):
            after_frame = False
        elif after_frame and line[:1].isspace():
            source.append(s)
            after_frame = False
        elif _EXC.match(s):
            exceptions.append(s)
            after_frame, in_exception = False, True
        elif in_exception:
            exceptions[-1] += " " + s
        else:
            plain.append(s)
    return frames, source, exceptions, plain


def _add(words: dict[str, float], forms: dict[str, str], text: str, weight: float) -> list[Frame]:
    """Add ``text``'s words at ``weight`` (path components at PATH); returns the file refs."""
    refs = _refs(text)
    for path in _PATH.findall(text):
        for token, w in tokens(path, forms).items():
            words[token] = max(words.get(token, 0.0), w * PATH)
    for token, w in tokens(_PATH.sub(" ", text), forms).items():
        words[token] = max(words.get(token, 0.0), w * weight)
    return refs


def parse_query(text: str) -> Query:
    frames, source, exceptions, plain = _split(text)
    words: dict[str, float] = {}
    forms: dict[str, str] = {}
    for i, exc in enumerate(exceptions):  # first, so reasons spell words as the error does
        weight = LAST_EXCEPTION if i == len(exceptions) - 1 else EXCEPTION
        frames += _add(words, forms, exc, weight)
    for text in [*(f.function or "" for f in frames), *source, " ".join(plain)]:
        frames += _add(words, forms, text, PLAIN)
    last = exceptions[-1] if exceptions else " ".join(plain)
    return Query(tuple(frames), tuple(exceptions), words, phrase_words(last)[:MAX_PHRASE], forms)


class Doc:
    """One patch's header fields, indexed for :func:`rank`."""

    __slots__ = ("key", "refs", "files", "weights", "phrases")

    def __init__(self, key: str, fields: Mapping[str, str]) -> None:
        self.key = key
        self.refs: dict[tuple[str, int | None], str] = {}  # (file, line) -> field
        self.weights: dict[str, tuple[float, str]] = {}  # token -> (weight, field)
        for name, weight in FIELD_WEIGHTS.items():
            text = fields.get(name, "")
            for ref in _refs(text):
                self.refs.setdefault((ref.file, ref.line), name)
                self.refs.setdefault((ref.file, None), name)
            for token, w in tokens(text).items():
                if w * weight > self.weights.get(token, (0.0, ""))[0]:
                    self.weights[token] = (w * weight, name)
        self.files = {f for f, _ in self.refs}
        self.phrases = {n: phrase_words(fields.get(n, "")) for n in PHRASE_FIELDS}


def _longest_run(a: Sequence[str], b: Sequence[str]) -> tuple[int, int]:
    """Length and start (in ``a``) of the longest run of words ``a`` and ``b`` share (the
    first such run). Only the places where ``b`` has ``a``'s word are visited: a step per
    word of ``a`` and per match, not per pair of words.

    >>> _longest_run("x a b c y a b".split(), "a b c".split())
    (3, 1)
    """
    where: dict[str, list[int]] = {}
    for j, other in enumerate(b):
        where.setdefault(other, []).append(j)
    best, end = 0, 0
    prev: dict[int, int] = {}  # j -> length of the run ending at (the previous word, b[j])
    for i, word in enumerate(a):
        row = {}
        for j in where.get(word, ()):
            row[j] = n = prev.get(j - 1, 0) + 1
            if n > best:
                best, end = n, i
        prev = row
    return best, end - best + 1


def _idf(docs: Sequence[Doc]) -> dict[str, float]:
    counts: dict[str, int] = {}
    for doc in docs:
        for token in doc.weights:
            counts[token] = counts.get(token, 0) + 1
        for name in doc.files:
            counts[name] = counts.get(name, 0) + 1
    return {t: math.log((len(docs) + 1) / (n + 0.5)) for t, n in counts.items()}


def _frame_score(query: Query, doc: Doc, idf: Mapping[str, float]) -> tuple[float, list[str]]:
    score, why = 0.0, []
    seen: set[tuple[str, int | None]] = set()
    for depth, frame in enumerate(reversed(query.frames)):
        near = 1.0 if depth == 0 else 0.7  # the innermost frame counts most
        exact = frame.line is not None and (frame.file, frame.line) in doc.refs
        key = (frame.file, frame.line if exact else None)
        if key in seen or key not in doc.refs:
            continue
        seen.add(key)
        if exact:
            where = f" (in {frame.function})" if frame.function else ""
            score += FRAME_EXACT * near
            why.append(f"frame {frame.file}:{frame.line}{where}: named in the {doc.refs[key]}")
        else:
            score += FRAME_FILE * near * idf.get(frame.file, 0.0)
            why.append(f"frame file {frame.file}: named in the {doc.refs[key]}")
    return score, why


def _phrase_score(query: Query, doc: Doc, idf: Mapping[str, float]) -> tuple[float, list[str]]:
    best, field, start = 0, "", 0
    for name, words in doc.phrases.items():
        length, at = _longest_run(query.phrase, words)
        if length > best:
            best, field, start = length, name, at
    if best < MIN_PHRASE:
        return 0.0, []
    run = query.phrase[start : start + best]
    weight = sum(max(idf.get(_stem(w), 0.0), 0.3) for w in run)  # boilerplate counts less
    shown = " ".join(run)
    source = "last exception line" if query.exceptions else "text"
    return PHRASE_WORD * weight, [f'{source}: "{shown}" ({best} words in a row) in the {field}']


def _word_score(query: Query, doc: Doc, idf: Mapping[str, float]) -> tuple[float, list[str]]:
    hits = []
    for token, (weight, field) in doc.weights.items():  # the doc's few, not the query's many
        q_weight = query.words.get(token)
        if q_weight is not None:
            hits.append((q_weight * weight * idf.get(token, 0.0), token, field))
    hits.sort(key=lambda h: (-h[0], h[1]))
    if not hits:
        return 0.0, []
    shown = ", ".join(f"{query.forms.get(t, t)} ({f})" for _, t, f in hits[:6]) + (
        " …" if len(hits) > 6 else ""
    )
    return sum(h[0] for h in hits), [f"words: {shown}"]


def _sure(query: Query, doc: Doc, phrase: float) -> bool:
    """More than chance: an exact frame, a phrase, SURE_WORDS distinct words in common, or
    every word (two at least) of a short plain description in the title or symptom."""
    if phrase > 0 or any(f.line is not None and (f.file, f.line) in doc.refs for f in query.frames):
        return True
    if sum(1 for token in doc.weights if token in query.words) >= SURE_WORDS:
        return True
    plain = not query.exceptions and not query.frames and 2 <= len(query.words) <= SHORT
    return plain and all(doc.weights.get(t, (0, ""))[1] in PHRASE_FIELDS for t in query.words)


def rank(query: Query, docs: Sequence[Doc]) -> list[Candidate]:
    """Every doc that matches at all, best first (ties keep the order of ``docs``)."""
    idf = _idf(docs)
    out = []
    plain = not query.exceptions and not query.frames
    for doc in docs:
        parts = [_frame_score(query, doc, idf), _phrase_score(query, doc, idf)]
        parts.append(_word_score(query, doc, idf))
        score = sum(s for s, _ in parts)
        common = sum(1 for token in doc.weights if token in query.words)
        if plain and (parts[1][0] > 0 or common >= 2):
            # a plain description ("prefix caching", "No module named 'vllm'") is the error
            # as the user saw it: it counts as a last exception line does (one word: chance)
            score *= LAST_EXCEPTION
        if score > 0:
            why = tuple(w for _, reasons in parts for w in reasons)
            sure = _sure(query, doc, parts[1][0])
            out.append(Candidate(doc.key, round(score, 2), why, sure))
    return sorted(out, key=lambda c: -c.score)
