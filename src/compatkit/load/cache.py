"""A small start-up cache: parsed TOML tables, ``--python`` probe results and the read-only
commands' remembered answers (:mod:`compatkit.model.answers`), as marshal data.

Each costs more than the rest of a read-only command: importing ``tomllib`` (it pulls in
``datetime`` and ``string``), probing another interpreter (a second Python start-up), importing
packaging and compiling a patched module (docs/benchmarks.md, P1).

Entries live under ``$COMPATKIT_CACHE_DIR`` (default ``$XDG_CACHE_HOME/compatkit``, else
``~/.cache/compatkit``), one file per key. Keys are content hashes (TOML) or a hash of
everything that could change the answer (probe: the interpreter's path, its symlink and binary
``stat``, ``pyvenv.cfg``, the kernel); the answers are one table per compatkit, packaging and
Python version, each question holding all its answer depends on. So an entry is never stale;
a missing, unreadable or corrupt one just means doing the work again. Entries are ``marshal``
data (marshal is built in, where ``json`` is imported, and reads faster); values it cannot hold
exactly (dates, NaN) are not cached. ``COMPATKIT_NO_CACHE=1`` turns the cache off; an
unwritable home directory turns it off silently.

Nothing cached decides an outcome: :func:`read` serves an entry only from a folder the user
owns and nobody else can write, and only with a valid MAC under the user's own secret, so an
entry is exactly what this user's compatkit computed from the same input (docs/security.md,
"The cache"); the remembered answers serve only commands that write nothing.

The folder (:func:`read`, :func:`write`) is used only when it is the user's own. A cache entry
may make a command faster; it must never decide an outcome. Three rules:

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
import marshal
import os
import stat
import sys
from hashlib import sha256
from pathlib import Path

from compatkit import bounded

TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Callable

MAGIC = b"compatkit-cache 2\n"
MAC_SIZE = 32
KEY_NAME = "key"
KEY_SIZE = 32
MAX_ENTRY = 64 << 20  # 64 MiB: far above any parsed diff, probe or TOML table
_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_warned: list[str] = []
_sink: list[Callable[[str], None]] = []  # where warn_once's line goes (tell): the CLI's


class Untrusted(Exception):
    """A folder or file compatkit must not use: ``str()`` says which and why."""


def supported() -> bool:
    """Folder descriptors and owners exist here (POSIX); elsewhere the cache is off."""
    return hasattr(os, "geteuid") and os.open in os.supports_dir_fd


def tell(warn: Callable[[str], None]) -> None:
    """Where the warning that the cache is ignored goes (the command line: stderr); without
    it, nowhere: no layer below the command line prints."""
    _sink[:] = [warn]


def warn_once(message: str) -> None:
    """One warning, the first time this process ignores something (:func:`tell`)."""
    if not _warned:
        _warned.append(message)
        for warn in _sink:
            warn(message)


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
    from hashlib import blake2b

    mac = blake2b(f"{kind}/{name}\n".encode(), key=secret, digest_size=MAC_SIZE)
    mac.update(blob)
    return mac.digest()


def _equal(a: bytes, b: bytes) -> bool:
    """``a == b`` in constant time."""
    from hmac import compare_digest

    return compare_digest(a, b)


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


def base_dir() -> Path:
    """compatkit's cache folder (downloaded wheels live here too, see compatkit.delivery.wheels)."""
    explicit = os.environ.get("COMPATKIT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "compatkit"


def cache_dir() -> Path | None:
    """Where start-up entries go; None when COMPATKIT_NO_CACHE is set."""
    return None if os.environ.get("COMPATKIT_NO_CACHE") else base_dir()


def entry(kind: str, key: bytes) -> Path | None:
    folder = cache_dir()
    return None if folder is None else folder / kind / f"{sha256(key).hexdigest()}.bin"


def load(path: Path | None) -> dict[str, object] | None:
    """The entry's table, or None: missing, unreadable, not ours, cut short or corrupt."""
    if path is None:
        return None
    raw = read(str(path.parent.parent), path.parent.name, path.name)
    if raw is None:
        return None
    try:
        if sys.version_info >= (3, 13):  # entries hold plain data: never a code object
            cached = marshal.loads(raw, allow_code=False)
        else:
            cached = marshal.loads(raw)
    except (EOFError, ValueError, TypeError):
        return None
    return cached if isinstance(cached, dict) else None


def store(path: Path | None, data: dict[str, object]) -> None:
    if path is None:
        return
    try:
        blob = marshal.dumps(data, 4)
        if marshal.loads(blob) != data:
            return  # NaN: not equal to itself, so never served
    except ValueError:
        return  # dates and times: not marshal types
    write(str(path.parent.parent), path.parent.name, path.name, blob)


def toml_loads(raw: bytes) -> dict[str, object]:
    """``tomllib.loads(raw.decode())``, from the cache when this exact content was seen.

    Raises UnicodeDecodeError or tomllib.TOMLDecodeError (both ValueErrors) as tomllib would.
    """
    path = entry("toml", raw)
    cached = load(path)
    if cached is not None:
        return cached
    data = _parse_toml(raw)
    store(path, data)
    return data


def _parse_toml(raw: bytes) -> dict[str, object]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib.loads(raw.decode("utf-8"))


# At most this many remembered answers in one table (a real stack holds a few hundred
# requirements and modules); a table that grows past it starts again from one run's answers.
MAX_ANSWERS = 20_000
_answers_at: list[Path | None] = [None]  # where this process's answers go
_at_exit: list[bool] = []


def remember_answers(on: bool) -> None:
    """Turn :mod:`compatkit.model.answers` on with the answers stored for this compatkit,
    packaging and Python (the read-only commands), or off (every other command: all is
    computed). What this process adds is stored when it exits."""
    from compatkit.model import answers

    _store_answers()  # a previous command of this process (tests call main() repeatedly)
    if not on:
        answers.use(None)
        return
    import packaging  # its __init__ alone: the version

    from compatkit import __version__

    key = f"{answers.FORMAT}\0{__version__}\0{packaging.__version__}\0{sys.version}"
    path = entry("answers", key.encode())
    table = load(path) or {}
    answers.use(table)
    _answers_at[0] = path
    if not _at_exit:
        import atexit

        atexit.register(_store_answers)
        _at_exit.append(True)


def _store_answers() -> None:
    from compatkit.model import answers

    path, _answers_at[0] = _answers_at[0], None
    new = answers.learned()
    if path is None or not new or not path.parent.parent.is_dir():
        return  # nothing new, or the cache folder is gone (a test's temporary one)
    table = answers.known()
    store(path, table if len(table) <= MAX_ANSWERS else dict(new))
    new.clear()
