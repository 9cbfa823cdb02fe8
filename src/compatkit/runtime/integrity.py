"""Is a runtime folder whole, and does a fresh interpreter really serve it?

:func:`damage` compares the folder with its manifest: the table's and the hook's hashes, each
patched source's hash, and the start-up code (the ``sitecustomize.py`` block, or the ``.pth``
and its boot module).
:func:`served` starts the target interpreter the way a user's process starts (the real
``site`` start-up, the folder on ``PYTHONPATH`` unless a ``.pth`` starts it) and asks the
import system for each module of the table: it must come from this folder's hook with the
patched source (a module a patch deletes must not be found). A damaged table, a missing hook
or source, an early import, a version change or another folder's hook all show up there.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
from pathlib import Path

from compatkit import bounded
from compatkit.runtime import startfiles
from compatkit.runtime.folder import Folder

TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

DATA = "_compatkit_runtime"
START_LIMIT = 120  # seconds for the target's start and its finding of the patched modules

# Runs in the target interpreter: find (not execute) each module, as an import would.
PROBE = """\
import importlib.util, json, sys
root, wanted = sys.argv[1], json.loads(sys.argv[2])
found = {}
for name, deleted in wanted:
    try:
        spec = importlib.util.find_spec(name)
        loader = spec and spec.loader
        if deleted:
            found[name] = "it is importable, though a patch deletes it"
        elif getattr(loader, "patched", "").startswith(root + "/"):
            loader.get_data(loader.path)  # the patched source, hash checked
        else:
            found[name] = f"it is imported unpatched ({type(loader).__name__} from {spec.origin})"
    except ModuleNotFoundError as exc:
        if not deleted or exc.name != name:
            found[name] = f"ModuleNotFoundError: {exc}"
    except Exception as exc:
        found[name] = f"{type(exc).__name__}: {exc}"
print(json.dumps(found))
"""


def _sha(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _startup_problem(folder: Folder, manifest: dict[str, Any]) -> str | None:
    pth, hook = manifest.get("pth"), str(manifest["hook"])
    if isinstance(pth, str):
        try:  # the environment's file: a FIFO or a link to /dev/zero is refused, not read
            text = bounded.read(pth, bounded.SMALL, head=True).decode("utf-8")
        except (OSError, UnicodeDecodeError, bounded.Refused):
            return f"{pth} is missing or unreadable: nothing starts the hook"
        if not (hook in text and f"\n{folder.root}\n" in text):
            return f"{pth} does not start the hook in {folder.root}"
        boot = Path(pth).with_name(f"{startfiles.BOOT_MODULE}.py")
        try:
            data: bytes | None = bounded.read(boot, bounded.SMALL)
        except (OSError, bounded.Refused):
            data = None
        if "boot_sha256" in manifest and _sha(data) != manifest["boot_sha256"]:
            return f"{boot} is missing or not the start-up module compatkit wrote"
        return None
    data = folder.read("sitecustomize.py")
    text = "" if data is None else data.decode("utf-8", "replace")
    if startfiles.BEGIN not in text or hook not in text:
        return f"{folder.root}/sitecustomize.py lacks compatkit's block: nothing starts the hook"
    return None


def damage(folder: Folder, manifest: dict[str, Any]) -> list[str]:
    """What of the folder differs from its manifest (empty: whole)."""
    key, hook = str(manifest["key"]), str(manifest["hook"])
    found = []
    if _sha(folder.read(f"{hook}.py")) != manifest.get("hook_sha256"):
        found.append(f"{folder.root}/{hook}.py is missing or not the hook compatkit wrote")
    if _sha(folder.read(f"{DATA}/table.marshal")) != manifest.get("table_sha256"):
        found.append(f"{folder.root}/{DATA}/table.marshal is missing or damaged")
    for f in manifest["files"]:
        if f["patched"] is not None:
            path = f"{DATA}/src/{key}/{f['relpath']}"
            if folder.sha256(path) != f["patched"]:  # streamed: memory flat at any size
                found.append(f"{folder.root}/{path}: not the patched source compatkit wrote")
    startup = _startup_problem(folder, manifest)
    return found + ([startup] if startup else [])


def startup_problem(python: str, paths: Sequence[str]) -> str | None:
    """Why a start of ``python`` with ``site`` would hang or read without end, or None:
    ``site`` opens and reads whole every ``*.pth`` file of the site folders ``paths`` (the
    target's), and a FIFO there waits for a writer for ever, a link to ``/dev/zero`` is read
    until memory runs out. Looked at with ``stat`` only, before the target is started."""
    for base in dict.fromkeys(paths):
        try:
            names = sorted(n for n in os.listdir(base) if n.endswith(".pth"))
        except OSError:  # missing, not a folder: site skips it too
            continue
        for name in names:
            if name.startswith("."):  # site skips hidden .pth files
                continue
            path = os.path.join(base, name)
            try:
                st = os.stat(path)  # followed, as site's open does
            except OSError:
                continue  # site skips a .pth it cannot open
            if stat.S_ISDIR(st.st_mode):
                continue
            if not stat.S_ISREG(st.st_mode):
                why = f"not a regular file ({bounded.kind(st.st_mode)})"
            elif st.st_size > bounded.METADATA:
                why = f"larger than {bounded.METADATA >> 20} MiB ({st.st_size} bytes)"
            else:
                continue
            return f"{path}: {why}; every start of {python} with site would hang on it"
    return None


def served(
    root: Path, manifest: dict[str, Any], environ: dict[str, str], paths: Sequence[str] = ()
) -> list[str]:
    """What a fresh start of the target interpreter does not serve from ``root``. ``paths``:
    the target's site folders, whose ``.pth`` files are looked at first
    (:func:`startup_problem`; the probe's, cached, when not given)."""
    python = str(manifest["python"])
    if not paths:
        from compatkit.env.target import Environment

        paths = Environment.for_python(python).paths
    blocked = startup_problem(python, paths)
    if blocked:
        return [blocked]
    wanted = [[str(f["module"]), f["patched"] is None] for f in manifest["files"]]
    env = {**environ, "PYTHONDONTWRITEBYTECODE": "1"}
    if manifest.get("pth") is None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    cmd = [python, "-c", PROBE, str(root), json.dumps(wanted)]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, env=env, cwd="/", timeout=START_LIMIT
        )
    except subprocess.TimeoutExpired:
        return [
            f"a fresh {python} did not finish in {START_LIMIT} s (a start-up file that waits: "
            "a sitecustomize, a .pth's import line?)"
        ]
    except OSError as exc:
        return [f"cannot start {python} ({exc})"]
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        said = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        return [f"a fresh {cmd[0]} fails: {said[-1] if said else f'exit {proc.returncode}'}"]
    problems: dict[str, str] = json.loads(lines[-1])
    return [f"{name}: {why}" for name, why in problems.items()]
