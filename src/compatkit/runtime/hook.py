"""compatkit's runtime-mode import hook: serve prepared, patched module sources at import time.

This file is copied into a runtime directory as ``_compatkit_hook_<sha>.py`` and imported by
the ``sitecustomize.py`` (or ``.pth`` / ``.start`` file) there, in an interpreter that may not
have compatkit installed: it uses the standard library only, and imports nothing heavy at
start-up (``marshal`` and ``importlib.machinery``; ``hashlib``, ``linecache`` and
``importlib.util`` only when a patched module is first imported).

Everything costly was done by ``compatkit exec`` / ``compatkit runtime install`` in the parent
(version and requirement checks, the diffs applied by compatkit's engine): the runtime
directory holds the patched sources and a table (``table.marshal``) of, for each module, the
installed file, the SHA-256 of the bytes the diffs were applied to, and the patched file. At
import this hook only checks that the recorded ``.dist-info`` folders still exist (same
versions installed), that the module still resolves to the recorded file and that the file
still hashes to the recorded original; anything else is refused with an ImportError (also
printed to stderr, so a caller's ``except ImportError`` cannot hide it), never imported
unpatched. A module a patch deletes is hidden (ModuleNotFoundError); one it creates is served.

Tracebacks, ``inspect.getsource`` and ``linecache`` see the patched source (registered in
``linecache`` with no mtime, which ``checkcache`` keeps; ``updatecache`` re-registers it
after a ``clearcache``). Bytecode goes to the runtime directory, never ``__pycache__`` in
site-packages, under a cache tag with the patched file's hash (``cpython-311-ck<hash>``) as
checked-hash pycs. This file writes only those pycs, with its own temp-file + ``os.replace``
(compatkit.atomic is not importable here).
"""

from __future__ import annotations

import marshal
import os
import sys
from importlib.machinery import ModuleSpec, PathFinder, SourceFileLoader

TYPE_CHECKING = False  # not typing's: typing costs a bare python +19 ms CPU on its 18
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import CodeType
    from typing import Any

    Entry = dict[str, Any]

DATA = "_compatkit_runtime"
_AGAIN = (
    "run 'compatkit exec' or 'compatkit runtime install' again to re-check the patches "
    "against this environment"
)
_lines: dict[
    str, tuple[int, list[str]]
] = {}  # filename -> (size, lines) of every patched module loaded


class RuntimeRefusal(ImportError):
    """A patched module this hook will not import (the environment changed since prepare)."""


def _refuse(fullname: str, reason: str) -> RuntimeRefusal:
    message = f"compatkit runtime: refusing to import {fullname}: {reason}"
    print(message, file=sys.stderr)  # loud even where the caller catches ImportError
    return RuntimeRefusal(message, name=fullname)


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _same_file(a: str, b: str) -> bool:
    return a == b or os.path.realpath(a) == os.path.realpath(b)


class Finder:
    """A meta path finder for the modules of one runtime directory's table."""

    def __init__(self, root: str, table: dict[str, Any]) -> None:
        self.compatkit_root = root
        self.modules: dict[str, Entry] = table["modules"]
        self.guards: dict[str, list[tuple[str, str]]] = table["guards"]
        self.checked: set[str] = set()  # patchsets whose guards passed

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: object = None
    ) -> ModuleSpec | None:
        entry = self.modules.get(fullname)
        if entry is None:
            return None
        self._check_guards(fullname, entry)
        real = PathFinder.find_spec(fullname, path)
        where = real.origin if real is not None else None
        if entry["original"] is None:  # created by a patch: nothing may be installed there
            if where is not None:
                reason = f"{where} exists, though {entry['label']} creates it; {_AGAIN}"
                raise _refuse(fullname, reason)
        elif where is None or not _same_file(where, entry["origin"]):
            found = "nothing" if where is None else where
            reason = f"it resolves to {found}, not {entry['origin']} ({entry['label']}); {_AGAIN}"
            raise _refuse(fullname, reason)
        elif _sha256(_read(where)) != entry["original"]:
            reason = f"{where} changed since {entry['label']} was prepared for it; {_AGAIN}"
            raise _refuse(fullname, reason)
        if entry["patched"] is None:  # hidden, as intended: not a refusal, so not printed
            message = f"No module named {fullname!r} ({entry['label']} deletes it)"
            raise ModuleNotFoundError(message, name=fullname)
        return self._spec(fullname, entry, real)

    def _check_guards(self, fullname: str, entry: Entry) -> None:
        for name in entry["patchsets"]:
            if name in self.checked:
                continue
            for info, what in self.guards[name]:
                if not os.path.isdir(info):
                    reason = f"{name} was prepared for {what}, which is no longer installed; "
                    raise _refuse(fullname, reason + _AGAIN)
            self.checked.add(name)

    def _spec(self, fullname: str, entry: Entry, real: ModuleSpec | None) -> ModuleSpec:
        origin = entry["origin"]
        patched = os.path.join(self.compatkit_root, DATA, "src", entry["patched"])
        pyc = os.path.join(self.compatkit_root, DATA, "pycache", _pyc_name(entry))
        loader = PatchedLoader(fullname, origin, patched, pyc, entry["sha"])
        spec = ModuleSpec(fullname, loader, origin=origin, is_package=entry["package"])
        if entry["package"]:
            spec.submodule_search_locations = (
                list(real.submodule_search_locations)
                if real is not None and real.submodule_search_locations is not None
                else [os.path.dirname(origin)]
            )
        spec.has_location = True
        spec.cached = pyc
        return spec

    def invalidate_caches(self) -> None:
        self.checked.clear()


def _pyc_name(entry: Entry) -> str:
    stem = entry["patched"][: -len(".py")]
    tag = sys.implementation.cache_tag or "python"
    return f"{stem}.{tag}-ck{entry['sha'][:16]}.pyc"


class PatchedLoader(SourceFileLoader):
    """The installed file's loader, reading the prepared patched source instead of it."""

    def __init__(self, fullname: str, path: str, patched: str, pyc: str, sha: str) -> None:
        super().__init__(fullname, path)
        self.patched, self.pyc, self.sha = patched, pyc, sha

    def get_data(self, path: str) -> bytes:
        if path == self.path:
            data = _read(self.patched)
            if _sha256(data) != self.sha:
                reason = f"{self.patched} is not the patched source compatkit wrote; {_AGAIN}"
                raise _refuse(self.name, reason)
            return data
        return super().get_data(path)

    def get_code(self, fullname: str) -> CodeType:
        source = self.get_data(self.path)
        register_lines(self.path, source)
        code = _load_pyc(self.pyc, source)
        if code is None:
            code = self.source_to_code(source, self.path)
            if not sys.dont_write_bytecode:
                _store_pyc(self.pyc, source, code)
        return code


def _pyc_header(source: bytes) -> bytes:
    from importlib.util import MAGIC_NUMBER, source_hash

    return MAGIC_NUMBER + (0b11).to_bytes(4, "little") + source_hash(source)


def _load_pyc(pyc: str, source: bytes) -> CodeType | None:
    """The code object in ``pyc`` if it is a checked-hash pyc of exactly ``source``."""
    try:
        data = _read(pyc)
    except OSError:
        return None
    header = _pyc_header(source)
    if data[: len(header)] != header:
        return None
    try:
        code: CodeType = marshal.loads(memoryview(data)[len(header) :])
    except (EOFError, ValueError, TypeError):
        return None
    return code


def _store_pyc(pyc: str, source: bytes, code: CodeType) -> None:
    data = _pyc_header(source) + marshal.dumps(code)
    head, tail = os.path.split(pyc)
    try:
        os.makedirs(head, exist_ok=True)
        tmp = os.path.join(head, f".{tail}.{os.urandom(6).hex()}.compatkit-tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, pyc)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass  # a read-only runtime directory: compile at every start, as Python does


def register_lines(filename: str, source: bytes) -> None:
    """Put the patched lines of ``filename`` in linecache, and keep them there."""
    import io
    import linecache
    from importlib.util import decode_source

    lines = io.StringIO(decode_source(source)).readlines()
    _lines[filename] = (len(source), lines)
    linecache.cache[filename] = (len(source), None, lines, filename)
    if not getattr(linecache.updatecache, "compatkit", False):
        linecache.updatecache = _updatecache(linecache.updatecache)


def _updatecache(original: Callable[..., list[str]]) -> Callable[..., list[str]]:
    import linecache

    def updatecache(filename: str, module_globals: Any = None) -> list[str]:
        if filename in _lines:  # after linecache.clearcache(): the patched lines again
            size, lines = _lines[filename]
            linecache.cache[filename] = (size, None, lines, filename)
            return lines
        return original(filename, module_globals)

    setattr(updatecache, "compatkit", True)  # noqa: B010 - a function attribute
    return updatecache


def start(root: str | None = None) -> None:
    """Activate the runtime directory ``root`` (default: this file's); a second call is a no-op."""
    root = os.path.abspath(root or os.path.dirname(__file__))
    if any(getattr(f, "compatkit_root", None) == root for f in sys.meta_path):
        return
    table = marshal.loads(_read(os.path.join(root, DATA, "table.marshal")))
    sys.meta_path.insert(0, Finder(root, table))


def chain_sitecustomize(own_file: str) -> None:
    """Run the ``sitecustomize`` that this directory's one shadows (later on sys.path)."""
    own = os.path.dirname(os.path.abspath(own_file))
    entries = [os.path.abspath(p or os.getcwd()) for p in sys.path]
    if own not in entries:
        return
    rest = sys.path[entries.index(own) + 1 :]
    spec = PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = type(sys)("sitecustomize")
    module.__spec__, module.__file__ = spec, spec.origin
    spec.loader.exec_module(module)
