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

Nothing cached decides an outcome: :mod:`compatkit.load.cachedir` serves an entry only from a
folder the user owns and nobody else can write, and only with a valid MAC under the user's own
secret, so an entry is exactly what this user's compatkit computed from the same input
(docs/security.md, "The cache"); the remembered answers serve only commands that write nothing.
"""

from __future__ import annotations

import marshal
import os
import sys
from pathlib import Path

from compatkit.digest import sha256


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
    from compatkit.load import cachedir

    raw = cachedir.read(str(path.parent.parent), path.parent.name, path.name)
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
    from compatkit.load import cachedir

    cachedir.write(str(path.parent.parent), path.parent.name, path.name, blob)


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


# At most this many remembered answers in one table (a real stack's site-packages holds a few
# hundred distribution names); a table that grows past it starts again from one run's answers.
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
