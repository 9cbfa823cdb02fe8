"""Whose folders and files compatkit obeys: the effective user's or root's, writable by nobody else.

The rule of git's ``safe.directory``, for configuration found by walking up and for patchsets:
a folder or file owned by another user (root excepted), or one that a group or everyone may
write, could hold somebody else's patches, so it is not obeyed. A sticky world-writable folder
such as ``/tmp`` is fine *above* a folder of the user's own (nobody else may rename or replace
that folder), but what lies directly in it is anybody's.

A patchset is read only through what was checked (:class:`Resolver`): its folder is resolved
once, every folder of the resolved path is judged, and so is the folder holding each link on
the way (whoever may change that folder chooses where the link leads); then every part of the
patchset compatkit reads (``patchset.toml``, ``patches/``, ``smoke/`` and everything in them)
is judged with ``lstat``, and files are opened without following links. Every part that fails
is reported at once, with the command that fixes them all (:func:`refusal`).

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

import errno
import os
import stat
from pathlib import Path

from compatkit import bounded
from compatkit.errors import UsageError

SHORT = 120  # a path longer than this is shortened in messages (one line, always)
_HOPS = 40  # links followed in one path before it counts as a loop (Linux's own limit)
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


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


class Finding:
    """A part another user may change: its path, why, and what fixes it (``chown``, ``chmod``,
    ``chown -h`` for a link; none where only moving it does: a sticky folder, a link in
    ``smoke/``)."""

    __slots__ = ("path", "why", "fixes")

    def __init__(self, path: str, why: str, fixes: tuple[str, ...]) -> None:
        self.path, self.why, self.fixes = path, why, fixes


def _verdict(path: str, st: os.stat_result, owners: tuple[int, ...], above: bool) -> Finding | None:
    mode, uid = st.st_mode, st.st_uid
    foreign = uid not in owners
    if stat.S_ISLNK(mode):  # its folder decides where it leads: judged on its own
        return Finding(path, f"a link owned by uid {uid}", ("chown -h",)) if foreign else None
    sticky = stat.S_ISDIR(mode) and bool(mode & stat.S_ISVTX)
    writable = bool(mode & 0o022) and not (above and sticky)
    if not foreign and not writable:
        return None
    if foreign:
        why = f"owned by uid {uid} (not you or root)"
    else:
        why = "writable by others" if mode & 0o002 else "writable by its group"
    shared = sticky and writable and bool(mode & 0o002)  # /tmp itself: move out of it
    return Finding(path, why, () if shared else ("chown",) * foreign + ("chmod",) * writable)


class Resolver:
    """Resolves and judges paths for one command; each path is ``lstat``-ed once.

    ``owners``: who may own what is trusted (the effective user and root; the shipped patchsets
    also whoever owns compatkit itself).
    """

    def __init__(self, owners: tuple[int, ...] | None = None) -> None:
        self.owners = (os.geteuid(), 0) if owners is None else owners
        self._stats: dict[str, os.stat_result] = {}
        self._verdicts: dict[tuple[str, bool], Finding | None] = {}
        self._chains: dict[tuple[str, bool], list[Finding]] = {}  # a path and all above it
        self._folders: dict[str, tuple[str, list[Finding]]] = {}  # resolved, and what it found

    def lstat(self, path: str) -> os.stat_result:
        st = self._stats.get(path)
        if st is None:
            st = self._stats[path] = os.lstat(path)
        return st

    def judge(
        self, path: str, st: os.stat_result, found: list[Finding], above: bool = False
    ) -> None:
        """A finding for ``path`` if another user may change it (``above``: it only holds
        a part we trust, so a sticky bit makes it safe)."""
        key = (path, above)
        if key not in self._verdicts:
            self._verdicts[key] = _verdict(path, st, self.owners, above)
        verdict = self._verdicts[key]
        if verdict is not None:
            found.append(verdict)

    def chain(self, real: str, found: list[Finding], above: bool = False) -> None:
        """Judge the resolved path ``real`` and every folder above it (sticky is fine there);
        each folder once per command."""
        todo, path, up = [], real, above
        while (path, up) not in self._chains:
            todo.append((path, up))
            parent = os.path.dirname(path)
            if parent == path:
                break
            path, up = parent, True
        for path, up in reversed(todo):
            own: list[Finding] = []
            st = self.lstat(path)
            if stat.S_ISLNK(st.st_mode):  # replaced by a link since it was resolved
                own.append(Finding(path, "a symbolic link (changed while checked)", ()))
            self.judge(path, st, own, up)
            parent = os.path.dirname(path)
            above_it = self._chains.get((parent, True), []) if parent != path else []
            self._chains[(path, up)] = own + above_it
        found.extend(self._chains[(real, above)])

    def resolve(self, path: str, found: list[Finding]) -> str:
        """``path`` with every link resolved (OSError if a part is missing), each link's folder
        and the folders above it judged (a link in a folder another user may change leads where
        that user says), then the result and the folders above it. Each folder is resolved
        once per command (a series' patches share one or two: start-up time, P1)."""
        if not os.path.isabs(path):
            path = os.path.join(os.getcwd(), path)
        head, leaf = os.path.split(path)
        if leaf in ("", ".", ".."):
            return self._resolve(path, found)
        folder = self._folders.get(head)
        if folder is None:
            mine: list[Finding] = []
            folder = self._folders[head] = (self._resolve(head, mine, above=True), mine)
        found.extend(folder[1])
        here = os.path.join(folder[0], leaf)
        if not stat.S_ISLNK(self.lstat(here).st_mode):  # the common case, quickly (P1)
            self.chain(here, found)
            return here
        return self._resolve(leaf, found, folder[0])

    def _resolve(
        self, path: str, found: list[Finding], done: str = "/", above: bool = False
    ) -> str:
        pending, hops = path.split("/")[::-1], 0
        while pending:
            name = pending.pop()
            if name in ("", "."):
                continue
            if name == "..":
                done = os.path.dirname(done)
                continue
            here = os.path.join(done, name)
            st = self.lstat(here)
            if stat.S_ISLNK(st.st_mode):
                hops += 1
                if hops > _HOPS:
                    raise OSError(errno.ELOOP, "Too many levels of symbolic links", path)
                self.chain(done, found, above=True)
                self.judge(here, st, found)
                target = os.readlink(here)
                if target.startswith("/"):
                    done = "/"
                pending.extend(target.split("/")[::-1])
                continue
            if not stat.S_ISDIR(st.st_mode) and any(p not in ("", ".") for p in pending):
                raise OSError(errno.ENOTDIR, "Not a directory", here)
            done = here
        self.chain(done, found, above)
        return done

    def survey(self, root: str, found: list[Finding], parts: tuple[str, ...] = ()) -> None:
        """Judge the patchset folder ``root`` (resolved) and every part compatkit reads from it:
        ``patchset.toml``, ``patches/`` and ``smoke/`` and everything in them (a link in
        ``patches/`` is judged where the series names it; one in ``smoke/``, which pytest would
        follow, is refused) and, when ``smoke/`` is a package, the folders its tests import
        from. ``parts``: only these (a smoke-from sibling lends only its ``smoke/``)."""
        try:
            self.judge(root, self.lstat(root), found)
        except OSError:
            return  # gone: the loader says so
        for name in parts or ("patchset.toml", "patches", "smoke"):
            path = os.path.join(root, name)
            try:
                st = self.lstat(path)
            except OSError:
                continue  # missing or unreadable: the loader says so
            if stat.S_ISLNK(st.st_mode):
                if name != "patches":  # the series' entries are resolved and judged one by one
                    found.append(Finding(path, "a symbolic link (replace it with a copy)", ()))
                continue
            self.judge(path, st, found)
            if stat.S_ISDIR(st.st_mode):
                self._walk(path, found, links_ok=name == "patches")
            if name == "smoke":
                self._imports(root, found)

    def _walk(self, top: str, found: list[Finding], links_ok: bool) -> None:
        folders = [top]
        while folders:
            folder = folders.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue  # unreadable: the loader says so where it reads
            for entry in entries:
                path = entry.path
                st = self._stats[path] = entry.stat(follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    if not links_ok:  # a link in patches/ is judged where the series names it
                        why = "a symbolic link (replace it with a copy)"
                        found.append(Finding(path, why, ()))
                    continue
                self.judge(path, st, found)
                if stat.S_ISDIR(st.st_mode):
                    folders.append(path)

    def _imports(self, root: str, found: list[Finding]) -> None:
        """pytest puts on ``sys.path`` the first folder above a test that is not a package:
        with ``smoke/__init__.py`` that is ``root`` or above, and all that lies in it is
        importable by the tests."""
        folder = os.path.join(root, "smoke")
        while os.path.lexists(os.path.join(folder, "__init__.py")):
            folder = os.path.dirname(folder)
            try:
                self.judge(folder, self.lstat(folder), found)
                entries = list(os.scandir(folder))
            except OSError:
                return
            for entry in entries:
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    found.append(Finding(entry.path, "a symbolic link smoke tests may import", ()))
                else:
                    self.judge(entry.path, st, found)

    def read(self, path: str, found: list[Finding]) -> bytes | None:
        """The bytes of the regular file ``path`` (resolved), opened without following a link
        and judged on the open file; None if it is missing, not a regular file, or untrusted
        (then with a finding). Larger than 64 MiB: :class:`compatkit.bounded.Refused`."""
        try:
            fd = os.open(path, _READ)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            if exc.errno != errno.ELOOP:  # ELOOP: a link put there since it was resolved
                raise
            found.append(Finding(path, "a symbolic link (changed while checked)", ()))
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None
            before = len(found)
            self._verdicts.pop((path, False), None)  # judged again, on what was opened
            self.judge(path, st, found)
            if len(found) > before:
                return None
            return bounded.read_open(fd, st, bounded.METADATA, shown(path))
        finally:
            os.close(fd)


def refusal(what: str, found: list[Finding]) -> UsageError:
    """One error naming every part another user may change, with the command that fixes them
    all (``chown`` to the effective user, ``chmod g-w,o-w``), so following it once is enough."""
    import shlex  # only on this error path
    from pwd import getpwuid

    first: dict[str, Finding] = {}
    for finding in found:
        first.setdefault(finding.path, finding)
    unique = list(first.values())
    try:
        user = getpwuid(os.geteuid()).pw_name
    except KeyError:
        user = str(os.geteuid())
    commands = []
    for fix, command in (("chown -h", f"chown -h {user}"), ("chown", f"chown {user}")):
        paths = [shlex.quote(f.path) for f in unique if fix in f.fixes]
        if paths:
            commands.append(f"{command} {' '.join(paths)}")
    paths = [shlex.quote(f.path) for f in unique if "chmod" in f.fixes]
    if paths:
        commands.append(f"chmod g-w,o-w {' '.join(paths)}")
    moved = [f for f in unique if not f.fixes]
    advice = f"; fix: {' && '.join(commands)}" if commands else ""
    if moved:
        advice += f"; {'then ' if commands else ''}move or copy what is listed without a fix"
    if len(unique) == 1:
        one = unique[0]
        return UsageError(
            f"{what}: refused: {shown(one.path)} is {one.why}; patchsets there could be "
            f"anyone's{advice}"
        )
    return UsageError(
        f"{what}: refused: {len(unique)} parts another user may change (patchsets there could "
        f"be anyone's){advice}",
        [f"{shown(f.path)}: {f.why}" for f in unique],
    )


def check_folder(folder: Path, what: str, resolver: Resolver | None = None) -> Path:
    """``folder``, resolved, if it, every folder above it and the folders holding the links
    on the way may be trusted; else UsageError naming every part another user may change,
    the patchsets in it included (one fix for all).

    ``what`` names where the folder came from (``--patchset-dir X``), for the message.
    """
    resolver = resolver or Resolver()
    found: list[Finding] = []
    try:
        real = resolver.resolve(os.fspath(folder), found)
        st = resolver.lstat(real)
    except (OSError, RuntimeError) as exc:  # missing, unreadable, ENAMETOOLONG, a link loop
        why = getattr(exc, "strerror", None) or "a loop of links"
        raise UsageError(f"{what}: not a directory ({why})") from None
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{what}: not a directory")
    if found:
        survey_all(resolver, real, found)
        raise refusal(what, found)
    return Path(real)


def survey_all(resolver: Resolver, base: str, found: list[Finding]) -> None:
    """Judge ``base`` as a patchset folder, or each patchset folder directly in it."""
    if os.path.isfile(os.path.join(base, "patchset.toml")):
        resolver.survey(base, found)
        return
    try:
        children = sorted(os.scandir(base), key=lambda e: e.name)
    except OSError:
        return
    for child in children:
        if child.is_dir(follow_symlinks=False) and os.path.isfile(
            os.path.join(child.path, "patchset.toml")
        ):
            resolver.survey(child.path, found)
