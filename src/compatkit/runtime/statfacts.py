"""Stat facts that prove a file still holds the bytes it held at install, without reading it.

The hook checks at every import that the installed file is the one the patches were prepared
from, and that the patched source is the one compatkit wrote. Hashing costs the interpreter's
SHA-256 module (a shared library to load) at every start; this module records, at install,
``(st_size, st_mtime_ns, st_ctime_ns, st_ino, st_dev)`` of each such file, and the hook skips
the hash while a ``stat`` gives back exactly those facts (any other answer: the full hash, as
before). The argument, and its limits, are in docs/security.md, "Runtime folders": the kernel
sets ``st_ctime`` to its clock at every change of a file (content, ``utime``, ``chmod``,
rename), and no call lets a user set it. So equal facts mean no change since they were taken,
provided that

- the file system keeps a real change time (an allow-list of Linux file systems, found in
  ``/proc/self/mountinfo``: vfat reports the creation time as ctime, FUSE whatever its daemon
  says; anywhere else nothing is recorded, and the hook always hashes),
- no page of the file was dirty when they were taken: a write through a shared writable
  mapping sets the ctime only when it faults, on a page that is clean (written back, so
  write-protected in every mapping); later writes to that dirty page set nothing. The facts
  are taken after an ``fsync``, which writes every dirty page back and write-protects it, so
  the next write through any mapping faults and sets the ctime. tmpfs never writes a page
  back: a page once mapped writable stays so, and is not on the allow-list; and
- the file system's clock had moved past the file's last change when the facts were taken (a
  change within the same timestamp tick would keep the same ctime: git's "racy clean" case).
  Timestamps finer than a second tick with the kernel's coarse clock, every few ms: facts are
  taken once the file's ctime is :data:`FINE_NS` old (waiting for it if need be); with whole
  seconds, only once it is :data:`COARSE_NS` old (never waited for: nothing recorded).

>>> import tempfile
>>> with tempfile.NamedTemporaryFile() as f:
...     _ = f.write(b"x = 1\\n")
...     f.flush()
...     found = of_path(f.name, b"x = 1\\n")  # None on a file system not known sound
...     found is None or found[0] == 6
True
"""

from __future__ import annotations

import functools
import os
import stat
import time

Facts = tuple[int, int, int, int, int]

FINE_NS = 50_000_000  # the coarse clock ticks every 1-10 ms (HZ 1000-100)
COARSE_NS = 2_000_000_000  # FAT's 2 s, the coarsest timestamps there are
# Local Linux file systems whose ctime is the kernel's, set at every change of the inode, and
# which write a dirty page back (tmpfs does not: a write through a mapping may never show).
SOUND = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "overlay", "zfs", "f2fs", "bcachefs"})


def facts(st: os.stat_result) -> Facts:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


@functools.cache
def _file_systems() -> dict[int, str]:
    """Each mounted device's file system type (an empty dict where there is no mountinfo)."""
    found: dict[int, str] = {}
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                fields, _, rest = line.partition(" - ")
                major, _, minor = fields.split()[2].partition(":")
                found[os.makedev(int(major), int(minor))] = rest.split(" ", 1)[0]
    except (OSError, ValueError, IndexError):
        return {}
    return found


def _settled(ctime_ns: int) -> bool:
    """Whether the file system's clock has moved past ``ctime_ns`` (waiting up to
    :data:`FINE_NS` for it), so that any later change gets another ctime."""
    fine = ctime_ns % 1_000_000_000 != 0
    wait = ctime_ns + (FINE_NS if fine else COARSE_NS) - time.time_ns()
    if wait > 0 and not fine:
        return False
    if wait > 0:
        time.sleep(wait / 1e9)
    return True


def _read_up_to(fd: int, limit: int) -> bytes:
    """At most ``limit`` bytes of ``fd``, from where it stands: enough to tell a file from the
    bytes it should hold, whatever its size (one that grew to gigabytes is not read whole)."""
    chunks, left = [], limit
    while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def of_fd(fd: int, expected: bytes) -> Facts | None:
    """The facts of the open regular file ``fd`` if they prove, from now on, that it holds
    ``expected``; None if they cannot (the hook then hashes it at every import)."""
    first = os.fstat(fd)
    if _file_systems().get(first.st_dev) not in SOUND or not _settled(first.st_ctime_ns):
        return None
    try:  # no dirty page left: a write through a mapping from here on faults, and sets ctime
        os.fsync(fd)
    except OSError:
        return None
    before = os.fstat(fd)  # after the tick: a change from here on shows in the ctime
    os.lseek(fd, 0, os.SEEK_SET)
    data = _read_up_to(fd, len(expected) + 1)
    after = os.fstat(fd)
    same = facts(first) == facts(before) == facts(after) and data == expected
    return facts(before) if same else None


def of_path(path: str, expected: bytes) -> Facts | None:
    """:func:`of_fd` of the file at ``path`` (an installed file; links followed, as the hook's
    ``stat`` and import do); None if it cannot be opened or is not a regular file (opened
    non-blocking: a FIFO would wait for a writer for ever)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return of_fd(fd, expected)
    finally:
        os.close(fd)
