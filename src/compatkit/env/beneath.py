"""Writes below a site-packages root that a swapped folder cannot redirect.

A path checked when a transaction is planned may change before it is written: the owner of
a folder can swap it for a link at any moment. So :class:`Tree` never writes by a path
string. It holds the root open and reaches every folder from it one name at a time, each
opened in its parent's descriptor with ``O_NOFOLLOW | O_DIRECTORY`` (``openat``); every
mkdir, temp file, rename, unlink, rmdir and ``chmod``/``utime`` (on the open temp file) is
made relative to the descriptor of its folder (``dir_fd=``). A folder that is a link, or
anything but a folder, when it is reached fails the write with :class:`Swapped` (an
OSError, so a transaction rolls back as for any other write error); one swapped after it
was opened is still the folder that was reached, wherever it was moved, never the link's
target.

>>> import pathlib, tempfile
>>> root, away = (pathlib.Path(tempfile.mkdtemp()) for _ in range(2))
>>> with Tree(root) as tree:
...     tree.write("pkg/m.py", b"x = 1\\n", 0o644)
...     (root / "pkg").rename(root / "old")
...     (root / "pkg").symlink_to(away)          # pkg is now a link to a folder elsewhere
...     tree.write("pkg/n.py", b"", 0o644)       # the folder opened above: not the link's
...     tree.forget("pkg")                       # reached anew from here on
...     tree.write("pkg/o.py", b"", 0o644)
Traceback (most recent call last):
...
compatkit.env.beneath.Swapped: [Errno 40] it is a symlink (was it swapped ...): '.../pkg'
>>> sorted(p.name for p in (root / "old").iterdir()), list(away.iterdir())
(['m.py', 'n.py'], [])
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from pathlib import Path

from compatkit import atomic, bounded

TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import TracebackType

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_OPEN = 64  # folder descriptors kept open (the least recently used is closed first)


class Swapped(OSError):
    """A folder on the way to a file is a link or not a folder: the write is refused."""

    def __init__(self, path: str, link: bool = True) -> None:
        what = "a symlink" if link else "not a folder"
        why = f"it is {what} (was it swapped while compatkit ran?)"
        super().__init__(errno.ELOOP if link else errno.ENOTDIR, why, path)


def _is_link(name: str, dir_fd: int) -> bool:
    with contextlib.suppress(OSError):
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    return True  # gone again: it was being swapped


def rmtree_at(fd: int, name: str, ignore_errors: bool = False) -> None:
    """``shutil.rmtree`` of the folder ``name`` in the folder open as ``fd``: by ``dir_fd``
    on 3.11+; on 3.10 (its rmtree has no ``dir_fd``) by the path the open descriptor names
    (``/proc/self/fd/FD/NAME``). Either way shutil's own descriptor walk: it refuses a link
    as the folder named (OSError), and removes the links in it without following them."""
    import shutil  # with zlib, bz2 and lzma: only where a folder is removed

    if sys.version_info >= (3, 11):
        shutil.rmtree(name, dir_fd=fd, ignore_errors=ignore_errors)
    else:
        shutil.rmtree(f"/proc/self/fd/{fd}/{name}", ignore_errors=ignore_errors)


class Tree:
    """An open root folder; every path given is relative to it, with ``/``. ``fd``: the
    root already open (the caller's checks made on it; the tree closes it); ``dir_mode``:
    the mode folders are made with (the umask applies)."""

    __slots__ = ("root", "fd", "dir_mode", "_dirs")

    def __init__(self, root: str | Path, fd: int | None = None, dir_mode: int = 0o777) -> None:
        self.root = str(root)
        if fd is None:
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self.fd, self.dir_mode = fd, dir_mode
        self._dirs: dict[str, int] = {}  # folder (relative) -> its descriptor, oldest first

    def __enter__(self) -> Tree:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self.forget("")
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def full(self, relpath: str) -> str:
        return os.path.join(self.root, relpath) if relpath else self.root

    def folder(self, reldir: str, make: bool = False) -> int:
        """The descriptor of the folder ``reldir`` ("": the root), reached from the nearest
        folder already open; ``make``: the missing folders are made (as ``os.makedirs``)."""
        if not reldir:
            return self.fd
        fd = self._dirs.pop(reldir, None)
        if fd is None:
            parent, _, name = reldir.rpartition("/")
            at = self.folder(parent, make)
            if make:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, self.dir_mode, dir_fd=at)
            try:
                fd = os.open(name, _DIR, dir_fd=at)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise Swapped(self.full(reldir), _is_link(name, at)) from None
                raise type(exc)(exc.errno, exc.strerror, self.full(reldir)) from None
            if len(self._dirs) >= MAX_OPEN:
                os.close(self._dirs.pop(next(iter(self._dirs))))
        self._dirs[reldir] = fd  # the most recently used last
        return fd

    def forget(self, reldir: str) -> None:
        """Close the descriptors of ``reldir`` and every folder below it ("": all): after a
        rename or removal of that folder, its name is reached anew."""
        for rel in [
            r for r in self._dirs if not reldir or r == reldir or r.startswith(f"{reldir}/")
        ]:
            os.close(self._dirs.pop(rel))

    def at(self, relpath: str, make: bool = False) -> tuple[int, str]:
        """The descriptor of ``relpath``'s folder (:meth:`folder`; kept open by the tree)
        and its last name."""
        parent, _, name = relpath.rpartition("/")
        return self.folder(parent, make), name

    def write(
        self,
        relpath: str,
        data: bytes,
        mode: int | None = None,  # None: the file's own, else the umask's default
        mtime_ns: int | None = None,
        sync: bool = False,
    ) -> None:
        """``relpath`` holds ``data`` (:func:`compatkit.atomic.write` in its folder's
        descriptor: temp file, ``fchmod``, ``futimens``, ``renameat``); folders made."""
        fd, name = self.at(relpath, make=True)
        with self._named(relpath):
            atomic.write(name, data, mode, mtime_ns, sync=sync, dir_fd=fd)

    def create(self, relpath: str) -> int:
        """A new file (never an existing name or a link), open for writing; the caller closes it."""
        fd, name = self.at(relpath)
        with self._named(relpath):
            return os.open(name, _NEW, 0o666, dir_fd=fd)

    def mkdir(self, reldir: str) -> None:
        """Make the folder ``reldir`` (FileExistsError if the name is taken)."""
        fd, name = self.at(reldir)
        with self._named(reldir):
            os.mkdir(name, self.dir_mode, dir_fd=fd)

    def rename(self, source: str, dest: str) -> None:
        """``os.rename`` of ``source`` to ``dest`` (the destination's folders made)."""
        src_fd, src_name = self.at(source)
        dst_fd, dst_name = self.at(dest, make=True)
        with self._named(source):
            os.rename(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
        self.forget(source)
        self.forget(dest)

    def unlink(self, relpath: str) -> None:
        """Remove the file (or link) ``relpath``; nothing if it, or its folder, is missing."""
        try:
            fd, name = self.at(relpath)
        except FileNotFoundError:
            return
        with contextlib.suppress(FileNotFoundError), self._named(relpath):
            os.unlink(name, dir_fd=fd)

    def rmdir(self, reldir: str) -> bool:
        """Remove the empty folder ``reldir``; False if it is not empty, missing, or a link."""
        self.forget(reldir)
        try:
            fd, name = self.at(reldir)
            os.rmdir(name, dir_fd=fd)
        except OSError:
            return False
        return True

    def rmtree(self, reldir: str) -> None:
        """Remove the folder ``reldir`` and all in it (shutil's descriptor walk, which
        refuses a link as the folder named), if it is there; a link or file is unlinked."""
        self.forget(reldir)
        try:
            fd, name = self.at(reldir)
            mode = os.lstat(name, dir_fd=fd).st_mode
        except FileNotFoundError:
            return
        if stat.S_ISDIR(mode):
            rmtree_at(fd, name, ignore_errors=True)
        else:
            self.unlink(reldir)

    def remove_temps(self, relpath: str) -> None:
        """The temp files an interrupted write of ``relpath`` left (:func:`atomic.remove_temps`)."""
        try:
            fd, name = self.at(relpath)
        except FileNotFoundError:
            return
        atomic.remove_temps(name, dir_fd=fd)

    def lstat(self, relpath: str) -> os.stat_result | None:
        """``os.lstat`` of ``relpath``; None if it or a folder on the way is missing."""
        try:
            fd, name = self.at(relpath)
            return os.lstat(name, dir_fd=fd)
        except FileNotFoundError:
            return None

    def read(self, relpath: str, limit: int, follow: bool = False) -> bytes | None:
        """The bytes (at most ``limit``: :mod:`compatkit.bounded`) of the regular file
        ``relpath``, None if it is missing; ``follow``: a link as the last name is read
        through (the folders on the way never are)."""
        try:
            fd, name = self.at(relpath)
            where = self.full(relpath)
            return bounded.read(name, limit, dir_fd=fd, follow=follow, where=where)
        except FileNotFoundError:
            return None

    def sha256(self, relpath: str) -> bytes | None:
        """The SHA-256 digest of the regular file ``relpath``, streamed
        (:func:`compatkit.bounded.sha256`: memory does not grow with its size), None if it is
        missing; a link as its last name is refused, as :meth:`read` refuses it."""
        try:
            fd, name = self.at(relpath)
            return bounded.sha256(name, dir_fd=fd, follow=False, where=self.full(relpath))
        except FileNotFoundError:
            return None

    def sync(self) -> None:
        """Flush the file system holding the root (one syncfs instead of an fsync per file)."""
        import ctypes  # only a commit or a rollback needs it

        libc = ctypes.CDLL(None, use_errno=True)
        if getattr(libc, "syncfs", None) is None or libc.syncfs(self.fd) != 0:
            os.sync()

    @contextlib.contextmanager
    def _named(self, relpath: str) -> Iterator[None]:
        """An OSError raised by a call on a bare name names the whole path instead."""
        try:
            yield
        except Swapped:
            raise
        except OSError as exc:
            if exc.filename is None or not os.path.isabs(str(exc.filename)):
                exc.filename = self.full(relpath)
            raise
