"""One copy of a wheel, zipped or unpacked: its RECORD, its files, why it is unsafe (reads only).

A copy is read lazily: building a :class:`Tree` reads the zip's central directory and RECORD,
checks names, bounds and RECORD coverage (:mod:`compatkit.delivery.wheelcheck`) and inflates nothing
else; :meth:`Tree.read` checks each file against the RECORD hash it must have, and
:meth:`Tree.content` does so streamed, keeping none of a file but its hash and size.

>>> Tree("t", {"pkg/m.py": "sha256=x"}, lambda p: b"x").owns("pkg/m.py")
True
"""

from __future__ import annotations

import contextlib
import os
import weakref
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from compatkit import bounded
from compatkit.delivery import wheelcheck
from compatkit.delivery.wheelfile import UNREADABLE, Content, Stored, stream_digest
from compatkit.model.records import Record, hash_bytes
from compatkit.value import Value


def _not_executable(path: str) -> bool:
    return False


class Tree(Value):
    """One wheel's files: ``record`` maps each path to its RECORD hash ("" when it has none).

    ``problems``: why this copy is not a sane wheel (names, bounds, RECORD gaps; see
    :mod:`compatkit.delivery.wheelcheck`). ``archive``: the ``.whl`` file (None: an unpacked
    copy). ``opener`` opens a file for reading in pieces (None: only ``reader``); KeyError or
    FileNotFoundError when the copy has no such file."""

    __slots__ = ("label", "record", "reader", "executable", "problems", "archive", "opener")

    def __init__(
        self,
        label: str,
        record: dict[str, str],
        reader: Callable[[str], bytes | None],
        executable: Callable[[str], bool] = _not_executable,
        problems: tuple[str, ...] = (),
        archive: Path | None = None,
        opener: Callable[[str], contextlib.AbstractContextManager[IO[bytes]]] | None = None,
    ) -> None:
        self.label, self.record, self.reader = label, record, reader
        self.executable, self.problems = executable, problems
        self.archive, self.opener = archive, opener

    def owns(self, path: str) -> bool:
        return path in self.record

    def read(self, path: str) -> bytes | None:
        """The file's bytes; None if the wheel has no such file; raises if they are corrupt."""
        if path not in self.record:
            return None
        data = self.reader(path)
        expected = self.record[path]
        if data is None or (expected and hash_bytes(data) != expected):
            raise Corrupt(f"{self.label}: {path} does not match the wheel's RECORD")
        return data

    def content(self, path: str) -> Content | None:
        """The file as a :class:`Stored` one, hashed streamed against its RECORD hash (its
        bytes, from :meth:`read`, when it has no hash or this copy cannot be streamed); None
        if the wheel has no such file; raises :class:`Corrupt` if it does not match."""
        opener, expected = self.opener, self.record.get(path, "")
        if opener is None or not expected:
            return self.read(path)

        def open_it() -> contextlib.AbstractContextManager[IO[bytes]]:
            return opener(path)

        try:
            digest, size = stream_digest(open_it)
        except (KeyError, FileNotFoundError, NotADirectoryError):
            return None
        except (*UNREADABLE, bounded.Refused) as exc:
            raise Corrupt(f"{self.label}: {path}: unreadable ({exc})") from None
        if digest != expected:
            raise Corrupt(f"{self.label}: {path} does not match the wheel's RECORD")
        return Stored(self.label, path, digest, size, open_it)


class Corrupt(Exception):
    """A copy of a wheel that is damaged, unsafe or not proven the release (skip it)."""


class NotAZip(Exception):
    """A ``*.whl`` that is not a zip archive (a candidate to skip, with a note)."""


def _record_of(names: list[str], read: Callable[[str], bytes | None]) -> dict[str, str]:
    infos = [n for n in names if n.endswith(".dist-info/RECORD") and n.count("/") == 1]
    if len(infos) != 1:
        return {}
    raw = read(infos[0])
    rows = Record.parse(raw).rows if raw else ()
    return {r.path: r.hash for r in rows if r.path}


@contextlib.contextmanager
def open_zip(path: Path) -> Iterator[zipfile.ZipFile]:
    """The zip archive at ``path``, opened through :func:`compatkit.bounded.open_regular`: a
    FIFO or a device under a wheel's name raises :class:`compatkit.bounded.Refused`."""
    fd, _ = bounded.open_regular(path)
    with os.fdopen(fd, "rb") as f, zipfile.ZipFile(f) as zf:
        yield zf


def tree_from_wheel(path: Path) -> Tree:
    """The wheel at ``path``, its bounds and names checked before anything is inflated;
    raises :class:`NotAZip` for a file that is no zip archive (or no regular file). The
    archive is opened once (:func:`compatkit.bounded.open_regular`) and its central directory
    read once, for every file the tree reads: a file swapped under its name meanwhile is not
    read, and a wheel of 15,000 files costs one parse, not one a file."""
    archive: list[zipfile.ZipFile] = []

    def opened() -> zipfile.ZipFile:
        if not archive:
            fd, _ = bounded.open_regular(path)
            f = os.fdopen(fd, "rb")
            try:
                zf = zipfile.ZipFile(f)
            except BaseException:
                f.close()
                raise
            weakref.finalize(zf, f.close)  # closed with the tree, not left to the collector
            archive.append(zf)
        return archive[0]

    def read(name: str) -> bytes | None:
        try:
            return opened().read(name)
        except KeyError:
            return None
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
            raise Corrupt(f"{path}: {name}: unreadable ({exc})") from None
        except bounded.Refused as exc:
            raise Corrupt(f"{path}: {exc.why}") from None

    try:
        infos = opened().infolist()
    except (zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise NotAZip(f"skipped {path}: not a zip archive ({exc})") from None
    except bounded.Refused as exc:
        raise NotAZip(f"skipped {path}: {exc.why}") from None
    except OSError as exc:
        raise NotAZip(f"skipped {path}: unreadable ({exc.strerror or exc})") from None
    names = [i.filename for i in infos]
    modes = {i.filename: i.external_attr >> 16 for i in infos}
    problems = wheelcheck.zip_problems(infos)
    try:
        record = {} if problems else _record_of(names, read)
    except Corrupt as exc:
        problems, record = [str(exc)], {}
    problems += wheelcheck.record_problems(names, record) if record else []
    problems += [q for p in record if (q := wheelcheck.entry_problem(p))]
    executable = lambda n: bool(modes.get(n, 0) & 0o111)  # noqa: E731

    def member(name: str) -> contextlib.AbstractContextManager[IO[bytes]]:
        return opened().open(name)  # checks the CRC at the end; KeyError: no such file

    return Tree(str(path), record, read, executable, tuple(problems), path, member)


def tree_from_dir(root: Path) -> Tree:
    """An unpacked wheel (uv's cache): every file in it must be in its RECORD, with a hash."""

    def read(name: str) -> bytes | None:
        try:
            return bounded.read(root / name, bounded.INSTALLED)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except bounded.Refused as exc:  # a folder, a FIFO, a device: this copy is no wheel
            raise Corrupt(f"{root}: {exc}") from None

    def executable(name: str) -> bool:
        try:
            return bool((root / name).stat().st_mode & 0o111)
        except OSError:
            return False

    @contextlib.contextmanager
    def file(name: str) -> Iterator[IO[bytes]]:
        fd, _ = bounded.open_regular(root / name)  # a folder, a FIFO, a device: Refused
        with os.fdopen(fd, "rb") as f:
            yield f

    infos = [f"{p.name}/RECORD" for p in root.glob("*.dist-info")]
    try:
        record = _record_of(infos, read)
    except Corrupt as exc:
        return Tree(str(root), {}, read, executable, (str(exc),))
    names = [p.relative_to(root).as_posix() for p in root.rglob("*") if not p.is_dir()]
    names = [n for n in names if "__pycache__/" not in n]  # bytecode an installer compiled
    problems = wheelcheck.record_problems(names, record) if record else []
    problems += [q for p in record if (q := wheelcheck.entry_problem(p))]
    return Tree(str(root), record, read, executable, tuple(problems), None, file)
