"""compatkit's runtime-mode import hook: serve prepared, patched module sources at import time.

This file is copied into a runtime directory as ``_compatkit_hook_<sha>.py`` and imported by
the ``sitecustomize.py`` (or ``.pth`` / ``.start`` file) there, in an interpreter that may not
have compatkit installed: it uses the standard library only, and imports nothing heavy at
start-up (``marshal``, and the import system's own frozen modules, never the ``importlib``
package; the interpreter's small SHA-256 module when a patched module is first imported;
``linecache`` never: the patched lines are put there when something else imports it).

Everything costly was done by ``compatkit exec`` / ``compatkit runtime install`` in the parent
(version and requirement checks, the diffs applied by compatkit's engine): the runtime
directory holds the patched sources and a table (``table.marshal``) of, for each module, the
installed file, the SHA-256 of the bytes the diffs were applied to, and the patched file. At
import this hook only checks that the recorded ``.dist-info`` folders still exist (same
versions installed), that the module still resolves to the recorded file and that the file
still hashes to the recorded original; anything else is refused with a RuntimeRefusal, a
RuntimeError (not an ImportError, so ``except ImportError`` cannot hide it; also printed to
stderr, so ``except Exception`` cannot either), never imported unpatched. A module a patch
deletes is hidden (ModuleNotFoundError); one it creates is served.

:func:`start` refuses the whole start (one line on stderr, exit status 1) when the hook
cannot work: the folder is not trusted (a link, another user's, writable by others), the
table is missing or damaged or lacks a module the start-up code names, a module of the table
was imported before the hook ran (another ``.pth`` file), or another runtime folder's hook
patches the same module. Each of these would otherwise import a module unpatched.

Tracebacks, ``inspect.getsource`` and ``linecache`` see the patched source (registered in
``linecache`` with no mtime, which ``checkcache`` keeps; ``updatecache`` re-registers it
after a ``clearcache``). Bytecode goes to the runtime directory, never ``__pycache__`` in
site-packages, under a cache tag with the patched file's hash (``cpython-311-ck<hash>``) as
checked-hash pycs. This file writes only those pycs, with its own temp-file + ``os.replace``
(compatkit.atomic is not importable here).
"""

import marshal
import os
import stat
import sys
from _frozen_importlib import ModuleSpec
from _frozen_importlib_external import MAGIC_NUMBER, PathFinder, SourceFileLoader

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import CodeType
    from typing import Any

    Entry = dict[str, Any]
    Facts = tuple[int, int, int, int, int]  # size, mtime_ns, ctime_ns, ino, dev

DATA = "_compatkit_runtime"
_AGAIN = (
    "run 'compatkit exec' or 'compatkit runtime install' again to re-check the patches "
    "against this environment"
)
_WRITABLE = " is writable by others"  # the end of _problem's reason for a mode bit
_sources: dict[str, bytes] = {}  # filename -> patched source of every patched module loaded

# The CPython versions whose import system, ``site`` and pyc format this hook was checked
# against (docs/architecture.md, "The runtime hook and the interpreter"): 3.10-3.13 tested,
# 3.14 and 3.15 read. On any other it refuses to start, and compatkit refuses to install it.
KNOWN = ((3, 10), (3, 15))


def unknown_interpreter(name: str, version: "Sequence[int]") -> str | None:
    """Why this hook must not run on implementation ``name``, ``version``, or None: on an
    interpreter it was never checked against it could import a module unpatched, silently."""
    if name != "cpython":
        return f"compatkit's runtime hook is for CPython, not {name}"
    if not KNOWN[0] <= tuple(version[:2]) <= KNOWN[1]:
        (a, b), (c, d) = KNOWN
        seen = ".".join(map(str, version[:3]))
        return f"compatkit's runtime hook knows CPython {a}.{b} to {c}.{d}, not {seen}"
    return None


# Each class costs time to create at every start: the ones only a patched import or a
# refusal needs are made then, once (:func:`_lazy`); the start makes only the Finder.
_made: "dict[str, Any]" = {}


def __getattr__(name: str) -> "Any":  # RuntimeRefusal, PatchedLoader: made on first use
    if name in ("RuntimeRefusal", "PatchedLoader"):
        return _lazy(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _lazy(name: str) -> "Any":
    if name not in _made:
        _made[name] = _refusal() if name == "RuntimeRefusal" else _loader()
    return _made[name]


def _refusal() -> "type[RuntimeError]":
    class RuntimeRefusal(RuntimeError):
        """A patched module this hook will not import (the environment changed since
        prepare). Not an ImportError: ``try: import x / except ImportError:`` must not turn
        it into "x is not installed" and go on without the fix."""

        def __init__(self, message: str, name: str) -> None:
            super().__init__(message)
            self.name = name

    RuntimeRefusal.__qualname__ = "RuntimeRefusal"
    return RuntimeRefusal


def _refuse(fullname: str, reason: str) -> RuntimeError:
    message = f"compatkit runtime: refusing to import {fullname}: {reason}"
    print(message, file=sys.stderr)  # loud even where the caller catches Exception
    refusal: RuntimeError = _lazy("RuntimeRefusal")(message, fullname)
    return refusal


def _own() -> bool:
    """Whether this process is compatkit's own command line (startfiles.OWN, the same test)."""
    try:
        prog = sys.orig_argv[-len(sys.argv)] if sys.argv[0] == "-m" else sys.argv[0]
    except (AttributeError, IndexError):
        return False
    return prog.rsplit("/", 1)[-1] == "compatkit"


def _refuse_start(root: str, why: str, fix: str = _AGAIN) -> None:
    """Stop the interpreter with one line: a start that cannot patch must not run on. But
    compatkit's own command line (:func:`_own`: the way out the line names) goes on, without
    the hook: the caller returns before it activates anything."""
    if _own():
        told = sys.__dict__.setdefault("_compatkit_told", set())  # the boot's too: once
        if root not in told:
            told.add(root)
            sys.stderr.write(
                f"compatkit runtime: compatkit starts without the hook in {root} ({why}); "
                "its modules are not patched in this process\n"
            )
        return
    way_out = f"(or remove it: 'compatkit runtime uninstall --dir {root}')"
    if why.endswith(_WRITABLE):  # install refuses the folder until the mode is changed
        path = why[: -len(_WRITABLE)]
        fix = f"make it writable by you only ('chmod go-w {path}'), then install again"
        way_out = way_out if (path + "/").startswith(root + "/") else ""
    sys.stderr.write(f"compatkit runtime: refusing to start: {why}; {fix} {way_out}".rstrip())
    sys.stderr.write("\n")
    sys.stderr.flush()
    os._exit(1)


def _sha256(data: bytes) -> str:
    """The interpreter's own SHA-256 (no OpenSSL load, which hashlib is) for a module's
    source; hashlib for a big one, where OpenSSL's speed pays for its import."""
    if len(data) < 1 << 20:
        try:  # CPython 3.12+: _sha2; 3.10, 3.11: _sha256 (a failed import costs a path scan)
            if sys.version_info >= (3, 12):
                from _sha2 import sha256  # type: ignore[import-not-found, unused-ignore]
            else:
                from _sha256 import sha256  # type: ignore[import-not-found, no-redef, unused-ignore]
        except ImportError:
            from hashlib import sha256
        return str(sha256(data).hexdigest())
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _problem(path: str, st: os.stat_result, above: bool = False) -> str | None:
    """Why ``path`` is not trusted: a link, another user's, writable by others (sticky
    folders above the runtime folder excepted), or neither a regular file nor a folder."""
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symbolic link"
    if not (stat.S_ISDIR(st.st_mode) or (stat.S_ISREG(st.st_mode) and not above)):
        return f"{path} is not a regular file or folder"
    if st.st_uid not in (0, os.geteuid()):
        return f"{path} is owned by another user (uid {st.st_uid})"
    if st.st_mode & 0o022 and not (above and st.st_mode & stat.S_ISVTX):
        return f"{path} is writable by others"
    return None


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW
# A file is opened non-blocking (a FIFO would wait for a writer for ever), then checked on the
# open descriptor (``fstat``: a regular file, at most LIMIT bytes) before a byte is read.
_NONBLOCK = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_FILE = _NONBLOCK | _NOFOLLOW
LIMIT = 1 << 30  # a table, a patched source or its pyc: far above any real one


def _open(root: str, path: str) -> int:
    """An fd of ``path``, a file below ``root`` (checked by the caller): each folder on the way
    opened without following a link, by name in the one before it, and checked."""
    names = path[len(root) + 1 :].split("/")
    fd = os.open(root, _DIR)
    try:
        at = root
        for name in names[:-1]:
            at = f"{at}/{name}"
            try:
                sub = os.open(name, _DIR, dir_fd=fd)
            except OSError:
                why = _problem(at, os.lstat(name, dir_fd=fd))
                if why:
                    raise PermissionError(why) from None
                raise
            os.close(fd)
            fd = sub
            why = _problem(at, os.fstat(fd))
            if why:
                raise PermissionError(why)
        return os.open(names[-1], _FILE, dir_fd=fd)
    finally:
        os.close(fd)


def _read(root: str, path: str) -> "tuple[bytes, Facts]":
    """The bytes of ``path``, a file of the runtime folder ``root``, never through a link (in
    any folder below ``root`` either), only if trusted; and its stat facts once read (a change
    before or while it was read shows in them)."""
    fd = _open(root, path)
    try:  # os.read, not a file object: no isatty or seek calls (3 system calls a file)
        st = os.fstat(fd)
        why = _problem(path, st)
        if why:
            raise PermissionError(why)  # a file of the runtime folder this hook will not read
        return _read_fd(fd, st, path), _facts(os.fstat(fd))
    finally:
        os.close(fd)


def _read_fd(fd: int, st: os.stat_result, path: str) -> bytes:
    """The bytes of the open regular file ``fd`` (``st``: its fstat), at most :data:`LIMIT`;
    a larger one (or one that grows past it while read) raises OSError, naming it."""
    if st.st_size > LIMIT:
        raise OSError(f"{path} is larger than {LIMIT >> 20} MiB ({st.st_size} bytes)")
    chunks = [os.read(fd, st.st_size + 1)]
    size = len(chunks[0])
    while chunks[-1] and size <= LIMIT:
        chunks.append(os.read(fd, 1 << 16))
        size += len(chunks[-1])
    if size > LIMIT:
        raise OSError(f"{path} grew past {LIMIT >> 20} MiB while read")
    return b"".join(chunks)


def _facts(st: os.stat_result) -> "Facts":
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def _unchanged(path: str, facts: "Facts | None", sha: str) -> bool:
    """``path`` still holds the bytes of SHA-256 ``sha``: proven by the stat facts recorded at
    install when they are all the same (docs/security.md, "Runtime folders"), else hashed."""
    if facts is not None and _facts(os.stat(path)) == facts:
        return True
    fd = os.open(path, _NONBLOCK)  # links followed, as the import itself does
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > LIMIT:  # never the file prepared
            return False
        return _sha256(_read_fd(fd, st, path)) == sha
    finally:
        os.close(fd)


def _same_file(a: str, b: str) -> bool:
    return a == b or os.path.realpath(a) == os.path.realpath(b)


class Finder:
    """A meta path finder for the modules of one runtime directory's table."""

    def __init__(self, root: str, table: "dict[str, Any]") -> None:
        self.compatkit_root = root
        self.modules: dict[str, Entry] = table["modules"]
        self.guards: dict[str, list[tuple[str, str]]] = table["guards"]
        self.checked: set[str] = set()  # patchsets whose guards passed

    def find_spec(
        self, fullname: str, path: "Sequence[str] | None" = None, target: object = None
    ) -> ModuleSpec | None:
        entry = self.modules.get(fullname)
        if entry is None:
            if fullname == "linecache" and _sources:
                spec = PathFinder.find_spec(fullname, path)
                if spec is not None and spec.loader is not None:
                    _then_lines(spec.loader)
                return spec
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
        elif not _unchanged(where, entry.get("original_facts"), entry["original"]):
            reason = f"{where} changed since {entry['label']} was prepared for it; {_AGAIN}"
            raise _refuse(fullname, reason)
        if entry["patched"] is None:  # hidden, as intended: not a refusal, so not printed
            message = f"No module named {fullname!r} ({entry['label']} deletes it)"
            raise ModuleNotFoundError(message, name=fullname)
        return self._spec(fullname, entry, real)

    def _check_guards(self, fullname: str, entry: "Entry") -> None:
        for name in entry["patchsets"]:
            if name in self.checked:
                continue
            for info, what in self.guards[name]:
                if not os.path.isdir(info):
                    reason = f"{name} was prepared for {what}, which is no longer installed; "
                    raise _refuse(fullname, reason + _AGAIN)
            self.checked.add(name)

    def _spec(self, fullname: str, entry: "Entry", real: ModuleSpec | None) -> ModuleSpec:
        origin = entry["origin"]
        patched = os.path.join(self.compatkit_root, DATA, "src", entry["patched"])
        pyc = os.path.join(self.compatkit_root, DATA, "pycache", _pyc_name(entry))
        root = self.compatkit_root
        loader = _lazy("PatchedLoader")(fullname, origin, root, patched, pyc, entry["sha"])
        loader.facts = entry.get("patched_facts")
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


def _pyc_name(entry: "Entry") -> str:
    stem = entry["patched"][: -len(".py")]
    tag = sys.implementation.cache_tag or "python"
    return f"{stem}.{tag}-ck{entry['sha'][:16]}.pyc"


def _loader() -> "type[SourceFileLoader]":
    class PatchedLoader(SourceFileLoader):
        """The installed file's loader, reading the prepared patched source instead of it."""

        facts: "Facts | None" = None  # the patched source's, recorded at install

        def __init__(
            self, fullname: str, path: str, root: str, patched: str, pyc: str, sha: str
        ) -> None:
            super().__init__(fullname, path)
            self.root, self.patched, self.pyc, self.sha = root, patched, pyc, sha

        def get_data(self, path: str) -> bytes:
            if path == self.path:
                try:
                    data, facts = _read(self.root, self.patched)
                except OSError as exc:
                    reason = f"its patched source cannot be read ({exc}); {_AGAIN}"
                    raise _refuse(self.name, reason) from None
                if facts != self.facts and _sha256(data) != self.sha:
                    reason = f"{self.patched} is not the patched source compatkit wrote; {_AGAIN}"
                    raise _refuse(self.name, reason)
                return data
            return super().get_data(path)

        def get_code(self, fullname: str) -> "CodeType":
            source = self.get_data(self.path)
            register_lines(self.path, source)
            code = _load_pyc(self.root, self.pyc, source)
            if code is None:
                code = self.source_to_code(source, self.path)
                if not sys.dont_write_bytecode:
                    _store_pyc(self.pyc, source, code)
            return code

    PatchedLoader.__qualname__ = "PatchedLoader"
    return PatchedLoader


def _pyc_header(source: bytes) -> bytes:
    from _imp import source_hash  # what importlib.util.source_hash calls, without importlib

    key = int.from_bytes(MAGIC_NUMBER, "little")
    return MAGIC_NUMBER + (0b11).to_bytes(4, "little") + source_hash(key, source)


def _load_pyc(root: str, pyc: str, source: bytes) -> "CodeType | None":
    """The code object in ``pyc`` (of the runtime folder ``root``) if it is a checked-hash pyc
    of exactly ``source``."""
    try:
        data = _read(root, pyc)[0]
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


def _pyc_folder(head: str) -> bool:
    """Make the folders of ``head`` below the data folder one by one (mode 755), each checked
    before the next is made in it: a pyc is never written through a link or a foreign folder."""
    cut = head.index(f"/{DATA}/") + len(DATA) + 1
    path = head[:cut]
    for part in head[cut + 1 :].split("/"):
        path = f"{path}/{part}"
        if not os.path.lexists(path):
            os.mkdir(path, 0o755)  # FileExistsError (a race): an OSError, no pyc written
        if _problem(path, os.lstat(path)):
            return False
    return True


def _store_pyc(pyc: str, source: bytes, code: "CodeType") -> None:
    data = _pyc_header(source) + marshal.dumps(code)
    head, tail = os.path.split(pyc)
    try:
        if not _pyc_folder(head):
            return
        tmp = os.path.join(head, f".{tail}.{os.urandom(6).hex()}.compatkit-tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(tmp, flags, 0o644)
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
    """Put the patched lines of ``filename`` in linecache, and keep them there; if linecache
    is not imported yet (it imports tokenize and re), when it is (:class:`_ThenLines`)."""
    _sources[filename] = source
    linecache = sys.modules.get("linecache")
    if linecache is not None:
        _fill(linecache)


def _lines(source: bytes) -> list[str]:
    import io
    from _frozen_importlib_external import decode_source

    return io.StringIO(decode_source(source)).readlines()


def _fill(linecache: "Any") -> None:
    for filename, source in _sources.items():
        linecache.cache[filename] = (len(source), None, _lines(source), filename)
    if not getattr(linecache.updatecache, "compatkit", False):
        linecache.updatecache = _updatecache(linecache, linecache.updatecache)


def _updatecache(
    linecache: "Any", original: "Callable[..., list[str]]"
) -> "Callable[..., list[str]]":
    def updatecache(filename: str, module_globals: "Any" = None) -> list[str]:
        if filename in _sources:  # after linecache.clearcache(): the patched lines again
            source = _sources[filename]
            lines = _lines(source)
            linecache.cache[filename] = (len(source), None, lines, filename)
            return lines
        return original(filename, module_globals)

    setattr(updatecache, "compatkit", True)  # noqa: B010 - a function attribute
    return updatecache


def _then_lines(loader: "Any") -> None:
    """linecache's own loader (a new one, for this import), then the patched lines put in
    the module it made."""
    run = loader.exec_module

    def exec_module(module: "Any") -> None:
        run(module)
        _fill(module)

    loader.exec_module = exec_module


def _check_root(root: str, walked: bool) -> str | None:
    """Why the folder ``root`` (or one above it) is not trusted; with ``walked``, the start-up
    code's boot has just checked ``root`` and every folder above it: nothing is left."""
    if walked:
        return None
    parts = root.split("/")
    for path in ["/".join(parts[:i]) or "/" for i in range(1, len(parts))]:
        why = _problem(path, os.lstat(path), above=True)
        if why:
            return why
    return _problem(root, os.lstat(root))


def _check_data(root: str, key: str) -> str | None:
    """Why a folder of the data folder that the hook reads through is not trusted (a link, a
    foreign one); the ones that do not exist yet are made, checked, when they are written."""
    data = f"{root}/{DATA}"
    for path in (f"{data}/src", f"{data}/src/{key}", f"{data}/pycache", f"{data}/pycache/{key}"):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        why = _problem(path, st)
        if why:
            return why
    return None


def _load_table(root: str, modules: "Sequence[str]", walked: bool) -> "dict[str, Any] | None":
    """The table, checked: the folder trusted, the format known, every named module in it;
    None when the start is refused and compatkit's own command goes on without the hook."""
    try:
        why = _check_root(root, walked)
        if why:
            _refuse_start(root, why, "use a folder only you can write, and install again")
            return None
        table = marshal.loads(_read(root, f"{root}/{DATA}/table.marshal")[0])
        if not isinstance(table, dict) or table.get("format") != 1:
            raise ValueError("not a format-1 table")
        if not isinstance(table["modules"], dict) or not isinstance(table["guards"], dict):
            raise ValueError("no modules or guards")
        why = _check_data(root, str(table.get("key")))
        if why:
            _refuse_start(root, why, "use a folder only you can write, and install again")
            return None
    except PermissionError as exc:  # a folder on the way to the table is not trusted
        _refuse_start(root, str(exc), "use a folder only you can write, and install again")
        return None
    except (OSError, ValueError, EOFError, TypeError, KeyError) as exc:
        why = f"the table of {root} is missing or damaged ({exc})"
        mods = ", ".join(modules) or "its modules"
        _refuse_start(root, f"{why}, so {mods} would run unpatched")
        return None
    lost = [m for m in modules if m not in table["modules"]]
    if lost:
        why = f"the table of {root} lacks {', '.join(lost)}, which it must patch"
        _refuse_start(root, why)
        return None
    return table


def start(root: str | None = None, modules: "Sequence[str]" = (), walked: bool = False) -> None:
    """Activate the runtime directory ``root`` (default: this file's); a second call is a no-op.

    ``modules``: what the start-up code says the table patches (a damaged table lacking one
    refuses the start). Any module of the table already imported refuses the start too: it
    runs unpatched, and re-importing it cannot reach the references already taken to it.
    ``walked``: the caller (the start-up code's boot) checked ``root`` and every folder above
    it an instant ago; only the data folder is left to check."""
    root = os.path.abspath(root or os.path.dirname(__file__))
    why = unknown_interpreter(sys.implementation.name, sys.version_info[:3])
    if why:
        _refuse_start(root, why, "use 'compatkit apply', or a compatkit that knows this Python")
    if any(getattr(f, "compatkit_root", None) == root for f in sys.meta_path):
        return
    table = _load_table(root, modules, walked)
    if table is None:
        return  # refused, and this is compatkit's own command: no hook
    early = sorted(m for m in table["modules"] if m in sys.modules)
    if early:
        why = (
            f"{', '.join(early)} was imported before the runtime hook in {root} ran, "
            "so it runs unpatched"
        )
        fix = "remove that early import (a .pth file or sitecustomize), or use compatkit apply"
        _refuse_start(root, why, fix)
        return
    for other in sys.meta_path:
        both = sorted(set(getattr(other, "modules", {})) & set(table["modules"]))
        if getattr(other, "compatkit_root", None) and both:
            why = f"{root} and {other.compatkit_root} both patch {', '.join(both)}"  # type: ignore[attr-defined]
            _refuse_start(root, why, "keep one runtime folder per module (uninstall the other)")
            return
    sys.meta_path.insert(0, Finder(root, table))


def chain_sitecustomize(own_file: str) -> None:
    """Run the ``sitecustomize`` that this directory's one shadows (later on sys.path)."""
    own = os.path.dirname(os.path.abspath(own_file))
    at = next(  # the first entry that is this folder (most often exactly)
        (i for i, p in enumerate(sys.path) if p == own or os.path.abspath(p or os.getcwd()) == own),
        None,
    )
    if at is None:
        return
    rest = sys.path[at + 1 :]
    spec = PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = type(sys)("sitecustomize")
    module.__spec__, module.__file__ = spec, spec.origin
    spec.loader.exec_module(module)
