"""``pristine``: installed distributions (named, or ``--all``) against their RECORD.

Each file a RECORD lists is hashed once, however many RECORDs list it, streamed
(:func:`compatkit.bounded.sha256`: memory does not grow with a file's size) by as many worker
processes as this process may run on CPUs (:class:`Hashing`), largest files first. A file
whose bytes differ from its RECORD row is
attributed: when another installed distribution's RECORD lists the same path and the bytes on
disk are that one's, the file was **overwritten** by it (two wheels shipping one path: the
installer that ran last won, and ``pip check`` sees nothing). Otherwise it is missing or
matches no RECORD at all. Files a compatkit patchset changed (its state lists them; apply
rewrites their RECORD rows) are counted as patched by it.
A RECORD row pointing outside the environment is counted and never read; a listed file that
is not a regular file (a FIFO, a device) is counted as not read (:mod:`compatkit.bounded`).
Named distributions are checked alone: the other RECORDs are read only when a file differs,
to say who overwrote it. Each report names its files (:meth:`DistReport.text`: the first
:data:`SHOWN` of each kind, and a count).

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

import contextlib
import os
from contextlib import ExitStack
from functools import partial
from pathlib import Path

from compatkit.env.session import Session
from compatkit.env.state import states_of
from compatkit.env.target import DiskFiles, Dist, Environment, installed
from compatkit.errors import CompatkitError
from compatkit.model.paths import outside_environment, quoted
from compatkit.model.progress import NONE, Reporter, Task
from compatkit.value import Value

TYPE_CHECKING = False

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor
    from typing import Any

_Key = tuple[Path, str]  # (the root a RECORD is under, the path it lists)
NOT_READ = "!"  # Hashing's mark of a file not read: never the start of a RECORD hash
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
        """:meth:`line`, then one line per file that is off: of each kind the first
        :data:`SHOWN` and how many more (``verbose``: every one)."""
        lines = [self.line()]
        for _, label, paths in self._groups():
            shown = paths if verbose else paths[:SHOWN]
            lines += [f"    {label}: {path}" for path in shown]
            if len(paths) > len(shown):
                lines.append(f"    and {len(paths) - len(shown)} more (--verbose: all)")
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


def workers() -> int:
    """How many worker processes hashing uses: as many as this process may run on (its CPU affinity,
    which a container's cpuset narrows), at least one."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS, Windows: no affinity call
        return max(1, os.cpu_count() or 1)


# A batch for one worker: files in largest-first order until it holds this many bytes or
# files (a big file is a batch alone; small ones travel together, so the pool's per-task
# cost is paid per batch, not per file).
BATCH_BYTES = 32 << 20
BATCH_FILES = 256
# Fewer files than this are hashed in this process: starting workers would cost more.
SERIAL_BELOW = 64


class Hashing:
    """Files to hash, handed over as they are found (:meth:`add`), answered together
    (:meth:`results`): the RECORD-form hash of each (None: missing; ``NOT_READ`` and why: a
    FIFO, a device), each file streamed.

    Many files are hashed in worker processes, one per CPU this process may use
    (:func:`workers`), largest files first (one big file started last would finish alone).
    Processes rather than threads: each file costs a few system calls and some bytecode under
    the GIL, and with tens of thousands of small files, threads spend their time waiting for
    it (docs/benchmarks.md, P3-all). The workers start once :data:`SERIAL_BELOW` files are
    known; from then on a file of :data:`BATCH_BYTES` or more (a batch alone) is hashed as
    soon as it is added, while the caller still reads RECORDs: the largest files, which decide
    when the work ends, do not wait for the last RECORD. The others go in batches, largest
    first, when the results are asked for.

    Sizes (from RECORD; a stat where a row gives none) only order and batch the work and
    total the progress: a file whose size differs is hashed all the same, and its hash tells.
    The ``with`` block stops the workers however it ends (Ctrl-C: no further batch starts).
    ``reporter`` is told the files and bytes hashed of the total: piece by piece in this
    process, batch by batch from the workers."""

    def __init__(self, reporter: Reporter = NONE) -> None:
        self.reporter = reporter
        self.jobs: list[tuple[DiskFiles, str]] = []
        self.sizes: list[int] = []
        self._workers = workers()
        self._pool: ProcessPoolExecutor | None = None
        self._sent: list[tuple[list[int], Future[list[str | None]]]] = []
        self._given: set[int] = set()  # the files already handed to a worker

    def __enter__(self) -> Hashing:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if self._pool is None:
            return
        if kind is not None:  # Ctrl-C, a killed worker: a file being hashed is not waited for
            _stop(self._pool)
        self._pool.shutdown(wait=kind is None, cancel_futures=kind is not None)

    def add(self, files: DiskFiles, path: str, size: int | None = None) -> int:
        """One more file, of ``size`` bytes as its RECORD gives it (None: stat it); its index
        in :meth:`results`."""
        i = len(self.jobs)
        self.jobs.append((files, path))
        self.sizes.append(files.size(path) if size is None else size)
        if self._pool is not None:
            if self.sizes[i] >= BATCH_BYTES:
                self._send([i])
        elif self._workers > 1 and i + 1 >= SERIAL_BELOW:
            self._pool = _pool(self._workers)  # forked before a progress bar's thread starts
            for j in sorted(range(i + 1), key=self._larger):
                if self.sizes[j] >= BATCH_BYTES:
                    self._send([j])
        return i

    def _larger(self, i: int) -> int:
        return -self.sizes[i]

    def _send(self, batch: list[int]) -> None:
        assert self._pool is not None
        future = self._pool.submit(_hash_batch, [self.jobs[i] for i in batch], None, batch)
        self._sent.append((batch, future))
        self._given.update(batch)

    def results(self) -> list[str | None]:
        """Each file's hash, in the order added."""
        total, nbytes = len(self.jobs), sum(self.sizes)
        if self._pool is None:
            with self.reporter.task("hashing", total=total, nbytes=nbytes) as task:
                return _hash_batch(self.jobs, task)
        rest = sorted((i for i in range(total) if i not in self._given), key=self._larger)
        for batch in _batches(rest, self.sizes):
            self._send(batch)
        from concurrent.futures import as_completed
        from concurrent.futures.process import BrokenProcessPool

        out: list[str | None] = [None] * total
        batches = {id(future): batch for batch, future in self._sent}
        with self.reporter.task("hashing", total=total, nbytes=nbytes) as task:
            for future in as_completed([future for _, future in self._sent]):
                batch = batches[id(future)]
                try:
                    hashes = future.result()
                except BrokenProcessPool:  # a worker killed (the OOM killer): say which file
                    raise self._killed(batch) from None
                for i, found in zip(batch, hashes, strict=True):
                    out[i] = found
                task.advance(len(batch), sum(self.sizes[i] for i in batch))
        return out

    def _killed(self, batch: list[int]) -> CompatkitError:
        """The one line of a worker killed mid-hash: the file it was hashing, as its slot
        (:data:`_HASHING`) tells; the others, stopped by the pool with SIGTERM, cleared
        theirs. Should none be left, the largest file of the batch that failed."""
        busy = [i for i in _HASHING.get("slots", ()) if 0 <= i < len(self.jobs)]
        i = max(busy or batch, key=lambda j: self.sizes[j])
        files, path = self.jobs[i]
        return CompatkitError(
            f"a hashing worker was killed (out of memory?) while it hashed {quoted(path)} "
            f"in {files.root} ({self.sizes[i]} bytes); nothing was reported"
        )


def _batches(order: list[int], sizes: list[int]) -> list[list[int]]:
    """``order`` (largest first) cut into batches of :data:`BATCH_BYTES` or
    :data:`BATCH_FILES` at most (a bigger file: a batch alone)."""
    batches: list[list[int]] = []
    held = 0
    for i in order:
        if not batches or held + sizes[i] > BATCH_BYTES or len(batches[-1]) >= BATCH_FILES:
            batches.append([])
            held = 0
        batches[-1].append(i)
        held += sizes[i]
    return batches


def _pool(n: int) -> ProcessPoolExecutor:
    """Worker processes: forked where forking is safe (Linux, and no other thread in this
    process: nothing to import again), else started afresh. They ignore Ctrl-C: the parent
    stops them."""
    import multiprocessing
    import sys
    import threading
    from concurrent.futures import ProcessPoolExecutor

    fork = sys.platform == "linux" and threading.active_count() == 1
    context = multiprocessing.get_context("fork" if fork else "spawn")
    slots = context.Array("q", [-1] * n, lock=False)
    _HASHING["slots"] = slots
    taken = context.Value("i", 0)
    return ProcessPoolExecutor(
        n, mp_context=context, initializer=_start_worker, initargs=(slots, taken)
    )


def _stop(pool: ProcessPoolExecutor) -> None:
    """Stop the pool's workers now (SIGTERM), whatever they are hashing: Python 3.14's
    ``terminate_workers``, the pool's own processes before it."""
    terminate = getattr(pool, "terminate_workers", None)
    if terminate is not None:
        terminate()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        with contextlib.suppress(OSError, ValueError):
            process.terminate()


# What each worker is hashing: in the parent, "slots" (shared memory, one index of a job a
# worker, -1 when idle); in a worker, also "me", its slot.
_HASHING: dict[str, Any] = {}


def _start_worker(slots: Any, taken: Any) -> None:
    """A worker ignores Ctrl-C (the parent stops it) and takes a slot of ``slots``; stopped
    by the pool (SIGTERM, when another worker died) it clears it, so that only the slot of a
    worker killed outright (SIGKILL: the OOM killer) still names a file."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with taken.get_lock():
        me = taken.value
        taken.value += 1
    _HASHING.update(slots=slots, me=me)

    def stopped(signum: int, frame: object) -> None:
        slots[me] = -1
        os._exit(1)

    signal.signal(signal.SIGTERM, stopped)


def _hash_batch(
    jobs: list[tuple[DiskFiles, str]], task: Task | None = None, indexes: list[int] | None = None
) -> list[str | None]:
    """Each job's hash, in order; a file that cannot be read gives ``NOT_READ`` and why.
    ``task`` (in this process only) is told each piece read and each file done; ``indexes``
    (in a worker): the jobs' indexes, put in the worker's slot while each is hashed."""
    out: list[str | None] = []
    read = None if task is None else partial(task.advance, 0)
    slots, me = _HASHING.get("slots"), _HASHING.get("me")
    for n, (files, path) in enumerate(jobs):
        if indexes is not None and slots is not None and me is not None:
            slots[me] = indexes[n]
        try:
            out.append(files.hash(path, read))
        except CompatkitError as exc:
            out.append(NOT_READ + exc.message)
        if task is not None:
            task.advance()
    if slots is not None and me is not None:
        slots[me] = -1
    return out


def _rows(
    dists: list[Dist], reports: dict[int, DistReport], hashing: Hashing
) -> tuple[dict[_Key, list[tuple[Dist, str]]], dict[_Key, int]]:
    """Every hashed RECORD row below its root, by (root, path): who lists it, with what hash;
    and each file's index in ``hashing``, which is handed each one once, with the size its
    first owner's row gives, as each RECORD is read. A row pointing outside the environment
    goes into its distribution's report instead."""
    listed: dict[_Key, list[tuple[Dist, str]]] = {}
    index: dict[_Key, int] = {}
    readers: dict[Path, DiskFiles] = {}  # one per root: each batch pickles it once
    for dist in dists:
        root, files = str(dist.root), readers.setdefault(dist.root, dist.files)
        for row in dist.read_record().rows:
            path = row.path
            if path.startswith("/") or ".." in path:  # most rows: neither, and no split
                place = outside_environment(root, path)
                if place is not None:
                    reports[id(dist)].outside.append(f"{quoted(path)}: {place}")
                    continue
                if path.startswith("/") or ".." in path.split("/"):
                    continue  # inside, but not below the root (a script in bin/)
            if row.hash:
                key = (dist.root, path)
                owners = listed.get(key)
                if owners is None:
                    listed[key] = owners = []
                    index[key] = hashing.add(files, path, row.size)
                owners.append((dist, row.hash))
    return listed, index


class PristineResult(Value):
    """What ``pristine`` found: the distributions checked (name, version), a report for each
    one that is off (in name order); ``every``: the whole environment was checked (--all)."""

    __slots__ = ("checked", "reports", "every")

    def __init__(self, checked: list[tuple[str, str]], reports: list[DistReport], every: bool):
        self.checked, self.reports, self.every = checked, reports, every

    def to_json(self) -> dict[str, object]:
        return {
            "ok": not self.reports,
            "checked": len(self.checked),
            "distributions": [r.doc() for r in self.reports],
        }

    def failure(self) -> str:
        """The error line when something is off."""
        if not self.every and len(self.checked) == 1:
            return f"{self.reports[0].name} {self.reports[0].version} is not pristine"
        verb = "is" if len(self.reports) == 1 else "are"
        return f"{len(self.reports)} of {len(self.checked)} distributions {verb} not pristine"

    def problems(self, verbose: bool = False, one_line: bool = False) -> list[str]:
        """Each report: its files named below it (``one_line``: its summary line only)."""
        return [r.line() if one_line else r.text(verbose) for r in self.reports]

    def passed(self) -> list[str]:
        """The lines that say every file matched."""
        if self.every:
            return [f"all {len(self.checked)} distributions: every file matches its RECORD"]
        return [
            f"{name} {version}: every file matches its RECORD" for name, version in self.checked
        ]


def check(
    env: Environment, names: list[str] | None = None, reporter: Reporter = NONE
) -> PristineResult:
    """The distributions ``names`` (None: every one) against their RECORDs, under a shared
    lock on each of their site-packages roots. A name not installed is an error (exit 1).
    ``reporter``: the files and bytes hashed of the total (:class:`Hashing`)."""
    every = names is None
    dists = installed(env) if names is None else _named(env, names)
    with ExitStack() as stack:
        for dist in {d.root: d for d in dists}.values():  # one lock per site-packages
            stack.enter_context(Session.open(dist, exclusive=False))
        reports = _reports(env, dists, not every, reporter)  # --all: every RECORD is read
    return PristineResult([(d.name, d.version) for d in dists], reports, every)


def is_pristine(env: Environment, dist: Dist) -> bool:
    """Whether every file of ``dist`` matches its RECORD (the caller holds its lock)."""
    return not _reports(env, [dist], attribute=False)


def _named(env: Environment, names: list[str]) -> list[Dist]:
    """Each named distribution once, in the order named."""
    found: list[Dist] = []
    for name in names:
        dist = env.require(name)
        if dist not in found:
            found.append(dist)
    return found


def _reports(
    env: Environment, dists: list[Dist], attribute: bool, reporter: Reporter = NONE
) -> list[DistReport]:
    """A report for each of ``dists`` that is off, in name order. ``attribute``: read the
    other installed distributions' RECORDs, when a file differs, to name who overwrote it."""
    reports = {id(d): DistReport(d.name, d.version) for d in dists}
    with Hashing(reporter) as hashing:
        listed, index = _rows(dists, reports, hashing)
        hashes = hashing.results()
    off: dict[_Key, tuple[list[tuple[Dist, str]], str | None]] = {}
    for key, owners in listed.items():  # most files match the one row that lists them
        got = hashes[index[key]]
        if len(owners) > 1 or owners[0][1] != got:
            off[key] = (owners, got)
    patched: dict[_Key, str] = {}
    for d in dists:  # compatkit rewrites RECORD for what it patched: count those as patched
        for state in states_of(d):
            reports[id(d)].patched.setdefault(state.patchset, []).extend(
                f.path for f in state.files
            )
            patched.update(((d.root, f.path), state.patchset) for f in state.files)
    differ = {  # files on disk that some owner's row does not match: who wrote them?
        key
        for key, (owners, got) in off.items()
        if got is not None
        and not got.startswith(NOT_READ)
        and key not in patched
        and any(want != got for _, want in owners)
    }
    others = _other_owners(env, dists, differ) if attribute and differ else {}
    for key, (owners, got) in off.items():
        for dist, want in owners:
            everyone = owners + others.get(key, [])
            _attribute(reports[id(dist)], key, want, got, everyone, patched)
    found = [r for r in reports.values() if r]
    return sorted(found, key=lambda r: r.name.lower())


def _other_owners(
    env: Environment, dists: list[Dist], keys: set[_Key]
) -> dict[_Key, list[tuple[Dist, str]]]:
    """Who else lists each of ``keys`` in their RECORD, with what hash. A distribution whose
    metadata cannot be read is left out: it could only name an overwriter, never hide a file."""
    try:
        everyone = installed(env)
    except CompatkitError:
        return {}
    owners: dict[_Key, list[tuple[Dist, str]]] = {}
    for other in everyone:
        if other in dists:
            continue
        try:
            rows = other.read_record().rows
        except CompatkitError:
            continue
        for row in rows:
            if row.hash and (other.root, row.path) in keys:
                owners.setdefault((other.root, row.path), []).append((other, row.hash))
    return owners


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
