"""Where patchsets come from: the ones shipped with compatkit plus ``--patchset-dir`` folders.

>>> reg = Registry(extra_dirs=[])
>>> "speculators-vllm016" in reg.names()  # doctest: +SKIP
True
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from compatkit.errors import UsageError
from compatkit.load.trust import Finding, Resolver, check_folder, refusal, shown, survey_all
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
    """Every ``extra_dirs`` folder, each patchset folder in it, and every part of a patchset
    compatkit reads must be the user's or root's and writable by nobody else
    (compatkit.load.trust), or it is refused. Each folder is resolved once, here, and read
    only through its resolved path."""

    def __init__(self, extra_dirs: Sequence[Path]) -> None:
        self._trust = Resolver()
        extra = [check_folder(d, f"--patchset-dir {shown(d)}", self._trust) for d in extra_dirs]
        # Later directories win, so a user's --patchset-dir can shadow a bundled patchset.
        self._bundled = bundled_dirs()
        self.dirs = [*self._bundled, *extra]
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

    def get(self, name: str) -> Patchset:
        if name in self._cache:
            return self._cache[name]
        locations = self._locations()
        if name not in locations:
            raise _unknown(name, locations)
        from compatkit.load.validate import load_patchset  # imported on the first load only

        root = locations[name]
        trust = self._trust if root.parent not in self._bundled else _shipped()
        patchset = load_patchset(root, trust)
        self._cache[name] = patchset
        return patchset

    def all(self) -> Iterator[Patchset]:
        for name in self.names():
            yield self.get(name)

    def find_patch(self, patch_id: str) -> list[tuple[Patchset, Patch]]:
        return [(ps, p) for ps in self.all() for p in ps.patches if p.id == patch_id]


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
