"""The target environment: which interpreter, which site-packages, which distributions.

Reads only. Every write goes through :mod:`compatkit.env.txn`.

>>> env = Environment.current()
>>> env.find("pip") is None or env.find("pip").name == "pip"
True
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from compatkit import bounded
from compatkit.env import owners
from compatkit.errors import CompatkitError, UsageError
from compatkit.model.names import normalize_name
from compatkit.model.paths import quoted, resolve_inside
from compatkit.model.records import Record, record_hash
from compatkit.value import Value

TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Callable

_PROBE = r"""
import site, sys
# run with -S: site.main() would read every .pth file (one that is a FIFO hangs any start);
# site.venv() sets the prefixes as main() does, its call that reads the .pth files a no-op
site.addsitepackages = lambda known_paths, prefixes=None: known_paths
site.venv(None)
import json, os, platform, sysconfig
impl = sys.implementation
v = impl.version
iv = "%d.%d.%d" % (v.major, v.minor, v.micro)
if v.releaselevel != "final":
    iv += v.releaselevel[0] + str(v.serial)
paths = sysconfig.get_paths()
# -I turns the user site off; without it, site.py keeps it on unless this is a venv without
# the system site-packages (site.PREFIXES is then that venv alone) or a set-uid run
user = site.PREFIXES != [sys.prefix] and os.getuid() == os.geteuid()
print(json.dumps({
  "executable": sys.executable,
  "paths": [site.getusersitepackages()] * user + site.getsitepackages()
    + [paths["purelib"], paths["platlib"]],
  "cache_tag": impl.cache_tag,
  "markers": {
    "implementation_name": impl.name, "implementation_version": iv,
    "os_name": os.name, "platform_machine": platform.machine(),
    "platform_release": platform.release(), "platform_system": platform.system(),
    "platform_version": platform.version(),
    "python_full_version": platform.python_version(),
    "platform_python_implementation": platform.python_implementation(),
    "python_version": ".".join(platform.python_version_tuple()[:2]),
    "sys_platform": sys.platform,
  },
}))
"""


class DiskFiles:
    """The read side of a target distribution, as the planner sees it: the files below
    ``root``, read with plain ``os`` calls (pathlib costs µs per call). Paths are relative to
    the root (site-packages), with ``/``. :class:`compatkit.env.plan.Overlay` asks these
    questions and nothing else (``Files``), so planning runs the same on the real
    site-packages and on a dictionary (the in-memory fake of ``tests/env/test_plan.py``), as
    pypa/installer tests its core with a fake source.

    >>> import pathlib, tempfile
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (root / "m.py").write_bytes(b"x = 1\\n")
    >>> files = DiskFiles(root)
    >>> files.read("m.py"), files.read("gone.py"), files.is_file("m.py"), files.listdir("nope")
    (b'x = 1\\n', None, True, [])
    """

    __slots__ = ("_root",)

    def __init__(self, root: Path | str) -> None:
        self._root = str(root)

    @property
    def root(self) -> str:
        return self._root

    def _full(self, relpath: str) -> str:
        if relpath.startswith("/") or ".." in relpath.split("/"):
            raise CompatkitError(f"refused path {quoted(relpath)}: it leaves site-packages")
        return os.path.join(self._root, relpath)

    def read(self, relpath: str) -> bytes | None:
        """The bytes at ``relpath``, None if absent; never outside the root. Through
        :func:`compatkit.bounded.read`: a FIFO, a device or a file over its bound (a
        ``.dist-info``'s own files such as RECORD: ``bounded.METADATA``; any other, read
        whole to be patched or compared: ``bounded.TEXT``) raises
        :class:`compatkit.bounded.Refused`, naming it. Hashing has no bound (:meth:`hash`)."""
        full = self._full(relpath)
        folder = relpath.rpartition("/")[0]
        own = folder.endswith(".dist-info") and "/" not in folder  # RECORD, METADATA, ...
        limit = bounded.METADATA if own else bounded.TEXT
        try:
            return bounded.read(full, limit)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except (OSError, ValueError) as exc:  # a directory, a name too long, a NUL, ...
            reason = getattr(exc, "strerror", None) or str(exc)
            raise CompatkitError(f"cannot read {quoted(relpath)}: {reason}") from None

    def hash(self, relpath: str, advance: Callable[[int], None] | None = None) -> str | None:
        """The RECORD form (``sha256=…``) of the hash of the file at ``relpath``, None if
        absent: streamed (:func:`compatkit.bounded.sha256`), so memory does not grow with its
        size, and with no size bound. A FIFO or a device raises
        :class:`compatkit.bounded.Refused`, naming it. ``advance``: told each piece's size
        (:func:`compatkit.bounded.sha256_open`)."""
        try:
            return record_hash(bounded.sha256(self._full(relpath), advance=advance))
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
        return self._stat(relpath).st_mtime_ns

    def mode(self, relpath: str) -> int:
        """Its permission bits (never set-user-ID, set-group-ID, sticky: no installer sets them)."""
        return self._stat(relpath).st_mode & 0o777

    def _stat(self, relpath: str) -> os.stat_result:
        """``os.stat`` of a file read a moment ago; gone since (swapped?): one line, exit 1."""
        try:
            return os.stat(self._full(relpath))
        except OSError as exc:
            raise CompatkitError(f"cannot read {quoted(relpath)}: {exc.strerror}") from None

    def check_inside(self, relpath: str, dirs_ok: set[str]) -> None:
        """Refuse a path that is not plain, or that passes a symlink or a non-directory."""
        resolve_inside(self._root, relpath, dirs_ok)


class Dist(Value):
    """One installed distribution: its metadata directory and the root its RECORD is under."""

    __slots__ = ("name", "version", "dist_info", "root", "_files", "_notice")

    def __init__(self, name: str, version: str, dist_info: Path, root: Path) -> None:
        self.name = name
        self.version = version
        self.dist_info = dist_info
        self.root = root
        self._files: DiskFiles | None = None
        self._notice: Callable[[str], None] | None = None

    def notice(self, line: str) -> None:
        """Tell the user ``line`` while the work goes on (waiting for a lock), through what
        the caller of :meth:`Environment.find` asked for (:meth:`Environment.tell`); else
        nothing: no layer below the command line prints."""
        if self._notice is not None:
            self._notice(line)

    @property
    def files(self) -> DiskFiles:
        """Reads below the root (:class:`DiskFiles`)."""
        if self._files is None:
            self._files = DiskFiles(self.root)
        return self._files

    @classmethod
    def at(cls, info: Path) -> Dist | None:
        """The distribution whose ``.dist-info`` folder is ``info`` (None: no usable METADATA).
        A METADATA that is a FIFO, a device or over ``bounded.METADATA`` raises
        :class:`compatkit.bounded.Refused` (exit 1), naming it."""
        try:
            meta = _headers(bounded.read(info / "METADATA", bounded.METADATA).decode("utf-8"))
        except (OSError, UnicodeDecodeError):
            return None
        name, version = meta.get("name"), meta.get("version")
        return cls(name, version, info, info.parent) if name and version else None

    @property
    def record_path(self) -> Path:
        return self.dist_info / "RECORD"

    @property
    def record_relpath(self) -> str:
        return f"{self.dist_info.name}/RECORD"

    def read_record(self) -> Record:
        """The RECORD; one that is not a regular file or is over ``bounded.METADATA`` raises
        :class:`compatkit.bounded.Refused` (exit 1), naming it."""
        try:
            return Record.parse(bounded.read(self.record_path, bounded.METADATA))
        except FileNotFoundError:
            raise UsageError(f"{self.name} {self.version} has no RECORD file") from None

    def read(self, relpath: str) -> bytes | None:
        """The bytes at ``relpath`` below the root, None if absent; never outside the root."""
        return self.files.read(relpath)

    def hash(self, relpath: str) -> str | None:
        """The RECORD-form hash of the file at ``relpath``, None if absent: streamed, with
        no size bound (:meth:`DiskFiles.hash`)."""
        return self.files.hash(relpath)


class Environment(Value):
    __slots__ = ("executable", "paths", "cache_tag", "_markers", "_notice")

    def __init__(
        self,
        executable: str,
        paths: tuple[str, ...],
        cache_tag: str | None,
        markers: dict[str, str] | None = None,  # probed; None: our own, computed on first use
    ) -> None:
        self.executable = executable
        self.paths = paths
        self.cache_tag = cache_tag
        self._markers = markers
        self._notice: Callable[[str], None] | None = None

    def tell(self, notice: Callable[[str], None]) -> None:
        """Where the distributions found here tell of work under way (:meth:`Dist.notice`)."""
        self._notice = notice

    @property
    def markers(self) -> dict[str, str]:
        """PEP 508 marker values of the target (computed on first use for our own interpreter)."""
        if self._markers is None:
            from packaging.markers import default_environment

            self._markers = {k: str(v) for k, v in default_environment().items()}
        return self._markers

    @classmethod
    def current(cls) -> Environment:
        """compatkit's own environment: every folder ``site`` put on ``sys.path`` for
        distributions (the user site, Debian's dist-packages), in import order."""
        import site
        import sysconfig  # here: with --python the target's interpreter answers (P1)

        paths = sysconfig.get_paths()
        user = [site.getusersitepackages()] if site.ENABLE_USER_SITE else []
        found = [*user, *site.getsitepackages(), paths["purelib"], paths["platlib"]]
        return cls(sys.executable, tuple(dict.fromkeys(found)), sys.implementation.cache_tag)

    @classmethod
    def for_python(cls, python: str | None) -> Environment:
        if python is None:
            from compatkit.env.venvs import active_venv

            python = active_venv()
        if python is None:
            return cls.current()
        from compatkit.load import cache

        exe = _interpreter(python)
        owners.check_interpreter(exe)  # before it is run: another user's is refused
        entry = cache.entry("probe", _probe_key(exe))
        cached = cache.load(entry)
        env = None if cached is None else cls._from_probe(cached)
        if env is None:
            info = _probe(python, exe)
            env = cls._from_probe(info)
            if env is None:
                raise UsageError(f"--python {python}: unexpected answer to the probe")
            cache.store(entry, info)
        return env

    @classmethod
    def _from_probe(cls, info: dict[str, object]) -> Environment | None:
        exe, paths, tag, markers = (
            info.get(k) for k in ("executable", "paths", "cache_tag", "markers")
        )
        if not (
            isinstance(exe, str)
            and isinstance(paths, list)
            and all(isinstance(p, str) for p in paths)
            and (tag is None or isinstance(tag, str))
            and isinstance(markers, dict)
        ):
            return None
        return cls(
            exe, tuple(dict.fromkeys(paths)), tag, {str(k): str(v) for k, v in markers.items()}
        )

    def find(self, name: str) -> Dist | None:
        """The installed distribution called ``name`` (first on the path wins), or None."""
        wanted = normalize_name(name)
        settled, dist = self._scan(wanted)
        dist = dist if settled else self._find_general(wanted)
        if dist is not None:
            dist._notice = self._notice
        return dist

    def _scan(self, wanted: str) -> tuple[bool, Dist | None]:
        """The common cases without importing importlib.metadata (start-up time, P1).

        Lists each path entry in order and matches metadata folder names as
        importlib-metadata's ``name=`` lookup does. Settled: no entry holds a folder for
        ``wanted`` (not installed), or the first one that does holds exactly one ``.dist-info``
        whose METADATA names it. Anything else (an ``.egg-info``, several folders, unreadable
        metadata, a path entry that is not a directory) returns ``(False, None)``: ask the
        library.
        """
        for base in self.paths:
            try:
                children = os.listdir(base)
            except FileNotFoundError:
                continue
            except OSError:  # not a directory (a zip?), unreadable: the library knows more
                return False, None
            hits = _index(base, children).get(wanted, [])
            if not hits:
                continue
            if len(hits) > 1 or not hits[0].lower().endswith(".dist-info"):
                return False, None
            dist = Dist.at(Path(base) / hits[0])
            if dist is None or normalize_name(dist.name) != wanted:
                return False, None
            return True, dist
        return True, None

    def _find_general(self, wanted: str) -> Dist | None:
        from importlib import metadata

        # name= takes importlib.metadata's fast path: it matches normalised folder names
        # instead of reading every distribution's METADATA.
        for found in metadata.distributions(name=wanted, path=list(self.paths)):
            info = Path(str(getattr(found, "_path", "")))
            if not info.name.endswith(".dist-info"):
                continue  # egg-info installs have no RECORD to own files with
            dist = Dist.at(info)
            if dist is not None and normalize_name(dist.name) == wanted:
                return dist
        return None

    def require(self, name: str) -> Dist:
        """The installed ``name``; else exit 1 (as ``apply`` does: the environment is not as
        expected), naming the interpreter looked at and how to target another."""
        dist = self.find(name)
        if dist is None:
            raise CompatkitError(f"{name} is not installed in {self.describe()}{self.hint()}")
        return dist

    def describe(self) -> str:
        return f"the environment of {self.executable}"

    def hint(self) -> str:
        """How to target another environment, when this one is compatkit's own."""
        if self.executable != sys.executable:
            return ""
        from compatkit.env.venvs import other_venv

        venv = other_venv()
        if venv:
            return f" (compatkit's own; the active venv is {venv}: add --python {venv})"
        return " (compatkit's own; add --python PATH to target another interpreter or venv)"


def installed(env: Environment) -> list[Dist]:
    """Every distribution with a ``.dist-info`` in ``env`` (the first on the path wins)."""
    seen: dict[str, Dist] = {}
    for base in env.paths:
        for info in sorted(Path(base).glob("*.dist-info")):
            dist = Dist.at(info)
            if dist is not None:
                seen.setdefault(normalize_name(dist.name), dist)
    return list(seen.values())


_INDEXES: dict[str, tuple[list[str], dict[str, list[str]]]] = {}


def _index(base: str, children: list[str]) -> dict[str, list[str]]:
    """``base``'s metadata folders (``.dist-info``, ``.egg-info``) by canonical distribution
    name, for this listing of it. Built once per listing: a real stack's site-packages holds
    hundreds of entries and a command looks several distributions up (P1). A listing that
    differs in any way from the last one is indexed anew, so it is never stale."""
    known = _INDEXES.get(base)
    if known is not None and known[0] == children:
        return known[1]
    index: dict[str, list[str]] = {}
    for child in children:
        if child.lower().endswith((".dist-info", ".egg-info")):
            name = normalize_name(child.rpartition(".")[0].partition("-")[0])
            index.setdefault(name, []).append(child)
    _INDEXES[base] = (children, index)
    return index


def _headers(metadata: str) -> dict[str, str]:
    """Name and Version from core metadata, without the email parser (start-up time)."""
    found: dict[str, str] = {}
    for line in metadata.splitlines():
        if not line.strip():
            break  # the headers end at the first blank line
        key, sep, value = line.partition(":")
        if sep and key.lower() in ("name", "version") and key.lower() not in found:
            found[key.lower()] = value.strip()
    return found


def _probe(python: str, exe: str) -> dict[str, object]:
    """Ask the interpreter for its paths and PEP 508 markers (a second Python start-up).
    First its ``pyvenv.cfg`` (where the interpreter looks: beside it, or one folder up), which
    it reads before running a line: one that is a FIFO or huge is refused here (exit 1)
    instead of hanging it."""
    import contextlib
    import json
    import subprocess

    folder = os.path.dirname(exe)
    for cfg in (
        os.path.join(folder, "pyvenv.cfg"),
        os.path.join(os.path.dirname(folder), "pyvenv.cfg"),
    ):
        with contextlib.suppress(OSError):  # missing, unreadable: the interpreter will say
            bounded.read(cfg, bounded.SMALL)
    try:
        proc = subprocess.run(
            [exe, "-I", "-S", "-c", _PROBE], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"--python {python}: cannot run it ({exc})") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"--python {python}: not a working Python ({last})")
    try:
        info = json.loads(proc.stdout)
    except ValueError:
        info = None
    if not isinstance(info, dict):  # /bin/true, a wrapper that prints something else
        raise UsageError(f"--python {python}: not a Python interpreter (no answer to the probe)")
    return info


def _probe_key(exe: str) -> bytes:
    """Everything that could change the probe's answer: the interpreter path, the link and the
    binary it points to (a recreated venv or an upgraded Python changes their inode or times),
    the venv's pyvenv.cfg, the kernel (platform_release is a marker) and the probe itself."""
    home = (os.environ.get("PYTHONUSERBASE"), os.path.expanduser("~"))  # the user site
    parts: list[object] = [_PROBE, os.path.abspath(exe), os.uname(), home]
    cfg = Path(exe).parent.parent / "pyvenv.cfg"
    for path, follow in ((exe, False), (exe, True), (str(cfg), True)):
        try:
            st = os.stat(path, follow_symlinks=follow)
            parts.append((st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        except OSError:
            parts.append(None)
    return repr(parts).encode()


def _interpreter(python: str) -> str:
    path = Path(python)
    if path.is_dir():
        for candidate in (path / "bin" / "python", path / "Scripts" / "python.exe"):
            if candidate.exists():
                return str(candidate)
        raise UsageError(f"--python {python}: no interpreter in that directory")
    if not path.exists() and os.sep not in python:
        from shutil import which

        found = which(python)
        if found:
            return found
    if not path.exists():
        raise UsageError(f"--python {python}: no such interpreter")
    return str(path)
