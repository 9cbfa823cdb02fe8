"""``verify --pristine --all``: every distribution of an environment against its RECORD.

Each file a RECORD lists is hashed once, however many RECORDs list it, on the same thread
pool as ``verify --pristine DIST`` (P3). A file whose bytes differ from its RECORD row is
attributed: when another installed distribution's RECORD lists the same path and the bytes on
disk are that one's, the file was **overwritten** by it (two wheels shipping one path: the
installer that ran last won, and ``pip check`` sees nothing). Otherwise it is missing or
matches no RECORD at all. Files a compatkit patchset changed (its state lists them; apply
rewrites their RECORD rows) are counted as patched by it, as ``verify --pristine DIST`` does.
A RECORD row pointing outside the environment is counted and never read; a listed file that
is not a regular file (a FIFO, a device) or too large is counted as not read
(:mod:`compatkit.bounded`).

>>> r = DistReport("cuda-bindings", "13.5.0")
>>> r.overwritten["cuda-python 12.6.2.post1"] = 40
>>> r.line()
'cuda-bindings 13.5.0: 40 files overwritten by cuda-python 12.6.2.post1'
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

from compatkit.env.session import Session
from compatkit.env.state import states_of
from compatkit.env.target import Dist, Environment, installed
from compatkit.errors import CompatkitError
from compatkit.model.paths import outside_environment, quoted
from compatkit.model.records import hash_bytes
from compatkit.value import Value

_Key = tuple[Path, str]  # (the root a RECORD is under, the path it lists)
NOT_READ = "!"  # _on_disk's mark of a file not read: never the start of a RECORD hash


class DistReport(Value):
    """What is off in one distribution; empty counters: it is pristine."""

    __slots__ = (
        "name",
        "version",
        "overwritten",
        "patched",
        "missing",
        "foreign",
        "outside",
        "unread",
    )

    def __init__(self, name: str, version: str) -> None:
        self.name, self.version = name, version
        self.overwritten: Counter[str] = Counter()  # "other-dist version" -> files
        self.patched: Counter[str] = Counter()  # compatkit patchset -> files
        self.missing = 0
        self.foreign = 0  # differs, and matches no other RECORD either
        self.outside: list[str] = []  # RECORD rows pointing outside the environment
        self.unread: list[str] = []  # "path: why" of listed files not read (a FIFO, ...)

    def __bool__(self) -> bool:
        return bool(
            self.overwritten
            or self.patched
            or self.missing
            or self.foreign
            or self.outside
            or self.unread
        )

    def parts(self) -> list[str]:
        out = [f"{_files(n)} overwritten by {who}" for who, n in sorted(self.overwritten.items())]
        out += [f"{_files(n)} patched by {ps}" for ps, n in sorted(self.patched.items())]
        if self.missing:
            out.append(f"{_files(self.missing)} missing")
        if self.foreign:
            out.append(f"{_files(self.foreign)} match no RECORD")
        if self.outside:
            n = len(self.outside)
            rows = f"{n} RECORD row{'s' if n != 1 else ''}"
            out.append(f"{rows} outside the environment, not read ({self.outside[0]}{_more(n)})")
        if self.unread:
            n = len(self.unread)
            out.append(f"{_files(n)} not read ({self.unread[0]}{_more(n)})")
        return out

    def line(self) -> str:
        return f"{self.name} {self.version}: {'; '.join(self.parts())}"

    def doc(self) -> dict[str, object]:
        return {
            "distribution": self.name,
            "version": self.version,
            "overwritten_by": dict(self.overwritten),
            "patched_by": dict(self.patched),
            "missing": self.missing,
            "match_no_record": self.foreign,
            "outside_environment": self.outside,
            "not_read": self.unread,
        }


def _files(n: int) -> str:
    return f"{n} file{'s' if n != 1 else ''}"


def _more(n: int) -> str:
    return f", and {n - 1} more" if n > 1 else ""


def _rows(dists: list[Dist], reports: dict[int, DistReport]) -> dict[_Key, list[tuple[Dist, str]]]:
    """Every hashed RECORD row below its root, by (root, path): who lists it, with what hash.
    A row pointing outside the environment goes into its distribution's report instead."""
    listed: dict[_Key, list[tuple[Dist, str]]] = {}
    for dist in dists:
        root = str(dist.root)
        for row in dist.read_record().rows:
            place = outside_environment(root, row.path)
            if place is not None:
                reports[id(dist)].outside.append(f"{quoted(row.path)}: {place}")
            elif row.hash and not row.path.startswith("/") and ".." not in row.path.split("/"):
                listed.setdefault((dist.root, row.path), []).append((dist, row.hash))
    return listed


def _on_disk(keys: list[_Key], by_root: dict[Path, Dist]) -> dict[_Key, str | None]:
    """The RECORD-form hash of each file (None: missing; ``NOT_READ`` and why: a FIFO, a
    device, too large), hashed on four threads (P3)."""

    def one(key: _Key) -> str | None:
        try:
            data = by_root[key[0]].read(key[1])
        except CompatkitError as exc:
            return NOT_READ + exc.message
        return None if data is None else hash_bytes(data, threads=True)

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(keys, pool.map(one, keys, chunksize=32), strict=True))


def check_all(env: Environment) -> tuple[int, list[DistReport]]:
    """How many distributions were checked, and a report for each one that is not pristine
    (in name order), under a shared lock on every site-packages root."""
    dists = installed(env)
    by_root = {d.root: d for d in dists}
    reports = {id(d): DistReport(d.name, d.version) for d in dists}
    with ExitStack() as stack:
        for dist in by_root.values():
            stack.enter_context(Session.open(dist, exclusive=False))
        listed = _rows(dists, reports)
        disk = _on_disk(sorted(listed), by_root)
        patched = {
            (d.root, f.path): s.patchset for d in dists for s in states_of(d) for f in s.files
        }
    for d in dists:  # compatkit rewrites RECORD for what it patched: count those as patched
        for state in states_of(d):
            reports[id(d)].patched[state.patchset] += len(state.files)
    for key, owners in listed.items():
        for dist, want in owners:
            _attribute(reports[id(dist)], key, want, disk[key], owners, patched)
    found = [r for r in reports.values() if r]
    return len(dists), sorted(found, key=lambda r: r.name.lower())


def _attribute(
    report: DistReport,
    key: _Key,
    want: str,
    got: str | None,
    owners: list[tuple[Dist, str]],
    patched: dict[_Key, str],
) -> None:
    """Count one listed file against ``report``'s distribution."""
    if got == want or key in patched:
        return
    if got is not None and got.startswith(NOT_READ):
        report.unread.append(got[len(NOT_READ) :])
    elif got is None:
        report.missing += 1
    elif winner := next((d for d, h in owners if h == got and d.name != report.name), None):
        report.overwritten[f"{winner.name} {winner.version}"] += 1
    else:
        report.foreign += 1
