"""A wheel's names and bytes, rewritten for a new version (no file system paths: it reads
and writes only the open files it is handed).

What ``compatkit wheel`` needs to turn the pristine wheel into a patched one that installers
accept: the PEP 440 local label carrying the patchset's hash, the wheel file name the wheel spec
derives from the name, the version and the ``WHEEL`` tags, the ``.dist-info`` / ``.data``
folders renamed to match, METADATA's ``Version`` rewritten, RECORD regenerated with true
hashes, and a zip that is the same bytes for the same input (fixed time, order, permissions).

A file of the source wheel is a :class:`Stored` unless it must be read (metadata, a file a
patch edits): it stays where it is, its RECORD hash and size known from one streamed pass,
and is copied into the new wheel in :data:`CHUNK` pieces, hashed again on the way (a copy
that changed meanwhile is refused). Memory does not grow with a file's size (issue 36).

>>> local_version("0.3.0", "ck.1a2b"), local_version("2.5.0+cu121", "ck.1a2b")
('0.3.0+ck.1a2b', '2.5.0+cu121.ck.1a2b')
>>> wheel_name("speculators", "0.3.0+ck.1a2b", b"Tag: py3-none-any\\n")
'speculators-0.3.0+ck.1a2b-py3-none-any.whl'
>>> rename_metadata("demo-1.0.dist-info/METADATA", "demo-1.0", "demo-1.0+ck.1")
'demo-1.0+ck.1.dist-info/METADATA'
"""

from __future__ import annotations

import contextlib
import io
import re
import zipfile
from collections.abc import Callable, Mapping
from hashlib import sha256
from typing import IO, TypeAlias

from compatkit import bounded
from compatkit.errors import CompatkitError
from compatkit.model.records import Record, hash_bytes, record_hash, row_with
from compatkit.value import Value

CHUNK = bounded.HASH_CHUNK
Opener: TypeAlias = Callable[[], contextlib.AbstractContextManager[IO[bytes]]]
# what reading a copy of a wheel may raise: a damaged zip, a file swapped for a FIFO
UNREADABLE = (OSError, zipfile.BadZipFile, EOFError, ValueError, NotImplementedError)


class Stored(Value):
    """A file of a copy of a wheel, left where it is: its RECORD ``hash`` and ``size`` (from
    :func:`stream_digest`) and ``open``, which opens it for reading (``label``: the copy)."""

    __slots__ = ("label", "path", "hash", "size", "open")

    def __init__(self, label: str, path: str, hash: str, size: int, open: Opener) -> None:
        self.label, self.path, self.hash, self.size, self.open = label, path, hash, size, open


Content: TypeAlias = "bytes | Stored"


def stream_digest(opener: Opener, sink: Callable[[bytes], object] | None = None) -> tuple[str, int]:
    """The RECORD hash and size of what ``opener`` opens, read in :data:`CHUNK` pieces (each
    also handed to ``sink``). Raises what reading raises (:data:`UNREADABLE`)."""
    h, size = sha256(), 0
    with opener() as f:
        while block := f.read(CHUNK):
            h.update(block)
            size += len(block)
            if sink is not None:
                sink(block)
    return record_hash(h.digest()), size


def _pump(stored: Stored, sink: Callable[[bytes], object]) -> None:
    """Hand ``stored``'s bytes to ``sink`` in pieces; raise if they are not the ones hashed."""
    where = f"{stored.label}: {stored.path}"
    try:
        digest = stream_digest(stored.open, sink)
    except (*UNREADABLE, bounded.Refused) as exc:
        raise CompatkitError(f"{where}: unreadable ({exc})") from None
    if digest != (stored.hash, stored.size):
        raise CompatkitError(f"{where} changed while compatkit read it; nothing written")


def digest_of(content: Content) -> tuple[str, int]:
    """``content``'s RECORD hash and size (a :class:`Stored` one's, as found)."""
    if isinstance(content, Stored):
        return content.hash, content.size
    return hash_bytes(content), len(content)


def data_of(content: Content) -> bytes:
    """``content``'s bytes: a :class:`Stored` file is read whole (a file a patch edits or a
    metadata file: small), and checked against its hash."""
    if not isinstance(content, Stored):
        return content
    buf = io.BytesIO()
    _pump(content, buf.write)
    return buf.getvalue()


def head_of(content: Content, size: int) -> bytes:
    """The first ``size`` bytes of ``content`` (only those are read)."""
    if not isinstance(content, Stored):
        return content[:size]
    try:
        with content.open() as f:
            return f.read(size)
    except (*UNREADABLE, bounded.Refused) as exc:
        raise CompatkitError(f"{content.label}: {content.path}: unreadable ({exc})") from None


# 1980-01-01, the earliest time a zip entry can hold; SOURCE_DATE_EPOCH overrides it
ZIP_EPOCH = 315532800


def local_version(version: str, label: str) -> str:
    """``version`` with ``label`` as (the end of) its PEP 440 local version label."""
    return f"{version}.{label}" if "+" in version else f"{version}+{label}"


def escaped_name(name: str) -> str:
    """A distribution name as wheel file and ``.dist-info`` names spell it."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _tags(wheel_meta: bytes) -> tuple[list[str], str | None]:
    tags, build = [], None
    for line in wheel_meta.decode("utf-8", "replace").splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() == "tag":
            tags.append(value.strip())
        elif key.strip().lower() == "build":
            build = value.strip()
    return tags, build


def wheel_name(name: str, version: str, wheel_meta: bytes) -> str:
    """The wheel file name for ``name`` ``version`` with the tags its ``WHEEL`` file lists."""
    tags, build = _tags(wheel_meta)
    parts: list[list[str]] = [[], [], []]
    for tag in tags:
        pieces = tag.split("-")
        if len(pieces) != 3:
            raise CompatkitError(f"WHEEL: malformed tag {tag!r}")
        for i, piece in enumerate(pieces):
            if piece not in parts[i]:
                parts[i].append(piece)
    expanded = {f"{a}-{b}-{c}" for a in parts[0] for b in parts[1] for c in parts[2]}
    if not tags or expanded != set(tags):
        raise CompatkitError(f"WHEEL: its tags {tags} do not compress into one file name")
    tag = "-".join(".".join(p) for p in parts)
    middle = f"-{build}" if build else ""
    return f"{escaped_name(name)}-{version.replace('-', '_')}{middle}-{tag}.whl"


def rename_metadata(path: str, old_stem: str, new_stem: str) -> str:
    """``path`` with the ``OLD.dist-info`` / ``OLD.data`` folder renamed to ``NEW``."""
    top, sep, rest = path.partition("/")
    for suffix in (".dist-info", ".data"):
        if top == old_stem + suffix:
            return f"{new_stem}{suffix}{sep}{rest}"
    return path


def set_version(metadata: bytes, version: str) -> bytes:
    """METADATA with its ``Version:`` header (the first, among the headers) set to ``version``."""
    lines = metadata.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if not line.strip():
            break
        if line.lower().startswith(b"version:"):
            ending = line[len(line.rstrip(b"\r\n")) :]
            lines[i] = b"Version: " + version.encode() + ending
            return b"".join(lines)
    raise CompatkitError("METADATA has no Version header")


def regenerate_record(files: Mapping[str, Content], record_path: str, order: list[str]) -> bytes:
    """A RECORD with the true hash and size of every file: ``order`` first (the pristine
    RECORD's order), then new files sorted, then RECORD itself without a hash."""
    rest = sorted(p for p in files if p not in order)
    paths = [p for p in [*order, *rest] if p in files and p != record_path]
    rows = [row_with(p, digest_of(files[p])) for p in paths] + [row_with(record_path, None)]
    return Record(tuple(rows), "\n", True).render()


def write_zip(
    out: IO[bytes], files: Mapping[str, Content], executable: set[str], date_epoch: int
) -> None:
    """The wheel, written to ``out`` (seekable): entries in ``files``' order with the top-level
    RECORD last, one timestamp, fixed permissions (0644, or 0755 for ``executable``), deflate
    level 9. A :class:`Stored` file is copied in pieces and checked against its hash."""
    import time

    stamp = time.gmtime(max(date_epoch, ZIP_EPOCH))[:6]
    infos = sorted(files, key=lambda p: p.endswith(".dist-info/RECORD") and p.count("/") == 1)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in infos:
            info = zipfile.ZipInfo(path, date_time=stamp)
            info.external_attr = (0o100755 if path in executable else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # unix, whatever builds it
            content = files[path]
            if not isinstance(content, Stored):
                zf.writestr(info, content, compresslevel=9)
                continue
            # what writestr does, in pieces: the size known first (zip64 decided by it)
            info.file_size = content.size
            info._compresslevel = 9  # type: ignore[attr-defined]  # writestr's compresslevel
            with zf.open(info, "w") as dest:
                _pump(content, dest.write)
