"""Which paths a distribution owns, for a patch, a revert or a recovery to touch (pure).

A distribution owns the files its RECORD lists and compatkit's own files in its ``.dist-info``.
A path it does not list (a new file, a bytecode file) belongs to it only if it lands in one of
its directories:

- a new file's directory must hold a file of this distribution; a directory that does not
  exist yet is judged by its nearest existing parent. So a namespace package's shared folder
  (``nspkg/``, which no distribution lists a file of) and another distribution's portion
  (``nspkg/b/``) are refused, and so is a new top-level folder;
- a bytecode file ``d/__pycache__/m.TAG.pyc`` belongs to whoever may touch its source
  ``d/m.py``.

>>> own = Ownership({"nspkg/a/m.py", "a-1.dist-info/RECORD"}, "a-1.dist-info", lambda p: True)
>>> [own.problem(p) for p in ("nspkg/a/new.py", "nspkg/__init__.py", "nspkg/b/evil.py")]
[None, 'nspkg/__init__.py is not inside a folder of a', 'nspkg/b/evil.py is not inside a \
folder of a']
>>> own.problem("nspkg/a/__pycache__/m.cpython-311.pyc") is None
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet

from compatkit.model.paths import shown


class Ownership:
    __slots__ = ("owned", "dist_info", "name", "_exists", "_dirs")

    def __init__(
        self,
        owned: Iterable[str],  # a set (or a set view: Record.owned) is kept as it is
        dist_info: str,
        exists: Callable[[str], bool],
        name: str | None = None,  # for messages (default: from the .dist-info folder's name)
    ) -> None:
        self.owned = owned if isinstance(owned, AbstractSet) else set(owned)
        self.dist_info = dist_info
        self.name = name or dist_info.partition("-")[0]
        self._exists = exists  # whether a root-relative path exists (lstat: anything there)
        self._dirs: set[str] | None = None  # built on first need: a file it owns needs none

    def problem(self, path: str) -> str | None:
        """Why ``path`` is not this distribution's to touch (None: it is)."""
        if path.split("/", 1)[0] == self.dist_info or path in self.owned:
            return None
        folder, _, name = path.rpartition("/")
        if folder == "__pycache__" or folder.endswith("/__pycache__"):
            source = f"{folder.rpartition('/')[0]}/{name.split('.', 1)[0]}.py".lstrip("/")
            if self.problem(source) is None:  # a file of ours, or one we may create
                return None
            return (
                f"{shown(path)} is bytecode of {shown(source)}, which is not a file of {self.name}"
            )
        if self._dirs is None:
            self._dirs = {p.rpartition("/")[0] for p in self.owned if "/" in p}
        while folder and folder not in self._dirs:
            if self._exists(folder):
                return f"{shown(path)} is not inside a folder of {self.name}"
            folder = folder.rpartition("/")[0]
        if not folder:
            return f"{shown(path)} is outside {self.name}'s packages"
        return None
