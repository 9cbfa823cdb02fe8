"""Recover what an interrupted run left behind (``compatkit recover [DIST]... [--discard]``).

Every command already rolls back an interrupted run's journal before it reads. This command
does it on its own, for every distribution in the environment (or the ones named), and with
``--discard`` deletes a journal that was refused (see :mod:`compatkit.model.journal`) without
restoring anything: the files stay as they are, and ``pristine DIST`` shows which differ
from RECORD.
"""

from __future__ import annotations

from pathlib import Path

from compatkit.env import txn
from compatkit.env.session import locked
from compatkit.env.target import Dist, Environment
from compatkit.value import Value


def journaled(env: Environment) -> list[Dist]:
    """The distributions in ``env`` that hold a journal (or its leftovers)."""
    found: dict[Path, Dist] = {}
    for base in env.paths:
        for hit in sorted(Path(base).glob(f"*.dist-info/{txn.JOURNAL}*")):
            dist = Dist.at(hit.parent)
            if dist is not None:
                found.setdefault(hit.parent, dist)
    return list(found.values())


class Recovered(Value):
    """What was done to one distribution's journal: "rolled back", "discarded" or "none"."""

    __slots__ = ("distribution", "version", "action")

    def __init__(self, distribution: str, version: str, action: str) -> None:
        self.distribution, self.version, self.action = distribution, version, action


class RecoverResult(Value):
    __slots__ = ("where", "recovered")

    def __init__(self, where: str, recovered: list[Recovered]) -> None:
        self.where = where  # the environment, described
        self.recovered = recovered

    def to_json(self) -> dict[str, object]:
        rows = [
            {"distribution": r.distribution, "version": r.version, "action": r.action}
            for r in self.recovered
        ]
        return {"ok": True, "recovered": rows}


def recover(env: Environment, names: list[str], discard: bool) -> RecoverResult:
    """Roll back (or with ``discard`` delete) the journal of each distribution named, else of
    every one that holds one."""
    dists = [env.require(n) for n in names] if names else journaled(env)
    results = []
    for dist in dists:
        with locked(dist):
            done = txn.discard(dist) if discard else txn.recover(dist)
        action = ("discarded" if discard else "rolled back") if done else "none"
        results.append(Recovered(dist.name, dist.version, action))
    return RecoverResult(env.describe(), results)
