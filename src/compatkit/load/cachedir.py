"""compatkit's cache folder, used only when it is the user's own (read and write, no trust).

A cache entry may make a command faster; it must never decide an outcome. Three rules:

- **Ownership.** The folder, each ``KIND`` folder in it and each entry must be owned by the
  effective user and writable by nobody else; anything else is ignored (the work is done again,
  nothing is written there) with one warning line on stderr per process. A symbolic link as
  the cache folder itself is followed only if the user or root owns the link.
- **Authenticity.** Every entry carries a keyed BLAKE2b MAC over its name and content, keyed by
  a 32-byte secret in ``FOLDER/key`` (the user's own, mode 0600, created on the first store). An
  entry the user's compatkit did not write for exactly this name (planted, copied from another
  cache, or written before the secret changed) fails the check and is recomputed: no entry
  forged without the secret can change what ``apply`` writes, the environment probe, or a
  TOML table.
- **No hang, no crash.** Reads go through folder descriptors (never a path resolved twice), open
  with ``O_NOFOLLOW | O_NONBLOCK`` after an ``lstat``, accept only a regular file of at most
  :data:`MAX_ENTRY` bytes, and read at most that much: a FIFO, a device, a symlink to
  ``/dev/zero`` or a huge file is ignored. Writes are a ``0600`` temp file created exclusively
  in the entry's folder, renamed over the entry.

>>> import tempfile
>>> folder = tempfile.mkdtemp()
>>> write(folder, "toml", "x.bin", b"hello")
>>> read(folder, "toml", "x.bin")
b'hello'
>>> read(folder, "toml", "other.bin") is None
True
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys

from compatkit import bounded

MAGIC = b"compatkit-cache 2\n"
MAC_SIZE = 32
KEY_NAME = "key"
KEY_SIZE = 32
MAX_ENTRY = 64 << 20  # 64 MiB: far above any parsed diff, probe or TOML table
_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_warned: list[str] = []


class Untrusted(Exception):
    """A folder or file compatkit must not use: ``str()`` says which and why."""


def supported() -> bool:
    """Folder descriptors and owners exist here (POSIX); elsewhere the cache is off."""
    return hasattr(os, "geteuid") and os.open in os.supports_dir_fd


def warn_once(message: str) -> None:
    """One warning line on stderr, the first time this process ignores something."""
    if not _warned:
        _warned.append(message)
        sys.stderr.write(f"compatkit: warning: {message}\n")


def _problem(st: os.stat_result, what: str, others_read: bool = False) -> str | None:
    euid = os.geteuid()
    if st.st_uid != euid:
        return f"{what} is owned by uid {st.st_uid}, not by you (uid {euid})"
    if st.st_mode & (0o066 if others_read else 0o022):
        return f"{what} is {'readable or ' if others_read else ''}writable by others"
    return None


def open_folder(path: str, create: bool) -> int | None:
    """A descriptor of the cache folder ``path`` if it is the user's own; None if it is
    missing (and not ``create``). Raises :class:`Untrusted`."""
    try:
        link = os.lstat(path)
    except FileNotFoundError:
        if not create:
            return None
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
        link = os.lstat(path)
    if stat.S_ISLNK(link.st_mode) and link.st_uid not in (os.geteuid(), 0):
        raise Untrusted(f"the cache folder {path} is a symbolic link owned by uid {link.st_uid}")
    fd = os.open(path, _DIR)
    why = _problem(os.fstat(fd), f"the cache folder {path}")
    if why:
        os.close(fd)
        raise Untrusted(why)
    return fd


def _open_kind(base: int, kind: str, where: str, create: bool) -> int | None:
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(kind, 0o700, dir_fd=base)
    try:
        fd = os.open(kind, _DIR | _NOFOLLOW, dir_fd=base)
    except FileNotFoundError:
        return None
    except OSError as exc:  # a symlink (ELOOP), a file (ENOTDIR)
        raise Untrusted(f"{where}/{kind} is not a folder ({exc.strerror})") from None
    why = _problem(os.fstat(fd), f"{where}/{kind}")
    if why:
        os.close(fd)
        raise Untrusted(why)
    return fd


def _read_file(folder: int, name: str, where: str, limit: int, private: bool) -> bytes | None:
    """A regular file's bytes (at most ``limit``), None if missing. Raises Untrusted.
    Through :mod:`compatkit.bounded`, not following a link: a FIFO or a device is never
    opened, a file is checked again once open."""
    try:
        fd, st = bounded.open_regular(name, dir_fd=folder, follow=False, where=where)
    except FileNotFoundError:
        return None
    except bounded.Refused as exc:
        raise Untrusted(f"{where} is {exc.why}") from None
    try:
        why = _problem(st, where, others_read=private)
        if why:
            raise Untrusted(why)
        return bounded.read_open(fd, st, limit, where)
    except bounded.Refused as exc:
        raise Untrusted(f"{where} is {exc.why}") from None
    finally:
        os.close(fd)


def _write_file(folder: int, name: str, data: bytes, exclusive: bool = False) -> None:
    """``data`` as ``name`` in ``folder``: a 0600 temp file, then a rename (a link if
    ``exclusive``: FileExistsError when the name is taken)."""
    for _ in range(100):
        tmp = f".{name}.{os.urandom(6).hex()}.tmp"
        try:
            fd = os.open(tmp, _CREATE, 0o600, dir_fd=folder)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(name)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        if exclusive:
            os.link(tmp, name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
            os.unlink(tmp, dir_fd=folder)
        else:
            os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=folder)
        raise


def _secret(base: int, where: str, create: bool) -> bytes | None:
    """The folder's MAC key: None if there is none yet (and not ``create``)."""
    name = f"{where}/{KEY_NAME}"
    key = _read_file(base, KEY_NAME, name, KEY_SIZE, private=True)
    if key is None and create:
        with contextlib.suppress(FileExistsError):  # another process was first: read its key
            _write_file(base, KEY_NAME, os.urandom(KEY_SIZE), exclusive=True)
        key = _read_file(base, KEY_NAME, name, KEY_SIZE, private=True)
    if key is not None and len(key) != KEY_SIZE:
        raise Untrusted(f"{name} is damaged (remove it)")
    return key


def _mac(secret: bytes, kind: str, name: str, blob: bytes) -> bytes:
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - an interpreter without the built-in module
        from hashlib import blake2b
    mac = blake2b(f"{kind}/{name}\n".encode(), key=secret, digest_size=MAC_SIZE)
    mac.update(blob)
    return mac.digest()


def _equal(a: bytes, b: bytes) -> bool:
    """``a == b`` in constant time (hmac.compare_digest, without importing hashlib)."""
    try:
        from _operator import _compare_digest
    except ImportError:  # pragma: no cover
        from hmac import compare_digest as _compare_digest  # type: ignore[no-redef]
    return bool(_compare_digest(a, b))


def read(path: str, kind: str, name: str) -> bytes | None:
    """The content of entry ``kind/name`` under the cache folder ``path``, if this user's
    compatkit wrote exactly that entry; None otherwise (with a warning if it is not theirs)."""
    if not supported():
        return None
    base = kind_fd = None
    try:
        base = open_folder(path, create=False)
        if base is None:
            return None
        secret = _secret(base, path, create=False)
        kind_fd = None if secret is None else _open_kind(base, kind, path, create=False)
        if secret is None or kind_fd is None:
            return None
        raw = _read_file(kind_fd, name, f"{path}/{kind}/{name}", MAX_ENTRY, private=False)
    except Untrusted as exc:
        warn_once(f"ignoring the cache: {exc}; working without it")
        return None
    except OSError:
        return None  # unreadable: the work is just done again
    finally:
        for fd in (kind_fd, base):
            if fd is not None:
                os.close(fd)
    head = len(MAGIC) + MAC_SIZE
    if raw is None or len(raw) < head or not raw.startswith(MAGIC):
        return None
    blob = raw[head:]
    return blob if _equal(raw[len(MAGIC) : head], _mac(secret, kind, name, blob)) else None


def write(path: str, kind: str, name: str, blob: bytes) -> None:
    """Store ``blob`` as entry ``kind/name`` (with its MAC); silently nothing if the folder
    cannot be written, and nothing with a warning if it is not the user's own."""
    if not supported() or len(blob) + len(MAGIC) + MAC_SIZE > MAX_ENTRY:
        return
    base = kind_fd = None
    try:
        base = open_folder(path, create=True)
        assert base is not None
        secret = _secret(base, path, create=True)
        kind_fd = _open_kind(base, kind, path, create=True)
        if secret is not None and kind_fd is not None:
            _write_file(kind_fd, name, MAGIC + _mac(secret, kind, name, blob) + blob)
    except Untrusted as exc:
        warn_once(f"ignoring the cache: {exc}; working without it")
    except OSError:
        pass  # a read-only home, a full disk: the cache is only an optimisation
    finally:
        for fd in (kind_fd, base):
            if fd is not None:
                os.close(fd)
