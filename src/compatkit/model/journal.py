"""The transaction journal's format, and its reading as untrusted input (pure: no IO).

A journal is the folder ``<dist-info>/compatkit-journal``: ``journal.json`` (the index) and
``blobs`` (the "before" bytes of every file it will touch, back to back). It is read back only
after a crash, from a folder that anyone who can write the environment can edit, so
:func:`parse` trusts nothing in it: the format version and the distribution it belongs to,
every key and type, every path (relative, no ``..``, no control characters, package metadata
only inside this distribution's own ``.dist-info``), every blob slice (in range) and every
blob's SHA-256. What the disk must look like before a rollback may write (containment,
ownership, each file in its "before" or "after" state) is checked by :mod:`compatkit.env.txn`.

>>> entry = Entry("pkg/m.py", before=b"x = 1\\n", after_sha=None, mode=0o644, mtime_ns=1)
>>> journal_json = index("pkg-1.0.dist-info", [entry])
>>> parse(journal_json, b"x = 1\\n", "pkg-1.0.dist-info") == [entry]
True
>>> parse(journal_json.replace(b"pkg/m.py", b"../m.py"), b"x = 1\\n", "pkg-1.0.dist-info")
Traceback (most recent call last):
...
compatkit.model.journal.JournalError: entry 1: refused path '../m.py': it contains '..'
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from hashlib import sha256 as _sha256

from compatkit.errors import CompatkitError
from compatkit.model.paths import check_relpath
from compatkit.value import Value

FORMAT = 2
_MAX_MODE = 0o7777
_WRITE_KEYS = {"path", "before", "sha256", "after", "mode", "mtime_ns"}
_MOVE_KEYS = {"path", "move_to"}


class JournalError(CompatkitError):
    """A journal that fails a check: it is refused whole, and nothing is written."""


class Entry(Value):
    """One journaled change: restore ``before`` (None: the file did not exist, so remove it),
    or, with ``move_to``, rename ``move_to`` back to ``path``.

    ``after_sha`` is the SHA-256 (hex) of what the transaction writes there, None for a
    delete: after a crash a file holds its "before" or its "after" bytes, nothing else.
    """

    __slots__ = ("path", "before", "after_sha", "mode", "mtime_ns", "move_to")

    def __init__(
        self,
        path: str,
        before: bytes | None = None,
        after_sha: str | None = None,
        mode: int | None = None,
        mtime_ns: int | None = None,
        move_to: str | None = None,
    ) -> None:
        self.path, self.before, self.after_sha = path, before, after_sha
        self.mode, self.mtime_ns, self.move_to = mode, mtime_ns, move_to

    @property
    def before_sha(self) -> str | None:
        return None if self.before is None else sha256(self.before)


def sha256(data: bytes) -> str:
    return _sha256(data).hexdigest()


def index(dist_info: str, entries: Sequence[Entry]) -> bytes:
    """``journal.json``: the blobs file holds every ``before`` in order, back to back."""
    items: list[dict[str, object]] = []
    offset = 0
    for e in entries:
        if e.move_to is not None:
            items.append({"path": e.path, "move_to": e.move_to})
            continue
        item: dict[str, object] = {"path": e.path, "before": None, "after": e.after_sha}
        if e.before is not None:
            item.update(before=[offset, len(e.before)], sha256=sha256(e.before))
            item.update(mode=e.mode, mtime_ns=e.mtime_ns)
            offset += len(e.before)
        items.append(item)
    return json.dumps({"format": FORMAT, "dist_info": dist_info, "entries": items}).encode()


def parse(index: bytes, blobs: bytes, dist_info: str) -> list[Entry]:
    """The entries of a journal, or JournalError listing every problem found."""
    try:
        doc = json.loads(index)
    except (ValueError, RecursionError) as exc:
        raise JournalError(f"journal.json is not valid JSON ({str(exc)[:80]})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("entries"), list):
        raise JournalError("journal.json has no list of entries")
    if doc.get("format") != FORMAT:
        raise JournalError(
            f"journal format {str(doc.get('format'))[:20]!r} is not {FORMAT}: "
            "it was not written by this compatkit"
        )
    if doc.get("dist_info") != dist_info:
        raise JournalError(f"it belongs to {str(doc.get('dist_info'))[:80]!r}, not {dist_info}")
    entries: list[Entry] = []
    problems: list[str] = []
    for number, raw in enumerate(doc["entries"], 1):
        try:
            entries.append(_entry(raw, blobs, dist_info))
        except JournalError as exc:
            problems.append(f"entry {number}: {exc.message}")
    problems += _clashes(entries)
    if problems:
        raise JournalError(problems[0], problems[1:])
    return entries


def check_path(path: object, dist_info: str) -> str:
    """A journal path: below the root, and in package metadata only in ``dist_info``."""
    if not isinstance(path, str):
        raise JournalError(f"a path is {type(path).__name__}, not a string")
    try:
        check_relpath(path, own_metadata=dist_info)  # compatkit's state, backups and RECORD
    except CompatkitError as exc:
        raise JournalError(exc.message) from None
    return path


def _entry(raw: object, blobs: bytes, dist_info: str) -> Entry:
    if not isinstance(raw, dict):
        raise JournalError("not an object")
    keys = set(raw)
    if "move_to" in raw:
        if keys != _MOVE_KEYS:
            raise JournalError(f"unexpected keys {sorted(keys ^ _MOVE_KEYS)}")
        path, dest = check_path(raw["path"], dist_info), check_path(raw["move_to"], dist_info)
        return Entry(path, move_to=dest)
    path = check_path(raw.get("path"), dist_info)
    after = raw.get("after")
    if after is not None and not _is_sha(after):
        raise JournalError(f"{path}: 'after' is not a SHA-256")
    if raw.get("before") is None:
        if keys - {"path", "before", "after"}:
            raise JournalError(f"{path}: unexpected keys for a created file")
        return Entry(path, after_sha=after)
    if keys != _WRITE_KEYS:
        raise JournalError(f"{path}: keys {sorted(keys)} are not {sorted(_WRITE_KEYS)}")
    return Entry(path, _blob(raw, blobs, path), after, _mode(raw, path), _mtime(raw, path))


def _blob(raw: dict[str, object], blobs: bytes, path: str) -> bytes:
    span = raw["before"]
    if not (
        isinstance(span, list) and len(span) == 2 and all(type(n) is int and n >= 0 for n in span)
    ):
        raise JournalError(f"{path}: 'before' is not [offset, length]")
    start, length = span
    if start + length > len(blobs):
        raise JournalError(
            f"{path}: bytes {start}-{start + length} are outside the {len(blobs)}-byte blob file"
        )
    data = blobs[start : start + length]
    if not _is_sha(raw["sha256"]) or sha256(data) != raw["sha256"]:
        raise JournalError(f"{path}: the saved bytes do not match their SHA-256")
    return data


def _mode(raw: dict[str, object], path: str) -> int:
    mode = raw["mode"]
    if type(mode) is not int or not 0 <= mode <= _MAX_MODE:
        raise JournalError(f"{path}: 'mode' is not a file mode")
    return mode


def _mtime(raw: dict[str, object], path: str) -> int:
    mtime = raw["mtime_ns"]
    if type(mtime) is not int or not 0 <= mtime < 2**63:
        raise JournalError(f"{path}: 'mtime_ns' is not a time")
    return mtime


def _is_sha(value: object) -> bool:
    return (
        isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)
    )


def _clashes(entries: list[Entry]) -> list[str]:
    """A transaction touches each path once (a delete may clear a rename's destination)."""
    problems: list[str] = []
    written: dict[str, str | None] = {}
    sources: set[str] = set()
    dests: set[str] = set()
    for e in entries:
        if e.move_to is None:
            clash = e.path in written or e.path in sources or e.path in dests
            written[e.path] = e.after_sha
        else:
            clash = e.path in written or e.path in sources or e.path in dests
            clash = clash or e.move_to in dests or e.move_to in sources or e.move_to == e.path
            clash = clash or written.get(e.move_to) is not None  # only a delete clears it
            sources.add(e.path)
            dests.add(e.move_to)
        if clash:
            problems.append(f"{e.path} is named twice")
    return problems
