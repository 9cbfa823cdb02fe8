"""Every file compatkit writes, in site-packages or outside it, is published atomically.

:func:`write` puts the bytes in a temp file beside the target (created exclusively, with an
unpredictable name, never through a symlink: ``O_CREAT | O_EXCL | O_NOFOLLOW``), then renames
it over the target with ``os.replace``. Readers see the old file or the new one, never a torn
one; a hardlink the target shares (uv's cache) is never written through; and a file or FIFO
planted at a guessable temp name cannot capture the write. With ``exclusive=True`` the target
must not exist (a new patch file, a new smoke stub): the temp file is linked to its name,
which fails if that name is taken, so two writers never overwrite each other. With
``dir_fd``, ``path`` is a name in the folder open as ``dir_fd`` and every call is made relative
to it (``openat``, ``renameat``): a folder swapped for a link cannot redirect the write
(:mod:`compatkit.env.beneath` walks site-packages that way).

>>> import pathlib, tempfile
>>> path = pathlib.Path(tempfile.mkdtemp()) / "report.json"
>>> write(path, b"{}\\n")
>>> path.read_bytes(), [p.name for p in path.parent.iterdir()]
(b'{}\\n', ['report.json'])
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

TMP_SUFFIX = ".compatkit-tmp"
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
_umask: int | None = None


def tmp_prefix(path: str) -> tuple[str, str]:
    """The directory and name prefix of ``path``'s temp files (``.NAME.<random>.compatkit-tmp``)."""
    head, tail = os.path.split(path)
    return head, f".{tail}."


def _default_mode() -> int:
    """What a plain ``open(path, "w")`` would give a new file: 0o666 less the umask."""
    global _umask
    if _umask is None:
        _umask = os.umask(0o022)
        os.umask(_umask)
    return 0o666 & ~_umask


def write(
    path: str | Path,
    data: bytes,
    mode: int | None = None,  # None: keep the target's mode, or the umask default if new
    mtime_ns: int | None = None,
    exclusive: bool = False,
    sync: bool = False,  # fsync before the rename (callers that syncfs at the end skip it)
    dir_fd: int | None = None,  # ``path`` is a name in this open folder
) -> None:
    path = str(path)
    head, prefix = tmp_prefix(path)
    if mode is None:
        try:
            mode = os.stat(path, dir_fd=dir_fd).st_mode & 0o7777
        except FileNotFoundError:
            mode = _default_mode()
    tmp, fd = _create(head, prefix, dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, mode)
            if mtime_ns is not None:
                os.utime(fd, ns=(mtime_ns, mtime_ns))
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        if exclusive:
            os.link(
                tmp, path, src_dir_fd=dir_fd, dst_dir_fd=dir_fd
            )  # FileExistsError if the name is taken
            os.unlink(tmp, dir_fd=dir_fd)
        else:
            os.replace(tmp, path, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def _create(head: str, prefix: str, dir_fd: int | None = None) -> tuple[str, int]:
    """A new, empty temp file beside the target, open for writing (never an existing name)."""
    for _ in range(100):
        name = f"{prefix}{os.urandom(6).hex()}{TMP_SUFFIX}"
        tmp = name if dir_fd is not None and not head else os.path.join(head or ".", name)
        try:
            return tmp, os.open(tmp, _FLAGS, 0o600, dir_fd=dir_fd)
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temp name beside {prefix[1:-1]} in {head}")


def temp_file(path: str | Path) -> tuple[str, int]:
    """A new temp file beside ``path``, open for writing, with the mode :func:`write` would
    give ``path``: for a file written in pieces (a wheel of gigabytes). The caller closes it,
    then renames it over ``path`` (``os.replace``) or removes it."""
    path = str(path)
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = _default_mode()
    tmp, fd = _create(*tmp_prefix(path))
    try:
        os.fchmod(fd, mode)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    return tmp, fd


def write_text(path: str | Path, text: str, exclusive: bool = False) -> None:
    """``text`` as UTF-8 (lone surrogates kept as the bytes they stand for), LF as given."""
    write(path, text.encode("utf-8", "surrogateescape"), exclusive=exclusive, sync=True)


def remove_temps(path: str, dir_fd: int | None = None) -> None:
    """Delete the temp files an interrupted :func:`write` of ``path`` left (regular files only);
    with ``dir_fd``, ``path`` is a name in that open folder."""
    head, prefix = tmp_prefix(path)
    try:
        names = os.listdir(dir_fd if dir_fd is not None and not head else head or ".")
    except (FileNotFoundError, NotADirectoryError):
        return
    for name in names:
        if name.startswith(prefix) and name.endswith(TMP_SUFFIX):
            full = name if dir_fd is not None and not head else os.path.join(head, name)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(full, dir_fd=dir_fd)  # a symlink is unlinked itself, never followed


def copy_tree(source: Path, dest: Path, skip: tuple[str, ...] = ("__pycache__",)) -> None:
    """Copy the regular files below ``source`` into ``dest``, each with :func:`write` (keeping
    its mode); symlinks and the folders named in ``skip`` are left out."""
    for folder, dirs, names in os.walk(source):
        dirs[:] = [d for d in dirs if d not in skip]
        target = dest / Path(folder).relative_to(source)
        target.mkdir(parents=True, exist_ok=True)
        for name in names:
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink():
                write(target / name, path.read_bytes(), path.stat().st_mode & 0o7777, sync=True)
