"""A project's ``[tool.compatkit]`` table: the patchsets it needs and how strict to be.

::

    [tool.compatkit]
    patchsets = ["speculators-vllm016"]
    patchset-dirs = ["patches"]        # relative to this pyproject.toml
    on-mismatch = "strict"             # or "warn"
    safe-environments = ["/srv/venvs/team"]  # another user's environments you trust ("*": all)

    [tool.compatkit.patchset-source]   # a name two sources ship: the one to use
    team-fix = "team-patchsets"        # a package; or "bundled", "project", "--patchset-dir"

>>> parse_config({"tool": {"compatkit": {"patchsets": ["a"]}}}, Path("/p/pyproject.toml")).policy
'strict'
"""

from __future__ import annotations

import os
from pathlib import Path

from compatkit import bounded
from compatkit.errors import PatchFormatError, UsageError
from compatkit.load import cache
from compatkit.load.trust import check_folder, shown, why_untrusted
from compatkit.value import Value

TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Callable

POLICIES = ("strict", "warn")
MAX_BYTES = 16 << 20  # a pyproject.toml larger than this is not a project file


class ProjectConfig(Value):
    __slots__ = (
        "path",
        "patchsets",
        "patchset_dirs",
        "policy",
        "patchset_source",
        "safe_environments",
    )

    def __init__(
        self,
        path: Path,
        patchsets: tuple[str, ...],
        patchset_dirs: tuple[Path, ...],
        policy: str = "strict",
        patchset_source: dict[str, str] | None = None,
        safe_environments: tuple[str, ...] = (),
    ) -> None:
        self.path = path
        self.patchsets = patchsets
        self.patchset_dirs = patchset_dirs
        self.policy = policy
        self.patchset_source = patchset_source or {}
        self.safe_environments = safe_environments  # compatkit.env.owners: "*" or absolute


def parse_config(data: dict[str, object], path: Path) -> ProjectConfig | None:
    tool = data.get("tool")
    table = tool.get("compatkit") if isinstance(tool, dict) else None
    if table is None:
        return None
    if not isinstance(table, dict):
        raise PatchFormatError(f"{path}: [tool.compatkit] must be a table")
    names = table.get("patchsets", [])
    dirs = table.get("patchset-dirs", [])
    policy = table.get("on-mismatch", "strict")
    for key, value in (("patchsets", names), ("patchset-dirs", dirs)):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise PatchFormatError(f"{path}: [tool.compatkit] {key} must be a list of strings")
    if policy not in POLICIES:
        raise PatchFormatError(f"{path}: [tool.compatkit] on-mismatch must be strict or warn")
    source = table.get("patchset-source", {})
    if not isinstance(source, dict) or not all(isinstance(v, str) for v in source.values()):
        raise PatchFormatError(
            f"{path}: [tool.compatkit.patchset-source] must map patchset names to strings"
        )
    for entry in dirs:
        _check_entry(path, entry)
    base = path.parent
    found = tuple(base / d for d in dirs)
    safe = _safe_environments(path, table.get("safe-environments", []))
    return ProjectConfig(path, tuple(names), found, str(policy), dict(source), safe)


def _safe_environments(path: Path, value: object) -> tuple[str, ...]:
    """``safe-environments``: ``"*"`` or absolute folders (``~`` expanded)."""
    key = f"{path}: [tool.compatkit] safe-environments"
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PatchFormatError(f"{key} must be a list of strings")
    entries = tuple(v if v == "*" else os.path.expanduser(v) for v in value)
    for entry in entries:
        if entry != "*" and (not os.path.isabs(entry) or not entry.isprintable()):
            raise PatchFormatError(f"{key} entry {shown(entry)!r} is not an absolute folder or '*'")
    return entries


def _check_entry(path: Path, entry: str) -> None:
    """A ``patchset-dirs`` entry is a folder inside the project: relative, no ``..``."""
    why = None
    if not entry or "\x00" in entry or not entry.isprintable():
        why = "is empty or not printable"
    elif entry.startswith("/") or entry.startswith("~"):
        why = "is absolute"
    elif ".." in entry.split("/"):
        why = "contains '..'"
    if why is not None:
        raise PatchFormatError(
            f"{path}: [tool.compatkit] patchset-dirs entry {shown(entry)!r} {why}: entries are "
            "folders inside the project (use --patchset-dir for one elsewhere)"
        )


def find_config(
    start: Path, explicit: Path | None = None, warn: Callable[[str], None] | None = None
) -> ProjectConfig | None:
    """The nearest trusted pyproject.toml with a [tool.compatkit] table, walking up from
    ``start``. The walk stops at a folder or a pyproject.toml another user may change (see
    compatkit.load.trust), with one warning line to ``warn`` if a pyproject.toml naming
    compatkit lies there or above: it is not obeyed."""
    if explicit is not None:
        if not _is_file(explicit):
            raise UsageError(f"--config {shown(explicit)}: no such file")
        raw, why = _read(explicit)
        if why is not None:
            raise UsageError(f"--config {shown(explicit)}: refused: it is {why}")
        return _load(explicit, raw)
    for folder in (start, *start.parents):
        path = folder / "pyproject.toml"
        why = _folder_problem(folder)
        raw = b""
        if why is None and _is_file(path):
            raw, file_why = _read(path)
            why = None if file_why is None else f"{shown(path)} is {file_why}"
        if why is not None:
            if warn is not None:
                _warn_boundary(folder, why, warn)
            return None  # nothing at or above a boundary is obeyed
        if b"compatkit" not in raw:
            continue  # cheap pre-check: most pyproject.toml files have no such table
        config = _load(path, raw)
        if config is not None:
            return config
    return None


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # ENAMETOOLONG, EACCES on a folder above
        return False


def _folder_problem(folder: Path) -> str | None:
    try:
        st = os.stat(folder)
    except OSError as exc:
        return f"{shown(folder)}: {exc.strerror}"
    why = why_untrusted(st.st_mode, st.st_uid)
    return None if why is None else f"{shown(folder)} is {why}"


def _read(path: Path) -> tuple[bytes, str | None]:
    """A pyproject.toml's bytes, or why it is not read: a file another user may change, or
    not a regular file (never opened: :func:`compatkit.bounded.open_regular`). Over
    ``MAX_BYTES``: :class:`compatkit.bounded.Refused`, exit 1."""
    try:
        fd, st = bounded.open_regular(path, where=shown(path))
    except bounded.Refused:
        return b"", "not a regular file"
    except OSError as exc:
        raise PatchFormatError(f"{shown(path)}: {exc.strerror}") from None
    try:
        why = why_untrusted(st.st_mode, st.st_uid)
        if why is not None:
            return b"", why
        return bounded.read_open(fd, st, MAX_BYTES, shown(path)), None
    except OSError as exc:  # EIO and the like
        raise PatchFormatError(f"{shown(path)}: {exc.strerror}") from None
    finally:
        os.close(fd)


def _warn_boundary(folder: Path, why: str, warn: Callable[[str], None]) -> None:
    """One line if a pyproject.toml that names compatkit lies at or above ``folder``."""
    for above in (folder, *folder.parents):
        path = above / "pyproject.toml"
        if not _is_file(path):
            continue
        try:
            raw = _read(path)[0]
        except PatchFormatError:
            raw = b"compatkit"  # unreadable: still say it was passed over
        if b"compatkit" in raw or not raw:
            warn(f"ignoring {shown(path)}: {why}")
            return


def _load(path: Path, raw: bytes) -> ProjectConfig | None:
    try:
        data = cache.toml_loads(raw)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError, TOMLDecodeError too
        why = "nested too deeply" if isinstance(exc, RecursionError) else exc
        raise PatchFormatError(f"{shown(path)}: {why}") from None
    config = parse_config(data, path)
    if config is not None:
        _check_dirs(config)
    return config


def _check_dirs(config: ProjectConfig) -> None:
    """Each patchset-dirs folder is trusted (compatkit.load.trust) and, links resolved, still
    inside the project folder; the config keeps the resolved folder, the one that is read."""
    project = config.path.parent.resolve()
    resolved = []
    for folder in config.patchset_dirs:
        entry = shown(folder.relative_to(config.path.parent))
        what = f"{shown(config.path)}: patchset-dirs entry {entry!r}"
        if not os.path.lexists(folder):
            resolved.append(folder)
            continue  # the registry says it is missing, when (and if) it is needed
        real = check_folder(folder, what)
        if real != project and project not in real.parents:
            raise PatchFormatError(f"{what} resolves outside the project folder, to {shown(real)}")
        resolved.append(real)
    config.patchset_dirs = tuple(resolved)
