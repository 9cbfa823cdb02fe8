"""TOML files parsed once: the result is cached as JSON, keyed by the file's SHA-256.

Importing ``tomllib`` costs ≈ 12 ms (it pulls in ``typing``, ``datetime`` and ``string``), the
largest single item in the start-up of ``status``, ``verify`` and ``explain`` once the rest
was trimmed (docs/benchmarks.md, P1). ``patchset.toml`` and ``pyproject.toml`` change rarely,
so the parsed table is kept under ``$COMPATKIT_CACHE_DIR`` (default
``$XDG_CACHE_HOME/compatkit``, else ``~/.cache/compatkit``). The key is the content hash, so a
cached entry can never be stale; a missing, unreadable or corrupt entry just means a parse.
Tables that JSON cannot hold exactly (dates, NaN) are not cached. ``COMPATKIT_NO_CACHE=1``
turns the cache off; a read-only or missing home directory turns it off silently.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from pathlib import Path


def cache_dir() -> Path | None:
    if os.environ.get("COMPATKIT_NO_CACHE"):
        return None
    explicit = os.environ.get("COMPATKIT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "compatkit"


def loads(raw: bytes) -> dict[str, object]:
    """``tomllib.loads(raw.decode())``, from the cache when this exact content was seen.

    Raises UnicodeDecodeError or tomllib.TOMLDecodeError (a ValueError) as tomllib would.
    """
    folder = cache_dir()
    entry = None
    if folder is not None:
        entry = folder / "toml" / f"{hashlib.sha256(raw).hexdigest()}.json"
        try:
            cached = json.loads(entry.read_bytes())
            if isinstance(cached, dict):
                return cached
        except (OSError, ValueError):
            pass
    data = _parse(raw)
    if entry is not None:
        _store(entry, data)
    return data


def _parse(raw: bytes) -> dict[str, object]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib.loads(raw.decode("utf-8"))


def _store(entry: Path, data: dict[str, object]) -> None:
    try:
        text = json.dumps(data)
        if json.loads(text) != data:
            return  # NaN: not exactly representable
    except (TypeError, ValueError):
        return  # dates and times
    tmp = entry.with_name(f".{entry.name}.{os.getpid()}.tmp")
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text)
        os.replace(tmp, entry)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
