"""What an ``apply`` or ``revert`` did, and the base of every reported state.

:class:`TextEnum` is the base of the states compatkit reports (:mod:`compatkit.model.results`
holds the other domains); :class:`Action` lives here on its own because ``apply`` and
``revert`` report it and need none of the others (each enum class costs an import its
building).

>>> Action.REVERTED, f"{Action.REVERTED}", Action("dry-run")
(<Action.REVERTED: 'reverted'>, 'reverted', <Action.DRY_RUN: 'dry-run'>)
"""

from __future__ import annotations

from enum import Enum


class TextEnum(str, Enum):
    """A state whose ``str()`` and format are its value, the text users see."""

    _value_: str

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class Action(TextEnum):
    """What an ``apply`` or ``revert`` did."""

    APPLIED = "applied"
    DRY_RUN = "dry-run"
    REVERTED = "reverted"
    NONE = "none"  # nothing to do: already applied, or nothing to revert
