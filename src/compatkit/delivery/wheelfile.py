"""A wheel's names and bytes, rewritten for a new version (pure; no IO).

What ``compatkit wheel`` needs to turn the pristine wheel into a patched one that installers
accept: the PEP 440 local label carrying the patchset's hash, the wheel file name the wheel spec
derives from the name, the version and the ``WHEEL`` tags, the ``.dist-info`` / ``.data``
folders renamed to match, METADATA's ``Version`` rewritten, RECORD regenerated with true
hashes, and a zip that is the same bytes for the same input (fixed time, order, permissions).

>>> local_version("0.3.0", "ck.1a2b"), local_version("2.5.0+cu121", "ck.1a2b")
('0.3.0+ck.1a2b', '2.5.0+cu121.ck.1a2b')
>>> wheel_name("speculators", "0.3.0+ck.1a2b", b"Tag: py3-none-any\\n")
'speculators-0.3.0+ck.1a2b-py3-none-any.whl'
>>> rename_metadata("demo-1.0.dist-info/METADATA", "demo-1.0", "demo-1.0+ck.1")
'demo-1.0+ck.1.dist-info/METADATA'
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Mapping

from compatkit.errors import CompatkitError
from compatkit.model.records import Record, row_for

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


def regenerate_record(files: Mapping[str, bytes], record_path: str, order: list[str]) -> bytes:
    """A RECORD with the true hash and size of every file: ``order`` first (the pristine
    RECORD's order), then new files sorted, then RECORD itself without a hash."""
    rest = sorted(p for p in files if p not in order)
    paths = [p for p in [*order, *rest] if p in files and p != record_path]
    rows = [row_for(p, files[p]) for p in paths] + [row_for(record_path, None)]
    return Record(tuple(rows), "\n", True).render()


def zip_bytes(files: Mapping[str, bytes], executable: set[str], date_epoch: int) -> bytes:
    """The wheel as bytes: entries in ``files``' order with the top-level RECORD last, one
    timestamp, fixed permissions (0644, or 0755 for ``executable``), deflate level 9."""
    import time

    stamp = time.gmtime(max(date_epoch, ZIP_EPOCH))[:6]
    infos = sorted(files, key=lambda p: p.endswith(".dist-info/RECORD") and p.count("/") == 1)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in infos:
            info = zipfile.ZipInfo(path, date_time=stamp)
            info.external_attr = (0o100755 if path in executable else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # unix, whatever builds it
            zf.writestr(info, files[path], compresslevel=9)
    return buf.getvalue()
