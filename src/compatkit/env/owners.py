"""Whose environment compatkit acts on: the user's own or root's, unless the user names it.

The rule of git's ``safe.directory``: a target environment another user owns is refused, by
every command (git refuses every command in such a repository), because its owner can
change it while compatkit runs: swap a folder for a link between the check and the write,
or put his own code where root's ``--python`` probe runs it. Checked are the interpreter
``--python`` names (before it is run: the file, its folder, the venv folder above and its
``pyvenv.cfg``) and, before any session on a distribution, every folder from the
environment folder (``V`` of ``V/lib/python3.X/site-packages``) down to the site-packages
root. Each must be owned by the user running compatkit or by root (``/usr`` passes for
everyone). The user trusts another user's environment explicitly, by naming it (the
environment folder or the site-packages root; ``*``: every one) in
``$COMPATKIT_SAFE_ENVIRONMENTS`` (separated by ``:``) or in the project's
``[tool.compatkit] safe-environments`` (docs/security.md, "Another user's environment").

>>> import tempfile
>>> check_site(tempfile.mkdtemp())   # the user's own folder: nothing to say
>>> why_foreign(["/"], euid=4242) is None   # root's: fine for everyone
True
"""

from __future__ import annotations

import os

from compatkit.errors import UsageError
from compatkit.model.paths import environment_folder

TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from pathlib import Path

ENV = "COMPATKIT_SAFE_ENVIRONMENTS"
_configured: Callable[[], Sequence[str]] | None = None  # the project's safe-environments


def configure(source: Callable[[], Sequence[str]] | None) -> None:
    """Where the project's ``safe-environments`` come from: asked only for a foreign
    environment (reading the project's configuration costs start-up time)."""
    global _configured
    _configured = source


def why_foreign(paths: Iterable[str], euid: int | None = None) -> tuple[str, int] | None:
    """The first of ``paths`` (links followed) owned by neither ``euid`` nor root, and its
    owner; None if every one that exists is theirs."""
    euid = os.geteuid() if euid is None else euid
    for path in paths:
        try:
            uid = os.stat(path).st_uid
        except OSError:
            continue  # missing: nothing of anybody's is run or written there
        if uid not in (euid, 0):
            return path, uid
    return None


def check_interpreter(exe: str) -> None:
    """Refuse to run ``exe`` (``--python``'s interpreter) if another user may change it."""
    folder = os.path.dirname(os.path.abspath(exe))
    venv = os.path.dirname(folder)
    cfgs = [os.path.join(p, "pyvenv.cfg") for p in (folder, venv)]
    _check(venv, [exe, folder, venv, *cfgs], [venv, exe])


def check_site(root: str | Path) -> None:
    """Refuse the site-packages ``root`` if another user may change it or a folder above it
    up to its environment folder."""
    root = os.path.abspath(root)
    top = environment_folder(root)
    chain = [root]
    while chain[-1] != top and os.path.dirname(chain[-1]) != chain[-1]:
        chain.append(os.path.dirname(chain[-1]))
    _check(top, reversed(chain), [top, root])


def _check(place: str, paths: Iterable[str], names: list[str]) -> None:
    found = why_foreign(paths)
    if found is None or _named_safe(names):
        return
    path, uid = found
    raise UsageError(
        f"refusing the environment {place}: {path} is owned by uid {uid} (not you or root), "
        f"who can change it while compatkit runs; if you trust it, name it in {ENV} or in "
        "[tool.compatkit] safe-environments (docs/security.md)"
    )


def _named_safe(names: list[str]) -> bool:
    """Whether the user named one of ``names`` (or ``*``) as a safe environment."""
    entries = [e for e in os.environ.get(ENV, "").split(os.pathsep) if e]
    if _configured is not None:
        entries += _configured()
    if "*" in entries:
        return True
    wanted = {os.path.normpath(n) for n in names} | {os.path.realpath(n) for n in names}
    return any(
        os.path.normpath(os.path.expanduser(e)) in wanted
        or os.path.realpath(os.path.expanduser(e)) in wanted
        for e in entries
    )
