"""compatkit's record of an applied patchset, kept inside the target's ``.dist-info``.

``<name>.dist-info/compatkit/<patchset>.json`` holds what was applied and what was written;
``<name>.dist-info/compatkit/<patchset>/orig/N`` holds the original bytes. All of them are
listed in RECORD, so ``pip uninstall`` removes them with the distribution. A patched wheel
(``compatkit wheel``) carries the same state with ``built_in`` set and no original bytes: the
patchset is part of that installed version, and only a reinstall of the pristine wheel undoes it.

>>> State.from_json(State("p", "1", "d", "dist", "1.0").to_json()).patchset
'p'
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from compatkit import bounded
from compatkit.env.target import Dist, Environment
from compatkit.errors import CompatkitError
from compatkit.value import Value

STATE_DIR = "compatkit"
JOURNAL = "compatkit-journal"  # in a distribution's .dist-info, while a transaction runs


class FileState(Value):
    __slots__ = (
        "path",
        "original_sha",
        "written_sha",
        "backup",
        "mtime_ns",
        "record_row",
        "record_index",
        "patches",
        "backup_offset",
        "backup_size",
        "mode",
    )
    __hash__ = None  # type: ignore[assignment]  # mutable

    def __init__(
        self,
        path: str,
        original_sha: str | None,  # None: the patchset created the file
        written_sha: str | None,  # None: the patchset deleted the file
        backup: str | None = None,  # root-relative path of the archive with the original bytes
        mtime_ns: int | None = None,
        record_row: str | None = None,  # the original RECORD row, verbatim
        record_index: int | None = None,
        patches: list[str] | None = None,
        backup_offset: int | None = None,  # where in the archive (None: the whole file)
        backup_size: int | None = None,
        mode: int | None = None,  # a deleted file's permission bits (None: older state, 0644)
    ) -> None:
        self.path = path
        self.original_sha = original_sha
        self.written_sha = written_sha
        self.backup = backup
        self.mtime_ns = mtime_ns
        self.record_row = record_row
        self.record_index = record_index
        self.patches: list[str] = [] if patches is None else patches
        self.backup_offset = backup_offset
        self.backup_size = backup_size
        self.mode = mode


class PycState(Value):
    """A bytecode file moved aside by an apply (``moved``: ``backup`` is the file itself;
    states from earlier compatkit versions hold its bytes in an archive slice instead)."""

    __slots__ = (
        "path",
        "backup",
        "record_row",
        "record_index",
        "backup_offset",
        "backup_size",
        "moved",
    )
    __hash__ = None  # type: ignore[assignment]  # mutable

    def __init__(
        self,
        path: str,
        backup: str,
        record_row: str | None = None,
        record_index: int | None = None,
        backup_offset: int | None = None,
        backup_size: int | None = None,
        moved: bool = False,
    ) -> None:
        self.path = path
        self.backup = backup
        self.record_row = record_row
        self.record_index = record_index
        self.backup_offset = backup_offset
        self.backup_size = backup_size
        self.moved = moved


class State(Value):
    __slots__ = (
        "patchset",
        "version",
        "digest",
        "distribution",
        "dist_version",
        "applied",
        "excluded",
        "files",
        "pycs",
        "offsets",
        "forced",
        "built_in",
    )
    __hash__ = None  # type: ignore[assignment]  # mutable

    def __init__(
        self,
        patchset: str,
        version: str,
        digest: str,
        distribution: str,
        dist_version: str,
        applied: list[str] | None = None,
        excluded: list[str] | None = None,
        files: list[FileState] | None = None,
        pycs: list[PycState] | None = None,
        offsets: dict[str, dict[str, list[int]]] | None = None,
        forced: bool = False,
        built_in: bool = False,  # written by ``compatkit wheel``: no originals to revert to
    ) -> None:
        self.patchset = patchset
        self.version = version
        self.digest = digest
        self.distribution = distribution
        self.dist_version = dist_version
        self.applied: list[str] = [] if applied is None else applied
        self.excluded: list[str] = [] if excluded is None else excluded
        self.files: list[FileState] = [] if files is None else files
        self.pycs: list[PycState] = [] if pycs is None else pycs
        self.offsets: dict[str, dict[str, list[int]]] = {} if offsets is None else offsets
        self.forced = forced
        self.built_in = built_in

    def built_in_refusal(self, dist: Dist, verb: str) -> str:
        """Why ``verb`` cannot touch this patchset when it is built into the installed wheel
        (``built_in``; one line)."""
        base = dist.version.partition("+")[0]
        return (
            f"cannot {verb} {self.patchset}: it is built into the installed wheel {dist.name} "
            f"{dist.version}; reinstall the pristine wheel ({dist.name}=={base})"
        )

    def to_json(self) -> bytes:
        raw = self.as_dict()
        raw["files"] = [_file_dict(f) for f in self.files]
        raw["pycs"] = [p.as_dict() for p in self.pycs]
        if not self.built_in:
            del raw["built_in"]  # states of an apply keep the bytes they always had
        import json  # here, not at import: start-up where no state is read (P1)

        # no indent: the C encoder only serves compact output
        return (json.dumps(raw, sort_keys=True) + "\n").encode()

    @classmethod
    def from_json(cls, data: bytes) -> State:
        """The state ``data`` holds; :class:`BadState` if it is not one (not JSON, missing or
        unknown keys, a value of the wrong type: a state lies where others may edit it)."""
        import json

        try:
            raw = json.loads(data)
            raw["files"] = [_file_state(f) for f in raw.get("files", [])]
            raw["pycs"] = [PycState(**p) for p in raw.get("pycs", [])]
            return cls(**raw)
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
            raise BadState(str(exc)) from None


class BadState(CompatkitError):
    """A state file that is not a state (its reason the message)."""


def _file_dict(f: FileState) -> dict[str, object]:
    """One file's entry; ``mode`` only where there is one (a deleted file's), so that other
    entries and a patched wheel's state keep the bytes they always had (docs/delivery.md)."""
    raw = f.as_dict()
    if f.mode is None:
        del raw["mode"]
    return raw


def _file_state(raw: dict[str, object]) -> FileState:
    """One file's entry. Its ``mode`` is what revert creates a deleted file with, and the
    state lies in the environment, where others may edit it: permission bits only."""
    fs = FileState(**raw)  # type: ignore[arg-type]
    mode: object = fs.mode
    if mode is not None and (type(mode) is not int or not 0 <= mode <= 0o777):
        shown = oct(mode) if type(mode) is int else repr(mode)[:20]
        raise ValueError(f"{str(fs.path)[:200]!r}: 'mode' {shown} is not a file mode (0 to 0o777)")
    return fs


def state_relpath(dist: Dist, patchset: str) -> str:
    return f"{dist.dist_info.name}/{STATE_DIR}/{patchset}.json"


def read_backup(read: Callable[[str], bytes | None], entry: FileState | PycState) -> bytes | None:
    """The original bytes an entry points to: a slice of its archive (or a whole file)."""
    if entry.backup is None:
        return None
    data = read(entry.backup)
    if data is None or entry.backup_offset is None or entry.backup_size is None:
        return data
    chunk = data[entry.backup_offset : entry.backup_offset + entry.backup_size]
    return chunk if len(chunk) == entry.backup_size else None


def backup_dir(dist: Dist, patchset: str) -> str:
    return f"{dist.dist_info.name}/{STATE_DIR}/{patchset}"


def load_state(dist: Dist, patchset: str) -> State | None:
    path = dist.root / state_relpath(dist, patchset)
    try:
        return State.from_json(bounded.read(path, bounded.METADATA))
    except FileNotFoundError:
        return None
    except (OSError, BadState) as exc:
        raise CompatkitError(f"{path}: unreadable compatkit state ({exc})") from None


def _state_names(folder: str) -> list[str]:
    """Patchset names with a state file in ``folder`` (a file ``<name>.json``, not a backup
    folder of that name), sorted. os.scandir, not Path.glob: a glob compiles a regular
    expression per call (a fixed cost of every revert, benchmark P5), and a name is a literal,
    never a pattern."""
    try:
        with os.scandir(folder) as entries:
            return sorted(
                e.name[: -len(".json")]
                for e in entries
                if e.name.endswith(".json") and len(e.name) > 5 and e.is_file()
            )
    except (FileNotFoundError, NotADirectoryError):
        return []


def _state_folders(base: str) -> list[str]:
    """``<dist>.dist-info/compatkit`` of every distribution below ``base``, sorted."""
    try:
        with os.scandir(base) as entries:
            infos = sorted(e.name for e in entries if e.name.endswith(".dist-info") and e.is_dir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [os.path.join(base, info, STATE_DIR) for info in infos]


def state_names(dist: Dist) -> list[str]:
    """The patchsets with a state file in ``dist``'s metadata, sorted."""
    return _state_names(str(dist.dist_info / STATE_DIR))


def states_of(dist: Dist) -> list[State]:
    return [s for s in (load_state(dist, n) for n in state_names(dist)) if s is not None]


def stacked_on(state: State, others: list[State]) -> list[str]:
    """The other applied patchsets that patched a file again after ``state`` did."""
    mine = {(f.path, f.written_sha) for f in state.files}
    return sorted({o.patchset for o in others for g in o.files if (g.path, g.original_sha) in mine})


def find_applied(env: Environment, patchset: str) -> Dist | None:
    """The distribution in ``env`` that holds state for ``patchset``, if any."""
    for base in env.paths:
        for folder in _state_folders(str(base)):
            if not os.path.isfile(os.path.join(folder, f"{patchset}.json")):
                continue
            dist = Dist.at(Path(folder).parent)  # the state lives in its dist's metadata
            if dist is not None:
                return dist
    return None


def applied_patchsets(env: Environment) -> list[str]:
    """Names of every patchset applied anywhere in ``env``."""
    names: set[str] = set()
    for base in env.paths:
        for folder in _state_folders(str(base)):
            names.update(_state_names(folder))
    return sorted(names)
