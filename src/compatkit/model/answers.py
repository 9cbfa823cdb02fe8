"""packaging's answers (and ``compile()``'s verdicts), remembered for the read-only commands.

A question is a kind and a text that holds everything the answer depends on (a requirement's
text and the installed version it is checked against, a folder name, the SHA-256 of a module's
source); :func:`remember` returns the answer it holds, or computes it with the real library and
keeps it. It is off by default: every answer is then computed. Only ``status``, ``verify``,
``explain`` and ``list``, which write nothing, turn it on, with the answers this user's
compatkit stored earlier (:func:`compatkit.load.cache.remember_answers`); a command that writes
always asks packaging itself, so nothing remembered decides what is written.

>>> use({})
>>> remember("upper", "a", lambda: "A"), remember("upper", "a", lambda: "never asked")
('A', 'A')
>>> learned()
{'upper\\x00a': 'A'}
>>> use(None)
>>> remember("upper", "a", lambda: "asked again")
'asked again'
"""

from __future__ import annotations

TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar

    T = TypeVar("T")

# a new value when the kinds or the answers' shapes change: older tables are not read
FORMAT = 2  # 2: distribution names are no longer asked (compatkit.model.names)

_known: list[dict[str, object] | None] = [None]  # None: off
_learned: dict[str, object] = {}


def use(table: dict[str, object] | None) -> None:
    """Answer from ``table`` (and add what is computed to it); None: compute every answer."""
    _known[0] = table
    _learned.clear()


def known() -> dict[str, object]:
    """Every answer held: those given to :func:`use` and those computed since."""
    return _known[0] or {}


def learned() -> dict[str, object]:
    """The answers computed since :func:`use`, to store."""
    return _learned


def remember(kind: str, question: str, compute: Callable[[], T]) -> T:
    """The answer to ``question``: remembered, else ``compute()`` (whose errors propagate,
    and nothing is kept)."""
    known = _known[0]
    if known is None:
        return compute()
    key = f"{kind}\0{question}"
    if key in known:
        return known[key]  # type: ignore[return-value]
    answer = compute()
    known[key] = _learned[key] = answer
    return answer
