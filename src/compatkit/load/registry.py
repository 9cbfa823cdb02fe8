"""Where patchsets come from: the ones shipped with compatkit plus ``--patchset-dir`` folders.

>>> reg = Registry(extra_dirs=[])
>>> "speculators-vllm016" in reg.names()  # doctest: +SKIP
True
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from compatkit.errors import UsageError
from compatkit.load.trust import check_folder, shown
from compatkit.model.patchset import Patch, Patchset


def bundled_dirs() -> list[Path]:
    """The shipped patchsets: inside the wheel, or the repository's ``patchsets/``."""
    here = Path(__file__).resolve().parent.parent  # the compatkit package folder
    candidates = [here / "patchsets", here.parent.parent / "patchsets"]
    return [c for c in candidates if c.is_dir()]


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError as exc:  # a folder we may not enter (EACCES), a name too long
        raise UsageError(f"{shown(path.parent)}: {exc.strerror}") from None


class Registry:
    """Every ``extra_dirs`` folder, and each patchset folder in it, must be the user's or
    root's and writable by nobody else (compatkit.load.trust), or it is refused."""

    def __init__(self, extra_dirs: Sequence[Path]) -> None:
        for d in extra_dirs:
            check_folder(d, f"--patchset-dir {shown(d)}")
        # Later directories win, so a user's --patchset-dir can shadow a bundled patchset.
        self._bundled = bundled_dirs()
        self.dirs = [*self._bundled, *extra_dirs]
        self._cache: dict[str, Patchset] = {}

    def _locations(self) -> dict[str, Path]:
        found: dict[str, Path] = {}
        for base in self.dirs:
            if _is_file(base / "patchset.toml"):
                found[base.name] = base
                continue
            try:
                children = sorted(base.iterdir())
            except OSError as exc:  # unreadable: say which folder, and why
                raise UsageError(f"--patchset-dir {shown(base)}: {exc.strerror}") from None
            for child in children:
                if _is_file(child / "patchset.toml"):
                    if base not in self._bundled:
                        check_folder(child, f"patchset folder {shown(child)}")
                    found[child.name] = child
        return found

    def names(self) -> list[str]:
        return sorted(self._locations())

    def location(self, name: str) -> Path:
        """The directory of patchset ``name``, without loading it."""
        locations = self._locations()
        if name not in locations:
            raise _unknown(name, locations)
        return locations[name]

    def get(self, name: str) -> Patchset:
        if name in self._cache:
            return self._cache[name]
        locations = self._locations()
        if name not in locations:
            raise _unknown(name, locations)
        from compatkit.load.validate import load_patchset  # imported on the first load only

        patchset = load_patchset(locations[name])
        self._cache[name] = patchset
        return patchset

    def all(self) -> Iterator[Patchset]:
        for name in self.names():
            yield self.get(name)

    def find_patch(self, patch_id: str) -> list[tuple[Patchset, Patch]]:
        return [(ps, p) for ps in self.all() for p in ps.patches if p.id == patch_id]


def _unknown(name: str, known: Iterable[str]) -> UsageError:
    """ "unknown patchset", with a "did you mean" when one name is close."""
    from difflib import get_close_matches  # only on this error path

    names = sorted(known)
    close = get_close_matches(name, names, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return UsageError(f"unknown patchset {name!r}{hint}; known: {', '.join(names) or 'none'}")
