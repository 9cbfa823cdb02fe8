"""Plain value objects: equality, hashing and ``repr`` from ``__slots__``.

Private slots (``_name``: caches) and ``__dict__`` are not fields. compatkit's one value-object
idiom (CONTRIBUTING.md, "Value objects"): importing ``dataclasses`` pulls in ``inspect`` (and
with it ``ast``, ``dis``, ``tokenize``) and generating each class's methods costs more again,
measured on P1's path in docs/benchmarks.md. ``__init__`` stays hand-written and typed, so
mypy checks every caller.

>>> class Point(Value):
...     __slots__ = ("x", "y")
...     def __init__(self, x: int, y: int) -> None:
...         self.x, self.y = x, y
>>> Point(1, 2) == Point(1, 2), Point(1, 2) == Point(2, 1), Point(1, 2)
(True, False, Point(x=1, y=2))
"""

from __future__ import annotations


def _names(cls: type) -> list[str]:
    """The fields: every slot but ``__dict__`` and private caches (``_name``)."""
    return [s for s in cls.__slots__ if not s.startswith("_")]  # type: ignore[attr-defined]


class Value:
    __slots__ = ()

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, s) for s in _names(type(self)))

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in _names(type(self)))
        return f"{type(self).__name__}({inner})"

    def as_dict(self) -> dict[str, object]:
        return {s: getattr(self, s) for s in _names(type(self))}
