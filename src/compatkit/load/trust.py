"""Whose folders and files compatkit obeys: the effective user's or root's, writable by nobody else.

The rule of git's ``safe.directory``, for configuration found by walking up and for patchset
folders: a folder or file owned by another user (root excepted), or one that a group or
everyone may write, could hold somebody else's patches, so it is not obeyed. A sticky
world-writable folder such as ``/tmp`` is fine *above* a folder of the user's own (nobody else
may rename or replace that folder), but what lies directly in it is anybody's.

>>> import stat
>>> why_untrusted(0o40755, 0, euid=1000) is None   # root's own folder: fine for everyone
True
>>> why_untrusted(0o40755, 1001, euid=1000)
'owned by uid 1001 (not you or root)'
>>> why_untrusted(0o41777, 0, euid=1000)            # /tmp: anybody's files land there
'writable by others'
>>> why_untrusted(0o41777, 0, euid=1000, above=True) is None  # sticky: cannot replace ours
True
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from compatkit.errors import UsageError

SHORT = 120  # a path longer than this is shortened in messages (one line, always)


def why_untrusted(mode: int, uid: int, euid: int | None = None, above: bool = False) -> str | None:
    """Why a folder or file with this mode and owner must not be obeyed (None: it may be).

    ``above``: the folder only holds one we trust, so a sticky bit makes it safe to write.
    """
    euid = os.geteuid() if euid is None else euid
    if uid not in (euid, 0):
        return f"owned by uid {uid} (not you or root)"
    if mode & 0o022:
        if above and stat.S_ISDIR(mode) and mode & stat.S_ISVTX:
            return None
        return "writable by others" if mode & 0o002 else "writable by its group"
    return None


def shown(path: Path | str) -> str:
    """``path`` for a one-line message: control characters escaped, an overlong one cut."""
    text = str(path)
    if not text.isprintable():
        text = repr(text)[1:-1]
    return text if len(text) <= SHORT else f"{text[: SHORT // 2]}...{text[-SHORT // 2 :]}"


def check_folder(folder: Path, what: str) -> Path:
    """``folder``, resolved, if it and every folder above it may be trusted; else UsageError.

    ``what`` names where the folder came from (``--patchset-dir X``), for the message.
    """
    try:
        real = folder.resolve(strict=True)
        st = os.stat(real)
    except (OSError, RuntimeError) as exc:  # missing, unreadable, ENAMETOOLONG, a link loop
        why = getattr(exc, "strerror", None) or "a loop of links"
        raise UsageError(f"{what}: not a directory ({why})") from None
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{what}: not a directory")
    problem = why_untrusted(st.st_mode, st.st_uid)
    at = real
    for parent in real.parents:
        if problem is not None:
            break
        try:
            pst = os.stat(parent)
        except OSError as exc:
            raise UsageError(f"{what}: {parent}: {exc.strerror}") from None
        problem, at = why_untrusted(pst.st_mode, pst.st_uid, above=True), parent
    if problem is not None:
        where = "" if at == real else f" ({shown(at)} is {problem})"
        problem = problem if at == real else "inside a folder another user may change"
        raise UsageError(f"{what}: refused: {problem}{where}; patchsets there could be anyone's")
    return real
