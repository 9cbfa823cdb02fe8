"""The lock every compatkit run holds on a site-packages root, so two runs cannot interleave.

Read-only commands take it too, so they never read a half-written transaction, but only the
writing side (and a recovery) needs :mod:`compatkit.env.txn`'s journal and rollback code, so the
lock lives here (start-up time, P1).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from compatkit.errors import CompatkitError

if TYPE_CHECKING:
    from compatkit.env.target import Dist


@contextlib.contextmanager
def locked(dist: Dist, exclusive: bool = True) -> Iterator[None]:
    """Hold a lock on the site-packages root so two compatkit runs cannot interleave.

    A lock another run holds is waited for, with one line on stderr naming the holder, for at
    most ``$COMPATKIT_LOCK_TIMEOUT`` seconds (default 600); then a clear error.
    """
    fd = os.open(dist.root, os.O_RDONLY)
    try:
        _acquire(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH, dist)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _acquire(fd: int, kind: int, dist: Dist) -> None:
    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    import sys
    import time

    try:
        timeout = float(os.environ.get("COMPATKIT_LOCK_TIMEOUT") or 600)
    except ValueError:
        timeout = 600.0
    if not 0 <= timeout < float("inf"):  # nan, inf and -5 would wait for ever
        timeout = 600.0
    holder = _holder(fd)
    print(
        f"compatkit: waiting for another compatkit run{holder} that holds the lock on "
        f"{dist.root} (at most {timeout:g} s; COMPATKIT_LOCK_TIMEOUT)",
        file=sys.stderr,
        flush=True,
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
