"""Every read of a file compatkit does not own: regular files only, non-blocking, bounded.

A file of the target environment (RECORD, METADATA, INSTALLER, ``entry_points.txt``,
``direct_url.json``, a ``.pth``, ``pyvenv.cfg``, any file a RECORD lists), a project's
``pyproject.toml`` or a cache entry is whatever its owner made it: a FIFO (a plain ``open``
waits for a writer for ever), a link to ``/dev/zero`` (a plain ``read`` never ends), a sparse
file of gigabytes. :func:`read` looks first (``stat``: nothing but a regular file is ever
opened, so no device is opened for what opening it does), opens ``O_NONBLOCK | O_NOCTTY``,
checks again on the open file (``fstat``: a swap in between is caught), and reads at most
``limit`` bytes. Anything else raises :class:`Refused`: one line naming the file, exit 1.
:func:`tail` is the same rule for a stream (``explain -``'s standard input). :func:`sha256`
opens a file by the same rule and hashes it in :data:`HASH_CHUNK` pieces: what it keeps in
memory is one buffer, whatever the file's size (a sparse file of terabytes is hashed, slowly,
in the same memory as a small one).

>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> with open(os.path.join(folder, "RECORD"), "wb") as f:
...     _ = f.write(b"m.py,,\\n")
>>> read(os.path.join(folder, "RECORD"), 1024)
b'm.py,,\\n'
>>> os.mkfifo(os.path.join(folder, "INSTALLER"))
>>> try:
...     read(os.path.join(folder, "INSTALLER"), 1024)
... except Refused as exc:
...     print(exc.why)
not a regular file (a FIFO); not read
"""

from __future__ import annotations

import os
import stat

from compatkit.errors import CompatkitError

TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Callable

MIB = 1 << 20
METADATA = 64 * MIB  # RECORD, METADATA, a state file: far above any real one (a few MiB)
SMALL = MIB  # pyvenv.cfg, a .pth's head, INSTALLER: a few lines each
INSTALLED = 4 << 30  # a file RECORD lists: wheels' own bound is 2 GiB an entry
# An installed file read whole, to patch it or compare it with what a patch makes of it: the
# engine holds it several times over (bytes, text, lines), so a file over this is refused with
# one line (hashes are streamed, with no bound). Far above any source file of a real stack.
TEXT = 16 * MIB
CHUNK = MIB
HASH_CHUNK = MIB  # one read per hash update: large enough that the syscalls cost little

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


class Refused(CompatkitError):
    """A file that is not read: not a regular file, or larger than its bound. Exit code 1.

    ``where`` is the file as shown, ``why`` the reason (``str()``: both, one line)."""

    def __init__(self, where: str, why: str) -> None:
        super().__init__(f"{where}: {why}")
        self.where, self.why = where, why


def kind(mode: int) -> str:
    """What a file that is not a regular one is, in words (``a FIFO``)."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= MIB and not n % MIB else f"{n} bytes"


def open_regular(
    path: str | os.PathLike[str], *, dir_fd: int | None = None, follow: bool = True, where: str = ""
) -> tuple[int, os.stat_result]:
    """An open descriptor of the regular file ``path`` and its ``fstat``; raises
    :class:`Refused` for anything else (``follow=False``: a symbolic link too), OSError as
    ``os.open`` does (FileNotFoundError for a missing one). The caller closes it."""
    shown = where or os.fspath(path)
    st = os.stat(path, dir_fd=dir_fd, follow_symlinks=follow)
    if not stat.S_ISREG(st.st_mode):
        raise Refused(shown, f"not a regular file ({kind(st.st_mode)}); not read")
    fd = os.open(path, _FLAGS | (0 if follow else _NOFOLLOW), dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped since the stat
            raise Refused(shown, f"not a regular file ({kind(st.st_mode)}); not read")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_open(fd: int, st: os.stat_result, limit: int, where: str, head: bool = False) -> bytes:
    """At most ``limit`` bytes of the open regular file ``fd`` (``st``: its ``fstat``).
    A larger file raises :class:`Refused`, unless ``head``: then its first ``limit`` bytes."""
    if st.st_size > limit and not head:
        raise Refused(where, f"larger than {_size(limit)} ({st.st_size} bytes); not read")
    chunks, left = [], limit + (0 if head else 1)
    want = st.st_size + 1  # one read for a file of the size fstat said, one to see its end
    while left > 0:
        chunk = os.read(fd, min(left, want))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
        want = CHUNK  # it grew since the fstat: read on, at most to the bound
    data = b"".join(chunks)
    if len(data) > limit:
        raise Refused(where, f"larger than {_size(limit)} (it grew while read); not read")
    return data


def read(
    path: str | os.PathLike[str],
    limit: int,
    *,
    dir_fd: int | None = None,
    follow: bool = True,
    head: bool = False,
    where: str = "",
) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` (``head``: its first
    ``limit`` bytes, however large it is). Raises :class:`Refused` (not a regular file, too
    large) or OSError (FileNotFoundError: missing). ``where``: the file as messages name it."""
    shown = where or os.fspath(path)
    fd, st = open_regular(path, dir_fd=dir_fd, follow=follow, where=shown)
    try:
        return read_open(fd, st, limit, shown, head)
    finally:
        os.close(fd)


def tail(fd: int, keep: int, where: str) -> tuple[bytes, bool]:
    """The last ``keep`` bytes of the stream ``fd``, read to its end, and whether anything
    was left out before them. A NUL byte ends the read at once with :class:`Refused` (not
    text: ``/dev/zero`` or random bytes); a regular file is read from ``keep`` bytes before
    its end."""
    st = os.fstat(fd)
    cut = stat.S_ISREG(st.st_mode) and st.st_size > keep
    if cut:  # a file (`explain - < log`): only its end is read
        os.lseek(fd, st.st_size - keep, os.SEEK_SET)
    kept: list[bytes] = []
    size = 0
    while True:
        chunk = os.read(fd, CHUNK)
        if not chunk:
            break
        if b"\0" in chunk:
            raise Refused(where, "binary, not text (a NUL byte); not read further")
        kept.append(chunk)
        size += len(chunk)
        while size - len(kept[0]) >= keep:  # the oldest chunk is not needed any more
            size -= len(kept.pop(0))
            cut = True
    data = b"".join(kept)
    return (data[-keep:], True) if len(data) > keep else (data, cut)


def sha256_open(
    fd: int,
    st: os.stat_result,
    advance: Callable[[int], None] | None = None,
) -> bytes:
    """The SHA-256 digest of the open regular file ``fd`` (``st``: its ``fstat``), read in
    :data:`HASH_CHUNK` pieces into one reused buffer. It hashes what the file holds as it is
    read: one that grows meanwhile is hashed to at most one chunk past its ``fstat`` size, one
    that shrinks to where it ends; either way not its old digest, so it shows as changed.
    ``advance`` (a progress bar's) is told the size of each piece read."""
    from hashlib import sha256

    h = sha256()
    buf = bytearray(min(HASH_CHUNK, st.st_size + 1))
    view = memoryview(buf)
    left = st.st_size + HASH_CHUNK  # past its size: it grew while read; stop there
    while left > 0:
        n = os.readv(fd, [view[: min(len(buf), left)]])
        if not n:
            break
        h.update(view[:n])
        left -= n
        if advance is not None:
            advance(n)
    return h.digest()


def sha256(
    path: str | os.PathLike[str],
    *,
    dir_fd: int | None = None,
    follow: bool = True,
    where: str = "",
    advance: Callable[[int], None] | None = None,
) -> bytes:
    """The SHA-256 digest of the regular file ``path``, streamed (:func:`sha256_open`):
    peak memory does not grow with its size. Raises :class:`Refused` (not a regular file)
    or OSError (FileNotFoundError: missing), as :func:`read` does."""
    shown = where or os.fspath(path)
    fd, st = open_regular(path, dir_fd=dir_fd, follow=follow, where=shown)
    try:
        return sha256_open(fd, st, advance)
    finally:
        os.close(fd)
