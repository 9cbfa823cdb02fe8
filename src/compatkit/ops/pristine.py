"""``verify --pristine --all``: every distribution of an environment against its RECORD.

Each file a RECORD lists is hashed once, however many RECORDs list it, streamed
(:func:`compatkit.bounded.sha256`: memory does not grow with a file's size) on as many threads
as this process may run on (:func:`hash_files`, shared with ``verify --pristine DIST``),
largest files first. A file whose bytes differ from its RECORD row is
attributed: when another installed distribution's RECORD lists the same path and the bytes on
disk are that one's, the file was **overwritten** by it (two wheels shipping one path: the
installer that ran last won, and ``pip check`` sees nothing). Otherwise it is missing or
matches no RECORD at all. Files a compatkit patchset changed (its state lists them; apply
rewrites their RECORD rows) are counted as patched by it, as ``verify --pristine DIST`` does.
A RECORD row pointing outside the environment is counted and never read; a listed file that
is not a regular file (a FIFO, a device) is counted as not read (:mod:`compatkit.bounded`).
Each report names its files (:meth:`DistReport.text`: the first :data:`SHOWN`, and a count).

>>> r = DistReport("cuda-bindings", "13.5.0")
>>> r.overwritten["cuda-python 12.6.2.post1"] = ["cuda/a.py", "cuda/b.py"]
>>> r.foreign.append("cuda/c.py")
>>> print(r.text())
cuda-bindings 13.5.0: 2 files overwritten by cuda-python 12.6.2.post1; 1 file matches no RECORD
    overwritten by cuda-python 12.6.2.post1: cuda/a.py
    overwritten by cuda-python 12.6.2.post1: cuda/b.py
    matches no RECORD: cuda/c.py
"""

from __future__ import annotations

import itertools
import os
import threading
from contextlib import ExitStack
from pathlib import Path

from compatkit.env.session import Session
from compatkit.env.state import states_of
from compatkit.env.target import DiskFiles, Dist, Environment, installed
from compatkit.errors import CompatkitError
from compatkit.model.paths import outside_environment, quoted
from compatkit.value import Value

_Key = tuple[Path, str]  # (the root a RECORD is under, the path it lists)
NOT_READ = "!"  # hash_files' mark of a file not read: never the start of a RECORD hash
SHOWN = 10  # paths a report shows per distribution without --verbose


class DistReport(Value):
    """What is off in one distribution, each file by path; all empty: it is pristine."""

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
        self.overwritten: dict[str, list[str]] = {}  # "other-dist version" -> paths
        self.patched: dict[str, list[str]] = {}  # compatkit patchset -> paths
        self.missing: list[str] = []
        self.foreign: list[str] = []  # differs, and matches no other RECORD either
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

    def _groups(self) -> list[tuple[str, str, list[str]]]:
        """(summary, label, paths) for each kind of file that is off, in report order."""
        out = [
            (f"{_files(len(p))} overwritten by {who}", f"overwritten by {who}", p)
            for who, p in sorted(self.overwritten.items())
        ]
        out += [
            (f"{_files(len(p))} patched by {ps}", f"patched by {ps}", p)
            for ps, p in sorted(self.patched.items())
        ]
        if self.missing:
            out.append((f"{_files(len(self.missing))} missing", "missing", self.missing))
        if self.foreign:
            n = len(self.foreign)
            verb = "matches" if n == 1 else "match"
            out.append((f"{_files(n)} {verb} no RECORD", "matches no RECORD", self.foreign))
        return out

    def parts(self) -> list[str]:
        out = [summary for summary, _, _ in self._groups()]
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

    def text(self, verbose: bool = False) -> str:
        """:meth:`line`, then one line per file that is off: the first :data:`SHOWN` and how
        many more (``verbose``: every one)."""
        named = [f"{label}: {path}" for _, label, paths in self._groups() for path in paths]
        shown = named if verbose else named[:SHOWN]
        lines = [self.line()] + [f"    {n}" for n in shown]
        if len(named) > len(shown):
            lines.append(f"    and {len(named) - len(shown)} more (--verbose: all)")
        return "\n".join(lines)

    def doc(self) -> dict[str, object]:
        return {
            "distribution": self.name,
            "version": self.version,
            "overwritten_by": {who: len(p) for who, p in self.overwritten.items()},
            "patched_by": {ps: len(p) for ps, p in self.patched.items()},
            "missing": len(self.missing),
            "match_no_record": len(self.foreign),
            "outside_environment": self.outside,
            "not_read": self.unread,
            "files": {
                "overwritten_by": {who: sorted(p) for who, p in self.overwritten.items()},
                "patched_by": {ps: sorted(p) for ps, p in self.patched.items()},
                "missing": sorted(self.missing),
                "match_no_record": sorted(self.foreign),
            },
        }


def _files(n: int) -> str:
    return f"{n} file{'s' if n != 1 else ''}"


def _more(n: int) -> str:
    return f", and {n - 1} more" if n > 1 else ""


def threads() -> int:
    """How many threads hashing uses: as many as this process may run on (its CPU affinity,
    which a container's cpuset narrows), at least one."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS, Windows: no affinity call
        return max(1, os.cpu_count() or 1)


def hash_files(jobs: list[tuple[DiskFiles, str]]) -> list[str | None]:
    """The RECORD-form hash of each (files, path) job, in order (None: missing;
    ``NOT_READ`` and why: a FIFO, a device), each file streamed, on :func:`threads` threads,
    the largest files first (one big file started last would finish alone). OpenSSL's
    SHA-256 releases the GIL while it hashes a chunk, so the threads hash in parallel."""
    results: list[str | None] = [None] * len(jobs)
    order = sorted(range(len(jobs)), key=lambda i: -jobs[i][0].size(jobs[i][1]))
    taken = itertools.count()  # next() on a count is atomic: each index goes to one thread
    failed: list[BaseException] = []

    def work() -> None:
        try:
            while (k := next(taken)) < len(order):
                files, path = jobs[order[k]]
                try:
                    results[order[k]] = files.hash(path, threads=True)
                except CompatkitError as exc:
                    results[order[k]] = NOT_READ + exc.message
        except BaseException as exc:  # raised again on the calling thread
            failed.append(exc)

    workers = [threading.Thread(target=work) for _ in range(min(threads(), len(jobs)))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if failed:
        raise failed[0]
    return results


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
    """Each file's RECORD-form hash (None: missing; ``NOT_READ`` and why): :func:`hash_files`."""
    found = hash_files([(by_root[root].files, path) for root, path in keys])
    return dict(zip(keys, found, strict=True))


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
            reports[id(d)].patched.setdefault(state.patchset, []).extend(
                f.path for f in state.files
            )
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
        report.missing.append(key[1])
    elif winner := next((d for d, h in owners if h == got and d.name != report.name), None):
        report.overwritten.setdefault(f"{winner.name} {winner.version}", []).append(key[1])
    else:
        report.foreign.append(key[1])
