"""The read side of a target distribution, as the planner sees it: a small files interface.

:class:`compatkit.env.plan.Overlay` asks these questions and nothing else, so planning an apply or
a revert runs the same on the real site-packages (:class:`DiskFiles`) and on a dictionary
(the in-memory fake of ``tests/test_plan.py``), as pypa/installer tests its core with a fake
source. Paths are relative to the distribution's root (site-packages), with ``/``.

>>> import pathlib, tempfile
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> _ = (root / "m.py").write_bytes(b"x = 1\\n")
>>> files = DiskFiles(root)
>>> files.read("m.py"), files.read("gone.py"), files.is_file("m.py"), files.listdir("nope")
(b'x = 1\\n', None, True, [])
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from compatkit import bounded
from compatkit.errors import CompatkitError
from compatkit.model.paths import quoted, resolve_inside
from compatkit.model.records import record_hash

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Protocol

    class Files(Protocol):
        """What planning reads (see :class:`DiskFiles` for the meaning of each)."""

        def read(self, relpath: str) -> bytes | None: ...
        def is_file(self, relpath: str) -> bool: ...
        def lexists(self, relpath: str) -> bool: ...
        def listdir(self, relpath: str) -> list[str]: ...
        def mtime_ns(self, relpath: str) -> int: ...
        def mode(self, relpath: str) -> int: ...
        def check_inside(self, relpath: str, dirs_ok: set[str]) -> None: ...


class DiskFiles:
    """The files below ``root``, read with plain ``os`` calls (pathlib costs µs per call)."""

    __slots__ = ("_root",)

    def __init__(self, root: Path | str) -> None:
        self._root = str(root)

    def _full(self, relpath: str) -> str:
        if relpath.startswith("/") or ".." in relpath.split("/"):
            raise CompatkitError(f"refused path {quoted(relpath)}: it leaves site-packages")
        return os.path.join(self._root, relpath)

    def read(self, relpath: str) -> bytes | None:
        """The bytes at ``relpath``, None if absent; never outside the root. Through
        :func:`compatkit.bounded.read`: a FIFO, a device or a file over its bound (a
        ``.dist-info``'s own files such as RECORD: ``bounded.METADATA``; any other:
        ``bounded.INSTALLED``) raises :class:`compatkit.bounded.Refused`, naming it."""
        full = self._full(relpath)
        folder = relpath.rpartition("/")[0]
        own = folder.endswith(".dist-info") and "/" not in folder  # RECORD, METADATA, ...
        limit = bounded.METADATA if own else bounded.INSTALLED
        try:
            return bounded.read(full, limit)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except (OSError, ValueError) as exc:  # a directory, a name too long, a NUL, ...
            reason = getattr(exc, "strerror", None) or str(exc)
            raise CompatkitError(f"cannot read {quoted(relpath)}: {reason}") from None

    def hash(
        self, relpath: str, threads: bool = False, advance: Callable[[int], None] | None = None
    ) -> str | None:
        """The RECORD form (``sha256=…``) of the hash of the file at ``relpath``, None if
        absent: streamed (:func:`compatkit.bounded.sha256`), so memory does not grow with its
        size, and with no size bound. A FIFO or a device raises
        :class:`compatkit.bounded.Refused`, naming it. ``threads``: see
        :func:`compatkit.model.records.hash_bytes`; ``advance``: told each piece's size
        (:func:`compatkit.bounded.sha256_open`)."""
        try:
            return record_hash(
                bounded.sha256(self._full(relpath), threads=threads, advance=advance)
            )
        except (FileNotFoundError, NotADirectoryError):
            return None
        except (OSError, ValueError) as exc:  # a directory, a name too long, a NUL, ...
            reason = getattr(exc, "strerror", None) or str(exc)
            raise CompatkitError(f"cannot read {quoted(relpath)}: {reason}") from None

    def size(self, relpath: str) -> int:
        """Its size in bytes (0: absent or not a file), for hashing the largest first."""
        try:
            return os.stat(self._full(relpath)).st_size
        except (OSError, ValueError):
            return 0

    def is_file(self, relpath: str) -> bool:
        return os.path.isfile(self._full(relpath))

    def lexists(self, relpath: str) -> bool:
        """Whether anything (a dangling symlink too) has this name."""
        return os.path.lexists(self._full(relpath))

    def listdir(self, relpath: str) -> list[str]:
        """The names in a directory; [] if it is missing or not a directory."""
        try:
            return os.listdir(self._full(relpath))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def mtime_ns(self, relpath: str) -> int:
        return os.stat(self._full(relpath)).st_mtime_ns

    def mode(self, relpath: str) -> int:
        """Its permission bits (never set-user-ID, set-group-ID, sticky: no installer sets them)."""
        return os.stat(self._full(relpath)).st_mode & 0o777

    def check_inside(self, relpath: str, dirs_ok: set[str]) -> None:
        """Refuse a path that is not plain, or that passes a symlink or a non-directory."""
        resolve_inside(Path(self._root), relpath, dirs_ok)
