"""Path containment: which relative paths a patch may name, and where they may resolve.

>>> check_relpath("pkg/mod.py")
>>> check_relpath("../evil.py")
Traceback (most recent call last):
...
compatkit.errors.CompatkitError: refused path '../evil.py': it contains '..'
"""

from __future__ import annotations

import os
import stat

from compatkit.errors import CompatkitError

TYPE_CHECKING = False

if TYPE_CHECKING:
    from pathlib import Path

_METADATA_SUFFIXES = (".dist-info", ".egg-info", ".data")


MAX_DEPTH = 64  # folders: no distribution nests deeper; os.makedirs recurses per level
MAX_LENGTH = 1024  # characters in a whole path (a name longer than 255 bytes: ENAMETOOLONG)


def quoted(path: str) -> str:
    """``repr(path)`` for a one-line message, an overlong path cut in the middle."""
    return repr(path) if len(path) <= 120 else repr(f"{path[:60]}...{path[-60:]}")


def shown(text: str) -> str:
    """``text`` for a one-line message, never ambiguous: as it is, or quoted as Python quotes
    it (``repr``: control and undecodable characters escaped) when it holds one of those or
    begins or ends with white space, which would be invisible.

    >>> print(shown("pkg/m.py"), shown("pkg/m.py  "), shown("pkg/\\x1b[2Jm.py"))
    pkg/m.py 'pkg/m.py  ' 'pkg/\\x1b[2Jm.py'
    """
    return text if text.isprintable() and text == text.strip() else repr(text)


def _refuse(path: str, why: str) -> CompatkitError:
    return CompatkitError(f"refused path {quoted(path)}: {why}")


def check_relpath(path: str, own_metadata: str | None = None) -> None:
    """Refuse anything but a plain, relative, forward-slash path below the root.

    Paths into package metadata are refused, except below ``own_metadata`` (the ``.dist-info``
    folder whose RECORD, state and backups compatkit itself writes).
    """
    if not path:
        raise _refuse(path, "it is empty")
    if "\x00" in path or "\r" in path or "\n" in path:
        raise _refuse(path, "it contains a NUL or line break")
    if not path.isprintable():
        raise _refuse(path, "it contains a control or undecodable character")
    if "\\" in path:
        raise _refuse(path, "it contains a backslash")
    if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
        raise _refuse(path, "it is absolute")
    parts = path.split("/")
    if len(parts) > MAX_DEPTH or len(path) > MAX_LENGTH:
        raise _refuse(path, f"it is over {MAX_DEPTH} folders deep or {MAX_LENGTH} characters")
    if ".." in parts:
        raise _refuse(path, "it contains '..'")
    if "" in parts or "." in parts:
        raise _refuse(path, "it has an empty or '.' component")
    inner = parts[1:-1] if own_metadata is not None and parts[0] == own_metadata else parts[:-1]
    if any(p.endswith(_METADATA_SUFFIXES) for p in inner):
        raise _refuse(path, "it points into package metadata")
    try:
        size = len(path.encode("utf-8"))
    except UnicodeEncodeError:
        raise _refuse(path, "it is not valid UTF-8") from None
    if size > 255 and any(len(p.encode("utf-8")) > 255 for p in parts):
        raise _refuse(path, "a name in it is over 255 bytes (File name too long)")


def resolve_inside(
    root: str | Path,
    path: str,
    dirs_ok: set[str] | None = None,
    own_metadata: str | None = None,
    replace_last: bool = False,  # the last component may be a symlink: it is replaced, not read
) -> None:
    """Refuse ``root / path`` if a symlink is anywhere between root and the file, or an
    existing component is not a directory (or, last, not a regular file). Nothing is
    returned: the callers go on with the relative path (a ``Path`` made per file costs
    more than the check, benchmark P2).

    Every existing component is lstat-ed and none may be a symlink, and ``..`` is refused, so
    the result cannot resolve outside ``root`` (a realpath() check after the walk would
    repeat one lstat per component per file, benchmark P2).
    ``dirs_ok`` remembers the directories already checked, across calls on one root.
    """
    check_relpath(path, own_metadata)
    parts = path.split("/")
    base = str(root)
    for i in range(1, len(parts) + 1):
        rel = "/".join(parts[:i])
        last = i == len(parts)
        if not last and dirs_ok is not None and rel in dirs_ok:
            continue
        full = os.path.join(base, rel)
        try:
            mode = os.lstat(full).st_mode
        except FileNotFoundError:
            break
        except OSError as exc:  # a name too long, ...
            raise _refuse(path, exc.strerror or str(exc)) from None
        if stat.S_ISLNK(mode) and last and replace_last:
            break
        if stat.S_ISLNK(mode):
            raise _refuse(path, f"{full} is a symlink")
        if not last and not stat.S_ISDIR(mode):
            raise _refuse(path, f"{full} is not a directory")
        if last and not stat.S_ISREG(mode):
            raise _refuse(path, f"{full} is not a regular file")
        if not last and dirs_ok is not None:
            dirs_ok.add(rel)


def environment_folder(root: str) -> str:
    """The environment a site-packages ``root`` belongs to, where its installer also puts
    scripts, headers and data (``bin/``, ``include/``, ``share/``): ``P`` for
    ``P/lib/python3.11/site-packages``, ``P/lib64/...``, ``P/lib/python3/dist-packages`` and
    ``P/Lib/site-packages``; ``root`` itself for any other layout.

    >>> environment_folder("/v/lib/python3.11/site-packages"), environment_folder("/opt/x")
    ('/v', '/opt/x')
    """
    parent, grand = os.path.dirname(root), os.path.dirname(os.path.dirname(root))
    if os.path.basename(root) not in ("site-packages", "dist-packages"):
        return root
    if os.path.basename(parent).lower() in ("lib", "lib64"):
        return grand
    if os.path.basename(parent).startswith("python") and os.path.basename(grand) in (
        "lib",
        "lib64",
    ):
        return os.path.dirname(grand)
    return root


def outside_environment(root: str, path: str) -> str | None:
    """Where a RECORD row's ``path`` points when that is outside the environment of the
    site-packages ``root`` (None: it stays in). A plain relative path stays below ``root``;
    an absolute one, or one with ``..``, is placed lexically (nothing is read or resolved):
    an installer's ``../../../bin/tool`` stays in, ``../../../../etc/shadow`` leaves.

    >>> root = "/v/lib/python3.11/site-packages"
    >>> [outside_environment(root, p) for p in ("pkg/m.py", "../../../bin/tool")]
    [None, None]
    >>> outside_environment(root, "../../../../etc/shadow"), outside_environment(root, "/etc/x")
    ('/etc/shadow', '/etc/x')
    """
    if not path.startswith("/") and ".." not in path.split("/"):
        return None
    place = os.path.normpath(os.path.join(root, path))
    inside = os.path.join(os.path.normpath(environment_folder(root)), "")
    return None if os.path.join(place, "").startswith(inside) else place
