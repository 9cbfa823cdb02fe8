"""Start-up code: the files Python runs at every interpreter start, and which patches touch them.

At every start (unless ``python -S``) site.py lists each site directory, reads every ``*.pth``
file at its root and executes each line that starts with ``import``; then it imports
``sitecustomize`` and, where the user site is enabled, ``usercustomize`` from ``sys.path``. A
patch that creates, edits or deletes such a file changes what every ``python`` runs, so
compatkit refuses it unless ``patchset.toml`` lists the file under ``[patchset] startup-code``.

A ``.pth`` file below the root (``pkg/x.pth``) is not start-up code: site.py never reads it.
The whole ``sitecustomize/`` (``usercustomize/``) package counts, not just its ``__init__.py``,
which usually imports the rest. Names are compared case-insensitively: a case-insensitive file
system (or ``PYTHONCASEOK``) makes ``SiteCustomize.py`` importable; the cost is a false alarm.

>>> [is_startup_path(p) for p in ("evil.pth", "pkg/evil.pth", "sitecustomize/__init__.py")]
[True, False, True]
"""

from __future__ import annotations

from compatkit.errors import CompatkitError, PatchFormatError
from compatkit.model.paths import check_relpath

TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from compatkit.model.patchset import Patch, Patchset

KEY = "startup-code"
_MODULES = ("sitecustomize", "usercustomize")
_SUFFIXES = (".py", ".pyw", ".pyc", ".so", ".pyd")  # source, sourceless, extension modules
_HEADERS = ("--- ", "+++ ", "diff --git ")
VERBS = {"create": "creates", "modify": "edits", "delete": "deletes"}


def _hook_module(name: str) -> bool:
    return name.split(".", 1)[0] in _MODULES and name.endswith(_SUFFIXES)


def is_startup_path(relpath: str) -> bool:
    """Whether ``relpath`` (relative to the site-packages root) is code site.py runs."""
    parts = relpath.lower().split("/")
    if len(parts) == 1:
        return parts[0].endswith(".pth") or _hook_module(parts[0])
    if parts[0] in _MODULES:  # the package, and the modules its __init__ imports
        return True
    # bytecode of a root sitecustomize.py: what the interpreter actually runs
    return len(parts) == 2 and parts[0] == "__pycache__" and _hook_module(parts[1])


def declared(meta: Mapping[str, object], where: str) -> tuple[str, ...]:
    """The ``startup-code`` list of a ``[patchset]`` table, validated (default: empty)."""
    value = meta.get(KEY, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PatchFormatError(f"{where}: '{KEY}' must be a list of paths (strings)")
    for path in value:
        try:
            check_relpath(path)
        except CompatkitError as exc:
            raise PatchFormatError(f"{where}: {KEY}: {exc.message}") from None
        if not is_startup_path(path):
            raise PatchFormatError(
                f"{where}: {KEY} entry {path!r} is not start-up code (a *.pth file at the "
                "site-packages root, or sitecustomize / usercustomize)"
            )
    if len(set(value)) != len(value):
        raise PatchFormatError(f"{where}: '{KEY}' lists a path twice")
    return tuple(value)


def _may_touch(diff_text: str) -> bool:
    """A cheap necessary condition, so the diff of an ordinary patch is not parsed here (the
    read-only commands do not parse diffs of applied patches, for start-up time)."""
    for line in diff_text.splitlines():
        if line.startswith(_HEADERS):
            low = line.lower()
            if ".pth" in low or "customize" in low:
                return True
    return False


def files(patch: Patch) -> list[tuple[str, str]]:
    """(path, kind) of every start-up file ``patch`` touches; kind: create, modify, delete."""
    if not _may_touch(patch.diff_text):
        return []
    return [(fd.path, fd.kind) for fd in patch.files if is_startup_path(fd.path)]


def touches(ps: Patchset, patch: Patch) -> list[dict[str, object]]:
    """What ``--json`` shows: each start-up file, its change and whether it is declared."""
    return [
        {"path": path, "change": kind, "declared": path in ps.startup_code}
        for path, kind in files(patch)
    ]


def reason(path: str, kind: str) -> str:
    """Why an undeclared start-up file is refused, and what to do about it."""
    return (
        f"{VERBS[kind]} {path}, start-up code (runs at every interpreter start); "
        f'if intended, declare it in patchset.toml: [patchset] {KEY} = ["{path}"]'
    )


def refusal(patch_id: str, path: str, kind: str) -> str:
    return f"{patch_id}: {reason(path, kind)}"


def undeclared(ps: Patchset, patches: Iterable[Patch]) -> list[str]:
    """One refusal line per start-up file a patch touches that ``ps`` does not declare."""
    return [
        refusal(p.id, path, kind)
        for p in patches
        for path, kind in files(p)
        if path not in ps.startup_code
    ]


def marker(ps: Patchset, patch: Patch) -> str:
    """``start-up code: creates evil.pth [declared]``, or "" for an ordinary patch."""
    shown = [
        f"{VERBS[kind]} {path} [{'declared' if path in ps.startup_code else 'NOT declared'}]"
        for path, kind in files(patch)
    ]
    return f"start-up code: {', '.join(shown)}" if shown else ""
