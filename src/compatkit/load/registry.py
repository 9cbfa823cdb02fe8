"""Where patchsets come from: the ones shipped with compatkit (bundled), installed packages'
``compatkit.patchsets`` entry points (read in compatkit's own environment only), the project's
``patchset-dirs`` and ``--patchset-dir`` folders.

>>> reg = Registry(extra_dirs=[])
>>> "speculators-vllm016" in reg.names()  # doctest: +SKIP
True
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from compatkit import bounded
from compatkit.errors import UsageError
from compatkit.load.trust import Finding, Resolver, check_folder, refusal, shown, survey_all
from compatkit.model.names import normalize_name

TYPE_CHECKING = False

if TYPE_CHECKING:
    from importlib.metadata import Distribution

    from compatkit.model.patchset import Patch, Patchset


def bundled_dirs() -> list[Path]:
    """The shipped patchsets: inside the wheel, or the repository's ``patchsets/``."""
    here = Path(__file__).resolve().parent.parent  # the compatkit package folder
    candidates = [here / "patchsets", here.parent.parent / "patchsets"]
    return [c for c in candidates if c.is_dir()]


GROUP = "compatkit.patchsets"


def package_dirs() -> list[tuple[str, Path]]:
    """("package NAME VERSION", folder) for each ``compatkit.patchsets`` entry point of a
    distribution in compatkit's own site-packages (``sys.prefix``'s; never the --python
    target's, never PYTHONPATH). The value names a package folder (``team_patchsets`` or
    ``team.sets``); it is located, not imported: no code of the package runs. Only the
    distributions whose entry_points.txt names the group are read with importlib.metadata,
    so a run in an environment without such a package imports nothing more; and only
    through :mod:`compatkit.bounded` (:func:`_distribution`): a METADATA that is a FIFO or a
    link to ``/dev/zero`` is one line naming it, exit 1, never a hang."""
    import site

    found = []
    for dist_info in _declaring(site.getsitepackages([sys.prefix])):
        dist = _distribution(dist_info)
        for ep in dist.entry_points.select(group=GROUP):
            label = f"package {shown(dist.name)} {shown(dist.version)}"
            found.append((label, _entry_folder(dist, ep.name, ep.value, label)))
    return sorted(found)


def _distribution(dist_info: Path) -> Distribution:
    """importlib.metadata's distribution of ``dist_info``, every file of it (METADATA,
    entry_points.txt) read through :func:`compatkit.bounded.read`: a FIFO, a device or a
    file over ``bounded.METADATA`` raises :class:`compatkit.bounded.Refused`, naming it."""
    from importlib.metadata import PathDistribution

    class BoundedDistribution(PathDistribution):
        def read_text(self, filename: str | os.PathLike[str]) -> str | None:
            try:
                data = bounded.read(dist_info / filename, bounded.METADATA)
            except (FileNotFoundError, NotADirectoryError, PermissionError):
                return None  # as PathDistribution: a file it does not have
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError:
                raise bounded.Refused(str(dist_info / filename), "not UTF-8 text") from None

    return BoundedDistribution(dist_info)


def _entry_folder(dist: Distribution, name: str, value: str, label: str) -> Path:
    """The package folder an entry point names, which must be one of the distribution's own:
    a dotted name of identifiers (``team.sets``), below which its RECORD lists a file.
    Anything else (``..tmp.some.folder``, a path, a folder it does not install) is refused
    with one line: a package may only ship the patchsets it installs."""
    where = value.split(":")[0].strip()
    parts = where.split(".")
    rel = "/".join(parts)
    record = dist.read_text("RECORD") or ""
    listed = any(row.startswith(f"{rel}/") for row in record.splitlines())
    if not all(p.isidentifier() for p in parts) or not listed:
        raise UsageError(
            f"{label}: entry point {shown(f'{name} = {value}')} of group {GROUP} names no "
            f"package folder of its own distribution; a package may ship only the patchsets "
            f"it installs (remove the package, or fix its entry_points.txt)"
        )
    return Path(str(dist.locate_file(rel)))


def _declaring(site_dirs: Sequence[str]) -> Iterator[Path]:
    """The ``*.dist-info`` folders whose entry_points.txt mentions the group.

    Python keeps no index of entry points, so this looks at every distribution of compatkit's
    own site-packages: one ``stat`` each (most have no entry_points.txt), on plain strings, so
    it costs microseconds per distribution (issue 36's bench, G-status)."""
    group = GROUP.encode()
    for base in site_dirs:
        try:  # each file is opened from the folder's descriptor: one path walk less per file
            folder = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:  # no such folder (lib64 on this system, say)
            continue
        try:
            entries = sorted(e.name for e in os.scandir(folder) if e.name.endswith(".dist-info"))
            found = [name for name in entries if group in _entry_points(folder, base, name)]
        finally:
            os.close(folder)
        yield from (Path(base, name) for name in found)


def _entry_points(folder: int, base: str, name: str) -> bytes:
    """The entry_points.txt of ``name`` in the folder open as ``folder`` (b"": none, or not
    one to read: not a regular file, over its bound)."""
    where = f"{base}/{name}/entry_points.txt"
    try:
        return bounded.read(f"{name}/entry_points.txt", 1 << 20, dir_fd=folder, where=where)
    except (OSError, bounded.Refused):
        return b""


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError as exc:  # a folder we may not enter (EACCES), a name too long
        raise UsageError(f"{shown(path.parent)}: {exc.strerror}") from None


class Registry:
    """Every ``extra_dirs`` folder, each patchset folder in it, and every part of a patchset
    compatkit reads must be the user's or root's and writable by nobody else
    (compatkit.load.trust), or it is refused. Each folder is resolved once, here, and read
    only through its resolved path."""

    def __init__(
        self,
        extra_dirs: Sequence[Path],
        project_dirs: Sequence[Path] = (),
        choose: Mapping[str, str] | None = None,
    ) -> None:
        self._trust = Resolver()
        extra = [check_folder(d, f"--patchset-dir {shown(d)}", self._trust) for d in extra_dirs]
        what = "[tool.compatkit] patchset-dirs"
        project = [check_folder(d, f"{what} {shown(d)}", self._trust) for d in project_dirs]
        # Later directories win, so a user's --patchset-dir can shadow a bundled patchset; a
        # package's patchset shadows nothing: the same name elsewhere is a conflict, unless
        # the project's [tool.compatkit] patchset-source names the one to use.
        self._bundled = bundled_dirs()
        self.dirs = [*self._bundled, *extra, *project]
        self._sources: dict[Path, str] = {d: "bundled" for d in self._bundled}
        self._sources.update({d: "project" for d in project})
        self._sources.update({d: "--patchset-dir" for d in extra})
        self._choose = dict(choose or {})
        self._packages: list[tuple[str, Path]] | None = None
        self._cache: dict[str, Patchset] = {}
        self.conflicts: dict[str, list[tuple[str, Path]]] = {}

    def _package_dirs(self) -> list[tuple[str, Path]]:
        if self._packages is None:
            self._packages = [
                (label, check_folder(d, label, self._trust)) for label, d in package_dirs()
            ]
        return self._packages

    def source(self, ps: Patchset | Path) -> str:
        """Where a patchset comes from: bundled, project, --patchset-dir or package NAME VER."""
        root = ps if isinstance(ps, Path) else ps.root
        for base in (root, root.parent):
            if base in self._sources:
                return self._sources[base]
        return "--patchset-dir"

    def _locations(self) -> dict[str, Path]:
        found = self._scan(self.dirs)
        self._sources.update({d: label for label, d in self._package_dirs()})
        self.conflicts = {}
        for _, folder in self._package_dirs():
            for name, root in self._scan([folder]).items():
                if name not in found:
                    found[name] = root
                    continue
                sources = [*self.conflicts.get(name, [(self.source(found[name]), found[name])])]
                sources.append((self.source(root), root))
                wanted = self._choose.get(name)
                picked = [r for src, r in sources if wanted is not None and _names(src, wanted)]
                if len(picked) == 1:
                    found[name] = picked[0]
                    self.conflicts.pop(name, None)
                else:
                    self.conflicts[name] = sources
        return found

    def _scan(self, dirs: Sequence[Path]) -> dict[str, Path]:
        found: dict[str, Path] = {}
        for base in dirs:
            if _is_file(base / "patchset.toml"):
                found[base.name] = base
                continue
            try:
                children = sorted(base.iterdir())
            except OSError as exc:  # unreadable: say which folder, and why
                raise UsageError(f"--patchset-dir {shown(base)}: {exc.strerror}") from None
            untrusted: list[Finding] = []
            for child in children:
                if _is_file(child / "patchset.toml"):
                    if base not in self._bundled:
                        child = Path(self._resolve(child, untrusted))
                    found[child.name] = child
            if untrusted:  # every patchset folder here, so that one fix is enough
                survey_all(self._trust, str(base), untrusted)
                raise refusal(f"--patchset-dir {shown(base)}", untrusted)
        return found

    def _resolve(self, child: Path, untrusted: list[Finding]) -> str:
        try:
            return self._trust.resolve(str(child), untrusted)
        except OSError as exc:  # it changed since it was listed
            raise UsageError(f"patchset folder {shown(child)}: {exc.strerror}") from None

    def names(self) -> list[str]:
        return sorted(self._locations())

    def location(self, name: str) -> Path:
        """The directory of patchset ``name``, without loading it."""
        locations = self._locations()
        if name not in locations:
            raise _unknown(name, locations)
        return locations[name]

    def conflict(self, name: str) -> str | None:
        """One line naming both sources of ``name``, when it has two and the project chose
        neither (None otherwise)."""
        self._locations()
        return self._conflict(name)

    def _conflict(self, name: str) -> str | None:
        """:meth:`conflict`, from the last scan's ``conflicts``."""
        sources = self.conflicts.get(name)
        if not sources:
            return None
        both = " and ".join(f"{src} ({shown(root)})" for src, root in sources)
        return (
            f"patchset {name!r} comes from two sources: {both}; name the one to use in "
            f'[tool.compatkit.patchset-source] ({name} = "bundled", "project", '
            '"--patchset-dir" or a package name)'
        )

    def get(self, name: str) -> Patchset:
        if name in self._cache:
            return self._cache[name]
        return self._load(name, self._locations())

    def _load(self, name: str, locations: dict[str, Path]) -> Patchset:
        """Patchset ``name`` of one scan of the folders (``locations``, ``conflicts``)."""
        if name in self._cache:
            return self._cache[name]
        if name not in locations:
            raise _unknown(name, locations)
        if (clash := self._conflict(name)) is not None:
            raise UsageError(clash)
        from compatkit.load.validate import load_patchset  # imported on the first load only

        root = locations[name]
        trust = self._trust if root.parent not in self._bundled else _shipped()
        patchset = load_patchset(root, trust)
        self._cache[name] = patchset
        return patchset

    def all(self) -> Iterator[Patchset]:
        """Every patchset, from one scan of the folders."""
        locations = self._locations()
        for name in sorted(locations):
            yield self._load(name, locations)

    def find_patch(self, patch_id: str) -> list[tuple[Patchset, Patch]]:
        return [(ps, p) for ps in self.all() for p in ps.patches if p.id == patch_id]


def _names(source: str, wanted: str) -> bool:
    """Whether ``wanted`` (a patchset-source value) names ``source``: "bundled", "project",
    "--patchset-dir" (or "patchset-dir"), or a package's distribution name."""
    if source.startswith("package "):
        return normalize_name(source.split()[1]) == normalize_name(wanted)
    return source.lstrip("-") == wanted.lstrip("-")


def _shipped() -> Resolver:
    """The shipped patchsets are trusted as compatkit itself is: their owner may also be
    whoever owns compatkit's package folder (who installed it)."""
    owner = os.stat(Path(__file__).parent.parent).st_uid
    return Resolver((os.geteuid(), 0, owner))


def _unknown(name: str, known: Iterable[str]) -> UsageError:
    """ "unknown patchset", with a "did you mean" when one name is close."""
    from difflib import get_close_matches  # only on this error path

    names = sorted(known)
    close = get_close_matches(name, names, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return UsageError(f"unknown patchset {name!r}{hint}; known: {', '.join(names) or 'none'}")
