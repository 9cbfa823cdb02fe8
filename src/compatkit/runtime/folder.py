"""A runtime folder, trusted and written without following links (docs/security.md, "Runtime
folders").

Trusted means: the folder, every folder above it and everything in it is owned by the
effective user or root; the folder and everything in it is writable by nobody else (no group
or other write bit); a folder above it may be writable by others only with the sticky bit
(``/tmp``); nothing in it is a symbolic link or a special file. :class:`Folder` holds the
folder open (``O_DIRECTORY | O_NOFOLLOW``) and reaches every file it reads, writes or removes
through ``dir_fd``, one name at a time with ``O_NOFOLLOW``: a link planted inside is never
followed, and nothing outside the folder is touched.

>>> import pathlib, tempfile
>>> root = pathlib.Path(tempfile.mkdtemp()) / "rt"
>>> with Folder.create(root) as f:
...     f.write("a/b.py", b"x = 1\\n")
...     f.read("a/b.py")
b'x = 1\\n'
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from compatkit import bounded
from compatkit.env.beneath import Tree, rmtree_at
from compatkit.errors import CompatkitError, UsageError
from compatkit.runtime import statfacts

TYPE_CHECKING = False

if TYPE_CHECKING:
    from types import TracebackType

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_OTHERS = stat.S_IWGRP | stat.S_IWOTH


def check_name(path: str, what: str) -> None:
    """Refuse a name with a control character (a newline would add a line to a .pth file)."""
    bad = [c for c in path if ord(c) < 32 or ord(c) == 127]
    if bad:
        raise UsageError(f"{what} {path!r} has a control character ({bad[0]!r}); choose another")


def problem(
    path: str, st: os.stat_result, above: bool = False, removing: bool = False
) -> str | None:
    """Why ``path`` (lstat ``st``) is not trusted, or None. ``above``: a folder above the root.
    ``removing``: a file or folder of a runtime folder that is only removed from (uninstall);
    write bits of others and special files (a FIFO) do not matter there, since nothing in it
    is written or read but through its descriptors, one name at a time, without following a
    link: only links and other users' files do."""
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symbolic link"
    plain = stat.S_ISDIR(st.st_mode) or (stat.S_ISREG(st.st_mode) and not above)
    if not (plain or removing):
        return f"{path} is not a regular file or folder"
    if st.st_uid not in (0, os.geteuid()):
        return f"{path} is owned by another user (uid {st.st_uid})"
    if removing and not above:
        return None
    if st.st_mode & _OTHERS and not (above and st.st_mode & stat.S_ISVTX):
        return f"{path} is writable by others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


class Untrusted(CompatkitError):
    """A runtime folder (or a part of it, or a folder above it) that is not trusted."""


def _refuse(why: str) -> Untrusted:
    return Untrusted(f"refusing the runtime folder: {why}; use a folder only you can write")


def check_above(root: Path) -> None:
    """Every folder above ``root`` (absolute, links resolved) is trusted."""
    for above in reversed(root.parents):
        why = problem(str(above), os.lstat(above), above=True)
        if why:
            raise _refuse(why)


def resolve(given: Path) -> Path:
    """``given`` made absolute, the links above it resolved; refused if it is a link itself."""
    check_name(str(given), "--dir")
    path = Path(os.path.abspath(given))
    if path.is_symlink():
        raise _refuse(f"{path} is a symbolic link")
    return Path(os.path.realpath(path.parent)) / path.name


class Folder:
    """An open, trusted runtime folder; every path below is relative to it. Its files are
    reached through :class:`compatkit.env.beneath.Tree`, the one descriptor walk: each folder
    on the way opened in its parent's descriptor with ``O_NOFOLLOW | O_DIRECTORY``, folders
    made owner-only writable (755)."""

    def __init__(self, root: Path, fd: int, removing: bool = False) -> None:
        self.root, self.removing = root, removing
        self.tree = Tree(root, fd, dir_mode=0o755)

    @property
    def fd(self) -> int:
        return self.tree.fd

    @classmethod
    def open(cls, root: Path, whole: bool = True, removing: bool = False) -> Folder:
        """The existing folder ``root`` (absolute, resolved), checked with the folders above
        it; ``whole``: everything in it too (else call :meth:`check` before trusting it).
        ``removing``: checked as :func:`problem` does for a folder only removed from."""
        check_name(str(root), "the runtime folder")
        check_above(root)
        try:
            fd = os.open(root, _DIR)
        except FileNotFoundError:
            raise UsageError(f"{root}: no such folder") from None
        except OSError as exc:
            raise _refuse(f"{root} cannot be opened as a folder ({exc.strerror})") from None
        folder = cls(root, fd, removing)
        try:
            why = problem(str(root), os.fstat(fd), removing=removing)
            if why:
                raise _refuse(why)
            if whole:
                folder.check()
        except BaseException:
            folder.close()
            raise
        return folder

    def check(self) -> None:
        """Refuse the folder if anything in it is a link, special, foreign or others' to write."""
        why = self._walk(self.fd, str(self.root))
        if why:
            raise _refuse(why)

    @classmethod
    def create(cls, root: Path) -> Folder:
        """:meth:`open`, making ``root`` first (owner-only writable) if it is not there."""
        if not os.path.lexists(root):
            existing = next(p for p in root.parents if p.exists())
            check_above(existing / "-")  # before anything is made below them
            root.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
            os.mkdir(root, 0o755)
            os.chmod(root, 0o755, follow_symlinks=False)
        return cls.open(root)

    def _walk(self, fd: int, where: str) -> str | None:
        with os.scandir(fd) as entries:
            found = sorted(entries, key=lambda e: e.name)
        for entry in found:
            path = f"{where}/{entry.name}"
            st = entry.stat(follow_symlinks=False)
            why = problem(path, st, removing=self.removing)
            if why:
                return why
            if stat.S_ISDIR(st.st_mode):
                sub = os.open(entry.name, _DIR, dir_fd=fd)
                try:
                    why = self._walk(sub, path)
                finally:
                    os.close(sub)
                if why:
                    return why
        return None

    def __enter__(self) -> Folder:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self.tree.close()

    def write(self, relpath: str, data: bytes) -> None:
        """``relpath`` holds ``data`` (mode 644): a temp file beside it, then os.replace."""
        self.tree.write(relpath, data, 0o644)

    def mkdir(self, name: str) -> None:
        """The folder ``name`` (mode 755) at the top of the folder, made if missing."""
        with contextlib.suppress(FileExistsError):
            self.tree.mkdir(name)

    def read(self, relpath: str, limit: int = bounded.METADATA) -> bytes | None:
        """The bytes of ``relpath``, or None if it is not there (a link is refused). A file
        that is not a regular one (a user's FIFO ``sitecustomize.py``) or is larger than
        ``limit`` is never read: :class:`compatkit.bounded.Refused`, one line, exit 1."""
        return self.tree.read(relpath, limit)

    def sha256(self, relpath: str) -> str | None:
        """The hex SHA-256 of ``relpath``, streamed (memory does not grow with its size), or
        None if it is not there; a link or a special file: :class:`compatkit.bounded.Refused`."""
        digest = self.tree.sha256(relpath)
        return None if digest is None else digest.hex()

    def lstat(self, relpath: str) -> os.stat_result:
        st = self.tree.lstat(relpath)
        if st is None:
            raise FileNotFoundError(
                errno.ENOENT, os.strerror(errno.ENOENT), self.tree.full(relpath)
            )
        return st

    def facts(self, relpath: str, expected: bytes) -> statfacts.Facts | None:
        """The stat facts that prove ``relpath`` holds ``expected`` (runtime.statfacts)."""
        fd, name = self.tree.at(relpath)
        f = os.open(name, _FILE, dir_fd=fd)
        try:
            return statfacts.of_fd(f, expected)
        finally:
            os.close(f)

    def names(self, relpath: str = "") -> list[str]:
        try:
            return sorted(os.listdir(self.tree.folder(relpath)))
        except FileNotFoundError:
            return []

    def remove(self, relpath: str) -> bool:
        """Remove the file or folder ``relpath`` (a folder with all in it); False if absent."""
        try:
            fd, name = self.tree.at(relpath)
            st = os.lstat(name, dir_fd=fd)
        except FileNotFoundError:
            return False
        if not stat.S_ISDIR(st.st_mode):
            self.tree.unlink(relpath)
            return True
        self.tree.forget(relpath)
        try:
            rmtree_at(fd, name)
        except FileNotFoundError:
            return False
        return True
