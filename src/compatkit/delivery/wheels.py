"""Pristine bytes of a released distribution, taken from its wheel (reads only).

Where a wheel's files come from, in order: ``--wheel-dir`` / ``COMPATKIT_WHEEL_DIR``
directories of ``.whl`` files (a find-links folder), compatkit's own download cache, uv's cache
(``archive-v0`` holds unpacked wheels), pip's HTTP cache, and last a download (``pip download``
when a pip is at hand, else the index's PEP 691 JSON API) into compatkit's cache. Nothing is
installed anywhere. Every file read is checked against the RECORD hash it must have: the wheel's
own RECORD, and for ``compatkit diff`` the installed RECORD too, because a file hand-edited
through one of uv's hardlinks also changed the copy in uv's cache.

The copies themselves are :class:`compatkit.delivery.wheeltree.Tree` objects.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from hashlib import sha256
from pathlib import Path

from packaging.tags import sys_tags
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from compatkit import bounded
from compatkit.delivery.wheeltree import (
    Corrupt,
    NotAZip,
    Tree,
    open_zip,
    tree_from_dir,
    tree_from_wheel,
)
from compatkit.errors import CompatkitError
from compatkit.model.names import normalize_name
from compatkit.model.progress import NONE, Reporter
from compatkit.model.records import hash_bytes
from compatkit.value import Value

TYPE_CHECKING = False

if TYPE_CHECKING:
    from hashlib import _Hash as Hash
    from http.client import HTTPResponse
    from typing import BinaryIO

DEFAULT_INDEX = "https://pypi.org/simple"
_JSON = "application/vnd.pypi.simple.v1+json"


def cache_dir() -> Path:
    """compatkit's own cache (downloaded wheels): ``COMPATKIT_CACHE_DIR`` or the XDG one."""
    from compatkit.load.cache import base_dir

    return base_dir()


def _wheel_matches(filename: str, name: str, version: str | None) -> Version | None:
    try:
        wname, wver, _, _ = parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion):
        return None
    if wname != normalize_name(name):
        return None
    if version is not None and wver != Version(version):
        return None
    return wver


def _info_matches(dirname: str, name: str, version: str) -> bool:
    stem = dirname[: -len(".dist-info")]
    dname, _, dver = stem.rpartition("-")
    try:
        return normalize_name(dname) == normalize_name(name) and Version(dver) == Version(version)
    except InvalidVersion:
        return False


def _uv_entries(archive: Path, name: str, version: str) -> list[Path]:
    """The unpacked wheels of ``name==version`` in uv's ``archive-v0`` folder."""
    found = []
    with os.scandir(archive) as entries:
        for entry in entries:
            if not entry.is_dir():
                continue
            with os.scandir(entry.path) as subs:
                names = [sub.name for sub in subs if sub.name.endswith(".dist-info")]
            if any(_info_matches(n, name, version) for n in names):
                found.append(Path(entry.path))
    return found


def _uv_cache() -> Path | None:
    explicit = os.environ.get("UV_CACHE_DIR")
    if explicit:
        return Path(explicit)
    uv = shutil.which("uv")
    if uv is not None:
        proc = subprocess.run([uv, "cache", "dir"], capture_output=True, text=True, timeout=30)
        if proc.returncode == 0 and proc.stdout.strip():
            return Path(proc.stdout.strip())
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "uv"


def _pip_cache() -> Path:
    explicit = os.environ.get("PIP_CACHE_DIR")
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(explicit) if explicit else Path(xdg) / "pip"


class WheelSource(Value):
    """Where wheels may come from. ``index=False`` never touches the network; ``python`` is
    the interpreter whose pip downloads (its tags pick the wheel); ``skipped`` holds the
    notes on copies that are no zip. ``reporter`` (a download's progress) and the index's
    hashes already fetched are no fields: not compared, not in ``repr``."""

    __slots__ = ("wheel_dirs", "index", "python", "notes", "skipped", "_reporter", "_hashes")

    def __init__(
        self,
        wheel_dirs: tuple[Path, ...] = (),
        index: bool = True,
        python: str | None = None,
        notes: list[str] | None = None,
        skipped: list[str] | None = None,
        reporter: Reporter = NONE,
    ) -> None:
        self.wheel_dirs, self.index, self.python = wheel_dirs, index, python
        self.notes = notes if notes is not None else []
        self.skipped = skipped if skipped is not None else []
        self._reporter = reporter
        self._hashes: dict[tuple[str, str], set[str]] = {}

    @property
    def reporter(self) -> Reporter:
        """A download's progress."""
        return self._reporter

    @reporter.setter
    def reporter(self, reporter: Reporter) -> None:
        self._reporter = reporter

    @classmethod
    def configure(
        cls, wheel_dirs: Sequence[Path] = (), offline: bool = False, python: str | None = None
    ) -> WheelSource:
        env_dirs = [Path(p) for p in os.environ.get("COMPATKIT_WHEEL_DIR", "").split(os.pathsep)]
        dirs = tuple(d for d in [*wheel_dirs, *env_dirs] if str(d) not in ("", "."))
        no_index = offline or os.environ.get("COMPATKIT_NO_INDEX", "") not in ("", "0")
        return cls(dirs, not no_index, python)

    @property
    def index_url(self) -> str:
        for var in ("COMPATKIT_INDEX_URL", "UV_INDEX_URL", "PIP_INDEX_URL"):
            if os.environ.get(var):
                return os.environ[var].rstrip("/")
        return DEFAULT_INDEX

    # -- candidates -------------------------------------------------------------------------

    def _local_wheels(self, name: str, version: str | None) -> list[tuple[Version, Path]]:
        found = []
        for folder in [*self.wheel_dirs, cache_dir() / "wheels"]:
            if not folder.is_dir():
                continue
            for whl in folder.glob("*.whl"):
                ver = _wheel_matches(whl.name, name, version)
                if ver is not None:
                    found.append((ver, whl))
        return found

    def _wheel_tree(self, path: Path) -> Iterator[Tree]:
        try:
            yield tree_from_wheel(path)
        except NotAZip as exc:
            self.notes.append(str(exc))
            self.skipped.append(str(exc))

    def none_left(self, name: str, version: str, problems: list[str]) -> list[str]:
        """Every copy tried and why it was refused, the skipped ones first (each ``skipped
        PATH: not a zip archive``), for the error that says no copy was left."""
        if not problems:
            where = "" if self.index else " (offline: no download tried)"
            other = " other" if self.skipped else ""
            problems = [f"no{other} copy of the {name} {version} wheel was found{where}"]
        return [*self.skipped, *problems]

    def _cached_trees(self, name: str, version: str) -> Iterator[Tree]:
        for _, whl in self._local_wheels(name, version):
            yield from self._wheel_tree(whl)
        uv = _uv_cache()
        archive = uv / "archive-v0" if uv else None
        if archive is not None and archive.is_dir():
            for folder in _uv_entries(archive, name, version):
                yield tree_from_dir(folder)
        yield from self._pip_cache_trees(name, version)

    def _pip_cache_trees(self, name: str, version: str) -> Iterator[Tree]:
        prefix = f"{normalize_name(name).replace('-', '_')}-"
        for body in sorted((_pip_cache() / "http-v2").rglob("*.body")):
            try:
                with open_zip(body) as zf:
                    infos = {n.split("/", 1)[0] for n in zf.namelist() if ".dist-info/" in n}
            except (zipfile.BadZipFile, OSError, ValueError, EOFError, CompatkitError):
                continue  # not a zip (most bodies), or not a regular file (compatkit.bounded)
            for info in infos:
                if info.lower().startswith(prefix) and _info_matches(info, name, version):
                    yield from self._wheel_tree(body)

    def trees(self, name: str, version: str) -> Iterator[Tree]:
        """Every available copy of ``name==version``'s wheel; a download comes last. A
        ``*.whl`` that is no zip archive is skipped, with a note."""
        yield from self._cached_trees(name, version)
        if self.index:
            yield from self._wheel_tree(self.download(name, version))

    # -- the index --------------------------------------------------------------------------

    def _simple(self, name: str) -> list[dict[str, object]]:
        url = f"{self.index_url}/{normalize_name(name)}/"
        req = urllib.request.Request(url, headers={"Accept": _JSON})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                files: list[dict[str, object]] = json.loads(resp.read())["files"]
        except Exception as exc:  # network errors come in many types
            raise CompatkitError(f"cannot read {url}: {exc}") from None
        return files

    def index_hashes(self, name: str, version: str) -> set[str]:
        """The sha256 digests (hex) the index lists for ``name==version``'s wheels."""
        if (name, version) in self._hashes:
            return self._hashes[name, version]
        found = set()
        for f in self._simple(name) if self.index else []:
            hashes = f.get("hashes")
            fname = str(f.get("filename", ""))
            if isinstance(hashes, dict) and _wheel_matches(fname, name, version) is not None:
                found.add(str(hashes.get("sha256", "")).lower())
        self._hashes[name, version] = found - {""}
        return self._hashes[name, version]

    def versions(self, name: str) -> list[Version]:
        """Every version of ``name`` known locally and, unless offline, on the index."""
        found = {ver for ver, _ in self._local_wheels(name, None)}
        if self.index:
            for f in self._simple(name):
                ver = _file_version(str(f.get("filename", "")))
                if ver is not None and not f.get("yanked"):
                    found.add(ver)
        return sorted(found)

    def download(self, name: str, version: str) -> Path:
        """Download ``name==version``'s wheel into compatkit's cache (never installs it)."""
        dest = cache_dir() / "wheels"
        dest.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="compatkit-dl-") as tmp:
            whl = self._pip_download(name, version, Path(tmp)) or self._index_download(
                name, version, Path(tmp)
            )
            final = dest / whl.name
            shutil.move(str(whl), final)
        self.notes.append(f"downloaded {final.name}")
        return final

    def _pip_download(self, name: str, version: str, tmp: Path) -> Path | None:
        for py in dict.fromkeys(p for p in (self.python, sys.executable) if p):
            probe = subprocess.run([py, "-c", "import pip"], capture_output=True)
            if probe.returncode != 0:
                continue
            cmd = [py, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
            cmd += ["--disable-pip-version-check", "-d", str(tmp), f"{name}=={version}"]
            with self.reporter.task(f"downloading {name} {version} (pip)"):
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            wheels = list(tmp.glob("*.whl"))
            if proc.returncode == 0 and wheels:
                return wheels[0]
        return None

    def _index_download(self, name: str, version: str, tmp: Path) -> Path:
        tags = {str(t) for t in sys_tags()}
        best: tuple[int, dict[str, object]] | None = None
        for f in self._simple(name):
            fname = str(f.get("filename", ""))
            if _wheel_matches(fname, name, version) is None:
                continue
            wtags = {str(t) for t in parse_wheel_filename(fname)[3]}
            rank = 0 if any(t.endswith("-none-any") for t in wtags) else 1
            if wtags & tags and (best is None or rank < best[0]):
                best = (rank, f)
        if best is None:
            raise CompatkitError(f"no wheel of {name}=={version} for this platform on the index")
        f = best[1]
        target = tmp / str(f["filename"])
        digest = sha256()
        try:  # in pieces, hashed on the way: a wheel of gigabytes is never held in memory
            url = str(f["url"])
            with urllib.request.urlopen(url, timeout=600) as resp, open(target, "xb") as out:
                self._save(resp, out, digest, str(f["filename"]))
        except Exception as exc:
            raise CompatkitError(f"cannot download {f['filename']}: {exc}") from None
        expected = f.get("hashes", {})
        sha = expected.get("sha256") if isinstance(expected, dict) else None
        if sha and digest.hexdigest() != sha:
            raise CompatkitError(f"{f['filename']}: sha256 differs from the index's")
        return target

    def _save(self, resp: HTTPResponse, out: BinaryIO, digest: Hash, filename: str) -> None:
        """A download's body written to ``out`` and hashed in pieces, so that memory does not
        grow with it and its bar moves (its total: the response's ``Content-Length``, when it
        has one)."""
        length = resp.headers.get("Content-Length", "")
        with self.reporter.task(
            f"downloading {filename}", nbytes=int(length) if length.isdigit() else None
        ) as task:
            while block := resp.read(bounded.HASH_CHUNK):
                digest.update(block)
                out.write(block)
                task.advance(0, len(block))


def _file_version(filename: str) -> Version | None:
    try:
        if filename.endswith(".whl"):
            return parse_wheel_filename(filename)[1]
        return parse_sdist_filename(filename)[1]
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None


class Pristine(Value):
    """Some files of one released version (None: the wheel has no such file), with the set
    of paths its wheel owns."""

    __slots__ = ("label", "files", "owned")

    def __init__(self, label: str, files: dict[str, bytes | None], owned: frozenset[str]) -> None:
        self.label, self.files, self.owned = label, files, owned


def pristine(
    src: WheelSource,
    name: str,
    version: str,
    paths: Sequence[str],
    expect: Mapping[str, str] | None = None,
) -> Pristine:
    """The wheel bytes of ``paths`` of ``name==version``, from the first intact copy.

    ``expect`` maps paths to the RECORD hash the bytes must have (the installed RECORD's).
    """
    problems: list[str] = []
    for tree in src.trees(name, version):
        if tree.problems:
            problems.append(f"{tree.label}: {tree.problems[0]}")
            continue
        try:
            files = {p: tree.read(p) for p in paths}
        except Corrupt as exc:
            problems.append(str(exc))
            continue
        wrong = [p for p, h in (expect or {}).items() if h and hash_bytes(files[p] or b"") != h]
        if wrong:
            problems.append(f"{tree.label}: {', '.join(wrong)} differ from the installed RECORD")
            continue
        return Pristine(tree.label, files, frozenset(tree.record))
    problems = src.none_left(name, version, problems)
    raise CompatkitError(f"cannot get the pristine files of {name} {version}", problems)
