"""The one way in to a target distribution: open, load, plan, write.

Every operation that reads or writes compatkit's state opens a session on the distribution,
and its data goes down the layers and back once, one step each::

    with Session.open(dist) as s:      # open: exclusive lock; an interrupted run rolled back
        state = s.state("speculators-vllm016")   # load: each state file read once
        ov = s.overlay()               # plan on it (compatkit.env.plan) ...
        s.commit(ov.changes())         # write: one journaled transaction (compatkit.env.txn)
    # report: the operation builds its result from what it loaded and planned

so the lock → recover → load-state sequence exists once, and planning reads the target
only through ``dist.files`` (:class:`compatkit.env.target.DiskFiles`).

The lock (:func:`locked`) is held by every compatkit run on a site-packages root, read-only
commands too, so two runs cannot interleave and none reads a half-written transaction; only
the writing side (and a recovery) imports :mod:`compatkit.env.txn` (start-up time, P1).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Sequence

from compatkit.env import owners
from compatkit.env.state import JOURNAL, State, find_applied, load_state, state_names, state_relpath
from compatkit.env.target import Dist, Environment
from compatkit.errors import CompatkitError

TYPE_CHECKING = False

if TYPE_CHECKING:
    from compatkit.env import txn
    from compatkit.env.plan import Overlay
    from compatkit.load.registry import Registry


class Session:
    __slots__ = ("dist", "recovered", "_states")

    def __init__(self, dist: Dist, recovered: bool) -> None:
        self.dist = dist
        self.recovered = recovered  # an interrupted run's changes were rolled back first
        self._states: dict[str, State | None] = {}  # loaded under this session's lock

    @classmethod
    def open(cls, dist: Dist, exclusive: bool = True) -> _Opened:
        """Lock ``dist``'s site-packages; an exclusive session first recovers (see txn)."""
        return _Opened(dist, exclusive)

    def state(self, patchset: str) -> State | None:
        """``patchset``'s state here (None: not applied), read once per session."""
        if patchset not in self._states:
            self._states[patchset] = load_state(self.dist, patchset)
        return self._states[patchset]

    def others(self, patchset: str) -> list[State]:
        """The states of every other patchset applied to this distribution, by name."""
        names = [n for n in state_names(self.dist) if n != patchset]
        return [s for s in map(self.state, names) if s is not None]

    def overlay(self) -> Overlay:
        from compatkit.env.plan import Overlay  # not on the read-only commands' path (P1)

        return Overlay(self.dist, self.dist.files)

    def commit(self, changes: Sequence[txn.Change]) -> None:
        from compatkit.env import txn

        txn.commit(self.dist, changes)


def locate(
    registry: Registry, env: Environment, name: str, target: str | None = None
) -> Dist | None:
    """The distribution a session on ``name`` opens: the one holding its state, else the one
    the patchset targets (None: not installed).

    ``target``: the distribution the patchset targets, when the caller has loaded it (verify
    does anyway). It is asked first: when it holds the state (the common case) no other
    distribution is read, so the cost does not grow with the environment (issue 36). Without
    it (revert works from the state alone and never loads the patchset), or when the target
    holds no state, every distribution's state folder is listed
    (:func:`compatkit.env.state.find_applied`)."""
    if target is not None:
        dist = env.find(target)
        if dist is not None and os.path.isfile(dist.root / state_relpath(dist, name)):
            return dist
    dist = find_applied(env, name)
    if dist is None:
        dist = env.find(target if target is not None else registry.get(name).distribution)
    return dist


def _recover(dist: Dist) -> bool:
    """txn.recover, imported only when a journal (or its .tmp / .del) is there: the rollback
    code is not on the read-only commands' path (P1)."""
    info = dist.dist_info
    if not any(os.path.lexists(info / f"{JOURNAL}{end}") for end in ("", ".tmp", ".del")):
        return False
    from compatkit.env import txn

    return txn.recover(dist)


class _Opened:
    """:meth:`Session.open`'s ``with``: the lock, then the session (a class, not
    ``contextlib.contextmanager``: contextlib is not on the read-only commands' path, P1)."""

    __slots__ = ("_lock", "_exclusive")

    def __init__(self, dist: Dist, exclusive: bool) -> None:
        self._lock, self._exclusive = locked(dist, exclusive), exclusive

    def __enter__(self) -> Session:
        dist = self._lock.dist
        self._lock.__enter__()
        try:
            return Session(dist, _recover(dist) if self._exclusive else False)
        except BaseException:
            self._lock.__exit__(None, None, None)
            raise

    def __exit__(self, *exc: object) -> None:
        self._lock.__exit__(*exc)


class locked:  # lower case: used as the function it was, ``with locked(dist):``
    """Hold a lock on the site-packages root so two compatkit runs cannot interleave.

    An environment another user owns is refused first (:mod:`compatkit.env.owners`).

    A lock another run holds is waited for, with one line on stderr naming the holder, for at
    most ``$COMPATKIT_LOCK_TIMEOUT`` seconds (default 600); then a clear error.
    """

    __slots__ = ("dist", "_exclusive", "_fd")

    def __init__(self, dist: Dist, exclusive: bool = True) -> None:
        self.dist, self._exclusive, self._fd = dist, exclusive, -1

    def __enter__(self) -> None:
        owners.check_site(self.dist.root)  # another user's environment: refused unless safe
        fd = os.open(self.dist.root, os.O_RDONLY)
        try:
            _acquire(fd, fcntl.LOCK_EX if self._exclusive else fcntl.LOCK_SH, self.dist)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def __exit__(self, *exc: object) -> None:
        fd, self._fd = self._fd, -1
        os.close(fd)  # closing releases the lock


def _acquire(fd: int, kind: int, dist: Dist) -> None:
    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    import time

    try:
        timeout = float(os.environ.get("COMPATKIT_LOCK_TIMEOUT") or 600)
    except ValueError:
        timeout = 600.0
    if not 0 <= timeout < float("inf"):  # nan, inf and -5 would wait for ever
        timeout = 600.0
    holder = _holder(fd)
    dist.notice(
        f"waiting for another compatkit run{holder} that holds the lock on "
        f"{dist.root} (at most {timeout:g} s; COMPATKIT_LOCK_TIMEOUT)"
    )
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, kind | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise CompatkitError(
                    f"gave up after {timeout:g} s waiting for the lock on {dist.root}: another "
                    f"compatkit run{holder} holds it (nothing was changed)"
                ) from None
            time.sleep(0.05)


def _holder(fd: int) -> str:
    """ " (pid N)" of the process holding a flock on ``fd``'s inode, from /proc/locks."""
    st = os.fstat(fd)
    try:
        with open("/proc/locks") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) > 5 and parts[1] == "FLOCK" and parts[5].endswith(f":{st.st_ino}"):
                    return f" (pid {parts[4]})"
    except OSError:
        pass
    return ""
