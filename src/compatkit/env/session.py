"""The one way in to a target distribution: lock, recover, read state, plan, commit.

Every operation that reads or writes compatkit's state opens a session on the distribution::

    with Session.open(dist) as s:      # exclusive lock; an interrupted run rolled back
        state = s.state("speculators-vllm016")
        ov = s.overlay()               # plan on it (compatkit.env.plan) ...
        s.commit(ov.changes())         # ... then one journaled transaction (compatkit.env.txn)

so the lock → recover → load-state sequence exists once, and planning reads the target
only through ``dist.files`` (:mod:`compatkit.env.files`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence

from compatkit.env.disk import JOURNAL
from compatkit.env.lock import locked
from compatkit.env.state import State, load_state
from compatkit.env.target import Dist

TYPE_CHECKING = False  # not typing's: `import typing` moves bench P1 explain 3.95× → 4.24×
if TYPE_CHECKING:
    from compatkit.env import txn
    from compatkit.env.plan import Overlay


class Session:
    __slots__ = ("dist", "recovered")

    def __init__(self, dist: Dist, recovered: bool) -> None:
        self.dist = dist
        self.recovered = recovered  # an interrupted run's changes were rolled back first

    @classmethod
    @contextlib.contextmanager
    def open(cls, dist: Dist, exclusive: bool = True) -> Iterator[Session]:
        """Lock ``dist``'s site-packages; an exclusive session first recovers (see txn)."""
        with locked(dist, exclusive):
            yield cls(dist, _recover(dist) if exclusive else False)

    def state(self, patchset: str) -> State | None:
        return load_state(self.dist, patchset)

    def overlay(self) -> Overlay:
        from compatkit.env.plan import Overlay  # not on the read-only commands' path (P1)

        return Overlay(self.dist, self.dist.files)

    def commit(self, changes: Sequence[txn.Change]) -> None:
        from compatkit.env import txn

        txn.commit(self.dist, changes)


def _recover(dist: Dist) -> bool:
    """txn.recover, imported only when a journal (or its .tmp / .del) is there: the rollback
    code is not on the read-only commands' path (P1)."""
    info = dist.dist_info
    if not any(os.path.lexists(info / f"{JOURNAL}{end}") for end in ("", ".tmp", ".del")):
        return False
    from compatkit.env import txn

    return txn.recover(dist)
