"""A runtime directory on disk: write it, read its manifest, remove it.

::

    DIR/sitecustomize.py          PYTHONPATH form: starts the hook, then chains to the
                                  sitecustomize it shadows (later on sys.path)
    DIR/_compatkit_hook_<h>.py    the hook (compatkit/runtime/hook.py; <h>: its hash)
    DIR/_compatkit_runtime/
        table.marshal             what the hook reads at start-up (marshal: no json import)
        manifest.json             the same for people and for status/verify, and more
        src/<key>/<relpath>       the patched sources
        pycache/<key>/...pyc      the hook's bytecode (cache tag cpython-3XX-ck<hash>)

The ``.pth`` form (``--pth``) writes no ``sitecustomize.py``: ``<site>/00-compatkit-runtime.pth``
puts DIR on ``sys.path`` and starts the hook through ``<site>/_compatkit_boot.py`` (the boot
checks, and their pyc); ``00-compatkit-runtime.start`` names the same entry point for Pythons
with PEP 829 (3.15+), which then ignore the ``.pth`` import line.
Inside DIR every file is reached through :class:`compatkit.runtime.folder.Folder` (the folder
checked whole, links never followed, temp file + os.replace); the files in site-packages
through :class:`compatkit.env.beneath.Tree` (the site-packages held open, ``__pycache__``
reached without following a link), in an environment the user owns or named safe
(:mod:`compatkit.env.owners`). ``table.marshal`` is written after the sources it
points to, the start-up code last; ``sitecustomize.py`` keeps every line but compatkit's block
(:mod:`compatkit.runtime.startfiles`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import marshal
import os
import stat
from pathlib import Path

from compatkit import bounded
from compatkit.env import owners
from compatkit.env.beneath import Tree
from compatkit.errors import CompatkitError, UsageError
from compatkit.runtime import startfiles, statfacts
from compatkit.runtime.folder import Folder, check_name
from compatkit.runtime.prepare import HOOK_SOURCE, Prepared, sha
from compatkit.runtime.statfacts import Facts

TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any

DATA = "_compatkit_runtime"  # the same as hook.DATA (the hook is not imported here)
MARKER = startfiles.LEGACY  # the first line of compatkit's .pth, .start and boot module
PTH_NAME = startfiles.PTH_NAME
BOOT = f"{startfiles.BOOT_MODULE}.py"  # the --pth form's start-up module, beside the .pth
SITE = "sitecustomize.py"


def hook_module() -> str:
    return startfiles.HOOK_PREFIX + hashlib.sha256(HOOK_SOURCE.read_bytes()).hexdigest()[:12]


def _table(prep: Prepared, facts: dict[str, Facts | None]) -> dict[str, object]:
    """What the hook reads; ``facts``: each patched source's stat facts (by module). The
    installed files' are taken now, when the folder is written (not at each ``exec`` that
    finds its folder written already: taking them costs an ``fsync`` a file)."""
    modules = {
        f.module: {
            "origin": f.origin,
            "original": sha(f.original),
            "original_facts": None
            if f.original is None
            else statfacts.of_path(f.origin, f.original),
            "patched": None if f.patched is None else f"{prep.key}/{f.relpath}",
            "sha": sha(f.patched),
            "patched_facts": facts.get(f.module),
            "package": f.package,
            "label": ", ".join(f.patches),
            "patchsets": sorted({p.partition(":")[0] for p in f.patches}),
        }
        for f in prep.files
    }
    guards = {ps.name: [tuple(g) for g in ps.guards] for ps in prep.patchsets}
    return {"format": 1, "key": prep.key, "modules": modules, "guards": guards}


def _manifest(prep: Prepared, pth: Path | None, table: bytes) -> dict[str, object]:
    return {
        "format": 1,
        "key": prep.key,
        "python": prep.python,
        "hook": hook_module(),
        "hook_sha256": sha(HOOK_SOURCE.read_bytes()),
        "table_sha256": sha(table),
        "pth": None if pth is None else str(pth),
        "boot_sha256": None if pth is None else sha(startfiles.boot_module().encode()),
        "patchsets": [
            {
                "name": ps.name,
                "version": ps.version,
                "digest": ps.digest,
                "patches": ps.ids,
                "distribution": ps.dist.name,
                "installed": ps.dist.version,
                "guards": ps.guards,
            }
            for ps in prep.patchsets
        ],
        "files": [
            {
                "relpath": f.relpath,
                "module": f.module,
                "origin": f.origin,
                "original": sha(f.original),
                "patched": sha(f.patched),
                "patches": list(f.patches),
            }
            for f in prep.files
        ],
    }


def _site_text(folder: Folder) -> str | None:
    data = folder.read(SITE)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CompatkitError(f"{folder.root / SITE}: not UTF-8; move it out of --dir") from None


def _new_site(folder: Folder, prep: Prepared, pth: bool) -> str | None:
    """What DIR/sitecustomize.py must hold (None: no file); checked before anything is written."""
    text = _site_text(folder)
    where = str(folder.root / SITE)
    if pth:  # the .pth starts the hook: no block (an earlier PYTHONPATH install's goes)
        return None if text is None else startfiles.without_block(text, where) or None
    names = [ps.name for ps in prep.patchsets]
    modules = sorted(f.module for f in prep.files)
    own = startfiles.block(str(folder.root), hook_module(), modules, names, chain=True)
    return startfiles.with_block(text, own, where)


def write(root: Path, prep: Prepared, pth_site: Path | None = None) -> Path | None:
    """Write (or update) the runtime directory ``root`` (absolute, links above it resolved);
    with ``pth_site``, the ``.pth`` form in that site-packages. Returns the ``.pth`` written."""
    for ps in prep.patchsets:  # named in the start-up files' comments
        check_name(ps.name, "patchset name")
    with Folder.create(root) as folder:
        site = _new_site(folder, prep, pth_site is not None)
        sources = {f.module: (f"{DATA}/src/{prep.key}/{f.relpath}", f.patched) for f in prep.files}
        for path, data in sources.values():
            if data is not None:
                folder.write(path, data)
        hook = hook_module()
        folder.write(f"{hook}.py", HOOK_SOURCE.read_bytes())
        folder.mkdir("__pycache__")  # Python's own would follow the umask (775 with 002)
        facts = {m: folder.facts(p, d) for m, (p, d) in sources.items() if d is not None}
        table = marshal.dumps(_table(prep, facts), 4)
        folder.write(f"{DATA}/table.marshal", table)
        pth = None if pth_site is None else pth_site / f"{PTH_NAME}.pth"
        manifest = json.dumps(_manifest(prep, pth, table), indent=1) + "\n"
        folder.write(f"{DATA}/manifest.json", manifest.encode())
        if pth is not None:
            names = [ps.name for ps in prep.patchsets]
            _write_pth(pth, root, hook, sorted(f.module for f in prep.files), names, prep.pyc_tag)
        if site is None:
            folder.remove(SITE)
        else:
            folder.write(SITE, site.encode())
        folder.remove(f"__pycache__/sitecustomize.{_tag()}.pyc")
        if prep.pyc_tag is not None:
            _write_pycs(folder, prep, prep.pyc_tag, hook, site)
        _drop_stale(folder, prep.key, hook)
    return pth


def _tag() -> str:
    import sys

    return sys.implementation.cache_tag or "python"


def _write_pycs(folder: Folder, prep: Prepared, tag: str, hook: str, site: str | None) -> None:
    """Checked-hash pycs of the hook, ``sitecustomize.py`` and the patched sources, where the
    target reads them (the patched ones: as the hook names them): the target loads them even
    with PYTHONDONTWRITEBYTECODE set (else it compiles the hook at every start), and
    never runs one for other source (the source's hash is checked first)."""
    # timestamp pycs, as Python writes them: it need not read and hash the source at each start
    _write_pyc(folder, f"__pycache__/{hook}.{tag}.pyc", HOOK_SOURCE.read_bytes(), f"{hook}.py")
    if site is not None:
        _write_pyc(folder, f"__pycache__/sitecustomize.{tag}.pyc", site.encode(), SITE)
    for f in prep.files:
        if f.patched is not None:
            stem = f"{DATA}/pycache/{prep.key}/{f.relpath[: -len('.py')]}"
            pyc = f"{stem}.{tag}-ck{sha(f.patched)[:16]}.pyc"  # type: ignore[index]
            _write_pyc(folder, pyc, f.patched, f.origin)


def _write_pyc(folder: Folder, relpath: str, source: bytes, filename: str) -> None:
    """A pyc of ``source``: for a file of the folder (``filename`` relative), the timestamp pyc
    Python itself writes (its mtime and size, so the file must hold ``source`` already); for a
    patched source, the checked-hash pyc the hook reads."""
    if os.path.isabs(filename):
        folder.write(relpath, _pyc(source, filename, None))
    else:
        st = folder.lstat(filename)
        folder.write(relpath, _pyc(source, str(folder.root / filename), st))


def _pyc(source: bytes, path: str, st: os.stat_result | None) -> bytes:
    """The timestamp pyc of ``source`` as the file ``st`` (its mtime and size); without ``st``,
    the checked-hash pyc."""
    from importlib.util import MAGIC_NUMBER, source_hash

    code = compile(source, path, "exec", dont_inherit=True)
    if st is None:
        header = MAGIC_NUMBER + (0b11).to_bytes(4, "little") + source_hash(source)
    else:
        stamp = [int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF]
        header = MAGIC_NUMBER + b"\0\0\0\0" + b"".join(n.to_bytes(4, "little") for n in stamp)
    return header + marshal.dumps(code)


def _write_pth(
    pth: Path, root: Path, hook: str, modules: list[str], names: list[str], tag: str | None
) -> None:
    """compatkit's own start-up code (docs/howto/runtime.md), the .pth last: the boot module
    and its pyc (the target's, where compatkit writes its bytecode and site-packages has a
    real ``__pycache__`` folder: else Python compiles it, as any module), the ``.pth`` (one
    path line, one import line), the ``.start``."""
    site = pth.parent
    owners.check_site(site)
    text = startfiles.pth_lines(str(root), hook, modules, names, str(site))
    try:
        source = startfiles.boot_module().encode()
        with Tree(site) as tree:
            tree.write(BOOT, source)
            if tag is not None:
                with contextlib.suppress(FileExistsError):
                    tree.mkdir("__pycache__")
                cache = tree.lstat("__pycache__")
                boot = tree.lstat(BOOT)
                if cache is not None and boot is not None and stat.S_ISDIR(cache.st_mode):
                    pyc = _pyc(source, str(site / BOOT), boot)  # never a pyc through a link
                    tree.write(f"__pycache__/{startfiles.BOOT_MODULE}.{tag}.pyc", pyc)
            tree.write(pth.name, text.encode("utf-8", "surrogateescape"), sync=True)
            start = f"{MARKER}\n{hook}:start\n".encode()
            tree.write(pth.with_suffix(".start").name, start, sync=True)
    except OSError as exc:
        raise CompatkitError(
            f"cannot write {pth} ({exc.strerror}); without --pth, put --dir on PYTHONPATH"
        ) from None


def _remove_startup(pth: Path, root: Path) -> list[str]:
    """Remove compatkit's ``.pth``, ``.start``, boot module and its bytecode from the
    site-packages holding ``pth`` (reached through its descriptor); what was removed."""
    start, boot = pth.with_suffix(".start"), pth.parent / BOOT
    paths = [pth, *(p for p in (start, boot) if _own_startup(p, root))]
    with Tree(pth.parent) as tree:
        cache = tree.lstat("__pycache__")
        if boot in paths and cache is not None and stat.S_ISDIR(cache.st_mode):
            for name in os.listdir(tree.folder("__pycache__")):  # its bytecode only
                if name.startswith(f"{startfiles.BOOT_MODULE}.") and name.endswith(".pyc"):
                    tree.unlink(f"__pycache__/{name}")
            tree.rmdir("__pycache__")  # the folder install made, if now empty
        for path in paths:
            tree.unlink(path.name)
    return [str(path) for path in paths]


def _drop_stale(folder: Folder, key: str, hook: str) -> None:
    """An update leaves no sources, bytecode or hook of the previous contents behind."""
    for sub in ("src", "pycache"):
        for old in folder.names(f"{DATA}/{sub}"):
            if old != key:
                folder.remove(f"{DATA}/{sub}/{old}")
    for old in folder.names():
        if old.startswith(startfiles.HOOK_PREFIX) and old != f"{hook}.py":
            folder.remove(old)
    for old in folder.names("__pycache__"):
        if old.startswith(startfiles.HOOK_PREFIX) and not old.startswith(f"{hook}."):
            folder.remove(f"__pycache__/{old}")


def read_manifest(root: Path) -> dict[str, Any]:
    with Folder.open(root, whole=False) as folder:
        return manifest_in(folder)


def manifest_in(folder: Folder) -> dict[str, Any]:
    """The manifest of ``folder``, once the folder is known to be a runtime folder and trusted
    whole (a folder that is not one is a usage error, whatever else it holds)."""
    path = folder.root / DATA / "manifest.json"
    data = folder.read(f"{DATA}/manifest.json")
    if data is None:
        raise UsageError(f"{folder.root} holds no compatkit runtime (no {DATA}/manifest.json)")
    folder.check()
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise CompatkitError(f"{path}: unreadable ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != 1:
        raise CompatkitError(f"{path}: not a compatkit runtime manifest (format 1)")
    return doc


def _own_startup(path: Path, root: Path) -> bool:
    """``path`` is a regular file (not a link) that compatkit wrote (a ``.pth``: for ``root``)."""
    try:  # the environment's file: a FIFO, a device or a link is not compatkit's, never read
        head = bounded.read(path, 1 << 16, follow=False, head=True)
    except (FileNotFoundError, bounded.Refused):
        return False
    mine = path.suffix != ".pth" or f"\n{root}\n".encode() in head
    return head.startswith(MARKER.encode()) and mine


def leftovers(folder: Folder) -> bool:
    """Whether the hook or compatkit's block is in ``folder`` (with or without a manifest)."""
    text = (folder.read(SITE) or b"").decode("utf-8", "replace")
    hooks = [n for n in folder.names() if n.startswith(startfiles.HOOK_PREFIX)]
    return bool(hooks) or startfiles.BEGIN in text


def _manifest_or_leftovers(folder: Folder) -> dict[str, Any]:
    """The manifest; or, if it is gone but the hook or compatkit's block is still there (a
    damaged folder whose start-up code refuses every start), nothing: remove what is left."""
    try:
        return manifest_in(folder)
    except UsageError:
        if not leftovers(folder):
            raise
    folder.check()
    return {}


def remove(root: Path, site: Path | None = None) -> list[str]:
    """Delete the runtime directory's files (and its ``.pth``/``.start``: the manifest's, or
    the one in ``site`` that names ``root``); what was removed. compatkit's block leaves
    ``sitecustomize.py``, every other line stays. The folder may be writable by others (a
    ``chmod g+w`` makes every start refuse it) or hold a special file: this only removes from
    it, through its descriptors (:class:`Folder` ``removing``), and writes back its
    ``sitecustomize.py`` as it stands, less compatkit's block."""
    with Folder.open(root, whole=False, removing=True) as folder:
        manifest = _manifest_or_leftovers(folder)
        text = _site_text(folder)
        rest = None if text is None else startfiles.without_block(text, str(root / SITE))
        removed: list[str] = []
        pths = {Path(p) for p in [manifest.get("pth")] if isinstance(p, str)}
        pths |= set() if site is None else {site / f"{PTH_NAME}.pth"}
        for pth in sorted(p for p in pths if _own_startup(p, root)):
            removed += _remove_startup(pth, root)
        if rest is not None and rest != text and rest.strip():
            folder.write(SITE, rest.encode())  # the user's lines stay
            removed.append(f"{root / SITE} (compatkit's block)")
        elif rest is not None and rest != text:
            folder.remove(SITE)
            removed.append(str(root / SITE))
        for name in folder.names():
            if name.startswith(startfiles.HOOK_PREFIX) and folder.remove(name):
                removed.append(str(root / name))
        for name in folder.names("__pycache__"):
            if name.startswith((startfiles.HOOK_PREFIX, "sitecustomize.")):
                folder.remove(f"__pycache__/{name}")
        folder.remove(DATA)
        removed.append(str(root / DATA))
    return removed
