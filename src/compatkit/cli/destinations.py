"""Where a command writes what the user asked for (``-o``):
checked before any work, so a file named where a folder is expected (or the other way round)
is one usage line, not an internal error after a long run.

>>> output_dir(Path("/dev/null"), "-o")
Traceback (most recent call last):
...
compatkit.errors.UsageError: -o /dev/null: not a folder (it exists and is something else)
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from compatkit.errors import UsageError
from compatkit.load.trust import shown


def _kind(path: Path, option: str) -> int | None:
    """The file type of ``path`` (links followed), None if nothing is there."""
    try:
        return stat.S_IFMT(os.stat(path).st_mode)
    except FileNotFoundError:
        return None
    except OSError as exc:  # ENAMETOOLONG, ENOTDIR (a file above it), ELOOP, EACCES
        raise UsageError(f"{option} {shown(path)}: {exc.strerror}") from None


def _parent_is_folder(path: Path, option: str) -> None:
    """The nearest existing folder above ``path`` must be a folder (mkdir makes the rest)."""
    for parent in path.absolute().parents:
        kind = _kind(parent, option)
        if kind is None:
            continue
        if kind != stat.S_IFDIR:
            raise UsageError(f"{option} {shown(path)}: {shown(parent)} is not a folder")
        return


def output_dir(path: Path, option: str) -> None:
    """``path`` is a folder, or nothing yet below a folder."""
    kind = _kind(path, option)
    if kind is None:
        _parent_is_folder(path, option)
    elif kind != stat.S_IFDIR:
        raise UsageError(f"{option} {shown(path)}: not a folder (it exists and is something else)")


def output_file(path: Path, option: str, make: bool = True) -> None:
    """``path`` is a regular file to replace, or nothing yet below a folder (``make``: the
    caller makes the folders missing above it; otherwise its folder must be there)."""
    kind = _kind(path, option)
    if kind is None and not make and _kind(path.absolute().parent, option) is None:
        raise UsageError(f"{option} {shown(path)}: no folder {shown(path.absolute().parent)}")
    if kind is None:
        _parent_is_folder(path, option)
    elif kind == stat.S_IFDIR:
        raise UsageError(f"{option} {shown(path)}: is a folder; name a file")
    elif kind != stat.S_IFREG:
        raise UsageError(f"{option} {shown(path)}: not a regular file")
