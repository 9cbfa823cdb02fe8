"""PEP 508 requirements and PEP 440 specifiers for the common cases, without packaging.

``packaging.requirements`` pulls in ``packaging.markers``, ``packaging.tags`` and a parser
(docs/benchmarks.md, P1) to decide questions like "is vllm 0.16.0
>=0.16,<0.17?". This module decides exactly those: a name followed by comparison clauses
(``==  !=  <=  >=  <  >``) whose versions are plain releases (``0.16``, ``4.56.1``), against an
installed plain release. Anything else (extras, markers, URLs, wildcards, ``~=``, ``===``,
pre/post/dev/local versions, parenthesised specifiers, bad syntax) answers None, and the
caller asks packaging, which also words the errors. A hypothesis test checks both agree.

>>> req = parse("vllm >= 0.16, <0.17")
>>> str(req), req.contains("0.16.2"), req.contains("0.17"), req.contains("0.17.0rc1")
('vllm<0.17,>=0.16', True, False, None)
"""

from __future__ import annotations

import re

from compatkit.value import Value

_NAME = re.compile(r"[ \t]*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)[ \t]*")
_CLAUSE = re.compile(r"[ \t]*(==|!=|<=|>=|<|>)[ \t]*([0-9]+(?:\.[0-9]+)*)[ \t]*")
_RELEASE = re.compile(r"[0-9]+(?:\.[0-9]+)*")


def release(version: str) -> tuple[int, ...] | None:
    """``1.2.0`` → ``(1, 2)`` (PEP 440 pads with zeros, so trailing zeros do not count);
    None for anything but a plain release."""
    if not _RELEASE.fullmatch(version):
        return None
    parts = [int(p) for p in version.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


_OPS = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<=": lambda a, b: a <= b,
    ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b,
    ">": lambda a, b: a > b,
}


class Specifiers(Value):
    """Comparison clauses on plain releases (``>=0.16,<0.17``); all must hold."""

    __slots__ = ("clauses",)

    def __init__(self, clauses: tuple[tuple[str, str], ...]) -> None:
        self.clauses = clauses  # (operator, version as written)

    def __str__(self) -> str:  # as packaging's SpecifierSet prints itself
        return ",".join(sorted({op + version for op, version in self.clauses}))

    def contains(self, version: str) -> bool | None:
        """Whether a plain installed ``version`` satisfies every clause (prereleases
        allowed, as compatkit asks packaging); None if ``version`` is not a plain release."""
        have = release(version)
        if have is None:
            return None
        for op, text in self.clauses:
            want = release(text)
            assert want is not None  # parse() admits plain releases only
            width = max(len(have), len(want))
            a = have + (0,) * (width - len(have))
            b = want + (0,) * (width - len(want))
            if not _OPS[op](a, b):
                return False
        return True


def specifiers(text: str) -> Specifiers | None:
    """``>=0.16,<0.17`` → Specifiers; None for empty text or anything not simple."""
    clauses = []
    seen: dict[tuple[str, tuple[int, ...]], str] = {}
    for part in text.split(","):
        m = _CLAUSE.fullmatch(part)
        if m is None:
            return None
        op, version = m.group(1), m.group(2)
        release = [int(n) for n in version.split(".")]
        while len(release) > 1 and release[-1] == 0:
            release.pop()
        key = (op, tuple(release))
        if seen.setdefault(key, version) != version:
            return None  # "==0,==00": equal clauses written apart; packaging picks one to print
        clauses.append((op, version))
    return Specifiers(tuple(clauses))


class Requirement(Value):
    """``name`` plus optional simple specifiers: no extras, no marker, no URL."""

    __slots__ = ("name", "specifier")

    def __init__(self, name: str, specifier: Specifiers | None) -> None:
        self.name = name
        self.specifier = specifier

    def __str__(self) -> str:  # as packaging's Requirement prints itself
        return self.name + (str(self.specifier) if self.specifier else "")

    def contains(self, version: str) -> bool | None:
        return True if self.specifier is None else self.specifier.contains(version)


def parse(text: str) -> Requirement | None:
    """A requirement this module can decide, or None (ask packaging)."""
    m = _NAME.match(text)
    if m is None:
        return None
    rest = text[m.end() :]
    if not rest.strip(" \t"):
        return Requirement(m.group(1), None)
    if rest.lstrip(" \t")[:1] not in ("=", "!", "<", ">"):
        return None  # extras, a marker, a URL, parentheses, junk
    spec = specifiers(rest)
    return None if spec is None else Requirement(m.group(1), spec)
