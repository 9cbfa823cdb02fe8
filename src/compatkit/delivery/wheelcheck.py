"""Is this wheel the release? The checks ``compatkit wheel`` makes on a source wheel (pure).

A copy of a wheel found in a folder or a cache proves nothing by matching its *own* RECORD:
whoever wrote the file could write the RECORD too. So a source wheel must first be a sane zip
(names contained, sizes and compression ratios bounded, every entry listed in its RECORD with
a hash), and then be proven to be the release by one of: the sha256 the user passes
(``--sha256``), the index's sha256 for that file, or the installed distribution's RECORD (every
file the wheel installs has the hash the installed release recorded, and none is new).

>>> entry_problem("../x.py"), entry_problem("/x.py"), entry_problem("pkg/m.py")
("../x.py: refused (contains '..')", '/x.py: refused (absolute)', None)
>>> installed_path("demo-1.0.data/purelib/demo/x.py", "demo-1.0.data")
'demo/x.py'
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable, Mapping

from compatkit.delivery.wheelfile import Content, digest_of, head_of

MAX_ENTRIES = 100_000
MAX_ENTRY = 2 << 30  # declared uncompressed bytes of one entry
MAX_TOTAL = 4 << 30  # ... and of all entries
MAX_RATIO = 200  # uncompressed / compressed, for an entry over RATIO_FLOOR bytes
RATIO_FLOOR = 1 << 20
SIGNATURES = ("RECORD.jws", "RECORD.p7s")  # beside RECORD, never in it (the wheel spec)
# what installers add to or rewrite in a .dist-info: not the release's bytes
_INSTALLER_FILES = ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json")


def entry_problem(name: str) -> str | None:
    """Why a zip entry's name is not a plain relative path inside the wheel (None: it is)."""
    if not name or any(not ch.isprintable() for ch in name):
        return f"{name!r}: refused (empty, or a control character)"
    if "\\" in name:
        return f"{name}: refused (a backslash)"
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return f"{name}: refused (absolute)"
    parts = name.rstrip("/").split("/")
    if ".." in parts:
        return f"{name}: refused (contains '..')"
    if any(p in ("", ".") for p in parts):
        return f"{name}: refused (an empty or '.' component)"
    return None


def zip_problems(infos: list[zipfile.ZipInfo]) -> list[str]:
    """Every bound an archive breaks, read from its central directory (nothing inflated)."""
    if len(infos) > MAX_ENTRIES:
        return [f"{len(infos)} entries (more than {MAX_ENTRIES})"]
    found = [p for i in infos if (p := entry_problem(i.filename))]
    names = [i.filename for i in infos]
    if len(set(names)) != len(names):
        found.append("an entry name appears twice")
    total = 0
    for info in infos:
        total += info.file_size
        if info.file_size > MAX_ENTRY:
            found.append(f"{info.filename}: {info.file_size} bytes (more than {MAX_ENTRY})")
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > RATIO_FLOOR and ratio > MAX_RATIO:
            found.append(f"{info.filename}: compressed {ratio:.0f}:1 (a zip bomb?)")
    if total > MAX_TOTAL:
        found.append(f"{total} bytes uncompressed in all (more than {MAX_TOTAL})")
    return found


def record_problems(names: Iterable[str], record: Mapping[str, str]) -> list[str]:
    """Every file of the wheel that its RECORD leaves out or lists without a hash."""
    found = []
    for name in names:
        if name.endswith("/"):
            continue
        last = name.rsplit("/", 1)[-1]
        meta = name.count("/") == 1 and name.split("/", 1)[0].endswith(".dist-info")
        if meta and last in ("RECORD", *SIGNATURES):
            continue
        if name not in record:
            found.append(f"{name} is not listed in the wheel's RECORD")
        elif not record[name]:
            found.append(f"{name} has no hash in the wheel's RECORD")
    return found


def installed_path(name: str, data_dir: str) -> str | None:
    """Where an installer puts the wheel's file ``name``, relative to site-packages, when
    that is fixed (None: a script, header or data file, placed by the installation scheme)."""
    if not name.startswith(data_dir + "/"):
        return name
    scheme, _, rest = name[len(data_dir) + 1 :].partition("/")
    return rest if scheme in ("purelib", "platlib") else None


def _script_matches(data: Content, basename: str, installed: Mapping[str, str]) -> bool:
    """A ``.data/scripts`` file against the release's installed script of the same name
    (installers rewrite a ``#!python`` line, so that line is not compared)."""
    rows = [h for p, h in installed.items() if p.rsplit("/", 1)[-1] == basename]
    if head_of(data, 8) == b"#!python":
        return bool(rows)  # its rewritten copy cannot be compared byte for byte
    return digest_of(data)[0] in rows


def release_problems(
    files: Mapping[str, Content], data_dir: str, installed: Mapping[str, str]
) -> list[str]:
    """Every way ``files`` (a wheel's) differ from the release whose installed RECORD is
    ``installed`` (path -> hash): a changed file, a file the release does not have, or one
    it has that the copy lacks (a wheel built from it would silently drop that file)."""
    found = []
    for name, data in files.items():
        top, _, last = name.rpartition("/")
        if top.endswith(".dist-info") and "/" not in top:
            if last in _INSTALLER_FILES or last in SIGNATURES:
                continue
            name_there = f"{installed_info(installed) or top}/{last}"
            expected = installed.get(name_there)
        elif name.startswith(data_dir + "/scripts/"):
            if not _script_matches(data, last, installed):
                found.append(f"{name}: a script the installed release does not have")
            continue
        else:
            where = installed_path(name, data_dir)
            if where is None:
                suffix = name.split("/", 2)[-1]
                expected = next((h for p, h in installed.items() if p.endswith(suffix)), None)
            else:
                expected = installed.get(where)
        if expected is None:
            kind = "a top-level .pth" if "/" not in name and name.endswith(".pth") else "a file"
            found.append(f"{name}: {kind} the installed release does not have")
        elif expected != digest_of(data)[0]:
            found.append(f"{name} differs from the installed release's RECORD")
    placed = {where for name in files if (where := installed_path(name, data_dir)) is not None}
    for path, expected in installed.items():
        parts = path.split("/")
        if not expected or path in placed or parts[0] in ("..", "") or "__pycache__" in parts:
            continue  # no hash, a script or data file, bytecode an installer compiled
        if not parts[0].endswith(".dist-info"):
            found.append(f"{path}: a file of the installed release this copy lacks")
    return found


def installed_info(installed: Mapping[str, str]) -> str | None:
    """The ``.dist-info`` folder an installed RECORD lists its metadata under."""
    for path in installed:
        top, _, last = path.partition("/")
        if top.endswith(".dist-info") and last == "RECORD":
            return top
    return None
