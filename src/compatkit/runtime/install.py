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
puts DIR on ``sys.path`` and starts the hook; ``00-compatkit-runtime.start`` names the same
entry point for Pythons with PEP 829 (3.15+), which then ignore the ``.pth`` import line.
Every file goes through :func:`compatkit.atomic.write`; ``table.marshal`` is written after the
sources it points to, the activation file last.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import shutil
from pathlib import Path

from compatkit import atomic
from compatkit.errors import CompatkitError, UsageError
from compatkit.runtime.prepare import HOOK_SOURCE, Prepared, sha

TYPE_CHECKING = False  # not typing's: `import typing` moves bench P1 explain 3.95× → 4.24×
if TYPE_CHECKING:
    from typing import Any

DATA = "_compatkit_runtime"  # the same as hook.DATA (the hook is not imported here)
MARKER = "# compatkit runtime hook"
PTH_NAME = "00-compatkit-runtime"


def hook_module() -> str:
    return "_compatkit_hook_" + hashlib.sha256(HOOK_SOURCE.read_bytes()).hexdigest()[:12]


def _table(prep: Prepared) -> dict[str, object]:
    modules = {
        f.module: {
            "origin": f.origin,
            "original": sha(f.original),
            "patched": None if f.patched is None else f"{prep.key}/{f.relpath}",
            "sha": sha(f.patched),
            "package": f.package,
            "label": ", ".join(f.patches),
            "patchsets": sorted({p.partition(":")[0] for p in f.patches}),
        }
        for f in prep.files
    }
    guards = {ps.name: [tuple(g) for g in ps.guards] for ps in prep.patchsets}
    return {"format": 1, "key": prep.key, "modules": modules, "guards": guards}


def _manifest(prep: Prepared, pth: Path | None) -> dict[str, object]:
    return {
        "format": 1,
        "key": prep.key,
        "python": prep.python,
        "hook": hook_module(),
        "pth": None if pth is None else str(pth),
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


def _sitecustomize(hook: str, names: list[str]) -> str:
    return (
        f"{MARKER}: applies {', '.join(names)} at import time.\n"
        "# Written by 'compatkit runtime install' (or exec); remove it with\n"
        "# 'compatkit runtime uninstall --dir THIS_DIR'. Nothing in site-packages is changed.\n"
        f"import os as _os\n\nimport {hook} as _hook\n\n"
        "_hook.start(_os.path.dirname(__file__))\n"
        "_hook.chain_sitecustomize(__file__)\n"
        "del _os, _hook\n"
    )


def _check_dir(root: Path) -> None:
    site = root / "sitecustomize.py"
    if site.exists() and not site.read_text("utf-8", "replace").startswith(MARKER):
        raise UsageError(f"{site} is not compatkit's; choose another --dir")
    if root.exists() and not root.is_dir():
        raise UsageError(f"--dir {root}: not a directory")


def write(root: Path, prep: Prepared, pth_site: Path | None = None) -> Path | None:
    """Write (or update) the runtime directory ``root``; with ``pth_site``, the ``.pth`` form
    in that site-packages. Returns the ``.pth`` written, if any."""
    _check_dir(root)
    data = root / DATA
    for f in prep.files:
        if f.patched is not None:
            target = data / "src" / prep.key / f.relpath
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic.write(target, f.patched)
    hook = hook_module()
    atomic.write(root / f"{hook}.py", HOOK_SOURCE.read_bytes())
    atomic.write(data / "table.marshal", marshal.dumps(_table(prep), 4))
    pth = None if pth_site is None else pth_site / f"{PTH_NAME}.pth"
    manifest = json.dumps(_manifest(prep, pth), indent=1) + "\n"
    atomic.write(data / "manifest.json", manifest.encode())
    names = [ps.name for ps in prep.patchsets]
    if pth is None:
        atomic.write_text(root / "sitecustomize.py", _sitecustomize(hook, names))
    else:
        _write_pth(pth, root, hook, names)
        own = root / "sitecustomize.py"  # an earlier PYTHONPATH-form install of this DIR
        if own.is_file() and own.read_text("utf-8", "replace").startswith(MARKER):
            own.unlink()
    _drop_stale(data, prep.key, hook, root)
    return pth


def _write_pth(pth: Path, root: Path, hook: str, names: list[str]) -> None:
    # compatkit's own start-up code (README, "Runtime mode"): one path line, one import line
    text = (
        f"{MARKER}: applies {', '.join(names)} at import time; remove it with "
        f"'compatkit runtime uninstall --dir {root}'\n"
        f"{root}\nimport {hook}; {hook}.start({str(root)!r})\n"
    )
    try:
        atomic.write_text(pth, text)
        atomic.write_text(pth.with_suffix(".start"), f"{MARKER}\n{hook}:start\n")
    except OSError as exc:
        raise CompatkitError(
            f"cannot write {pth} ({exc.strerror}); without --pth, put --dir on PYTHONPATH"
        ) from None


def _drop_stale(data: Path, key: str, hook: str, root: Path) -> None:
    """An update leaves no sources, bytecode or hook of the previous contents behind."""
    for sub in ("src", "pycache"):
        for old in (data / sub).glob("*") if (data / sub).is_dir() else []:
            if old.name != key:
                shutil.rmtree(old, ignore_errors=True)
    for old in root.glob("_compatkit_hook_*.py"):
        if old.stem != hook:
            old.unlink(missing_ok=True)


def read_manifest(root: Path) -> dict[str, Any]:
    path = root / DATA / "manifest.json"
    try:
        doc = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise UsageError(f"{root} holds no compatkit runtime (no {DATA}/manifest.json)") from None
    except (OSError, ValueError) as exc:
        raise CompatkitError(f"{path}: unreadable ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != 1:
        raise CompatkitError(f"{path}: not a compatkit runtime manifest (format 1)")
    return doc


def remove(root: Path) -> list[str]:
    """Delete the runtime directory's files (and its ``.pth``/``.start``); what was removed."""
    manifest = read_manifest(root)
    removed: list[str] = []
    pth = manifest.get("pth")
    candidates = [root / "sitecustomize.py"]
    if isinstance(pth, str):
        candidates += [Path(pth), Path(pth).with_suffix(".start")]
    for path in candidates:
        if path.is_file() and path.read_text("utf-8", "replace").startswith(MARKER):
            path.unlink()
            removed.append(str(path))
    for path in [*root.glob("_compatkit_hook_*.py"), *root.glob("__pycache__/_compatkit_hook_*")]:
        path.unlink()
        removed.append(str(path))
    for path in root.glob("__pycache__/sitecustomize.*.pyc"):
        path.unlink()
    shutil.rmtree(root / DATA)
    removed.append(str(root / DATA))
    return removed
