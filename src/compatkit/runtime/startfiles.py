"""The start-up code of a runtime folder: a marked block in ``DIR/sitecustomize.py``, or the
``.pth`` / ``.start`` pair in site-packages.

The block is compatkit's only part of ``sitecustomize.py``: install puts it first and keeps
every other line; uninstall removes it and nothing else (the file too, if nothing else is
left). A damaged block (a begin marker without its end, two blocks) or an import of the hook
outside the block is refused, never guessed at, so no uninstall leaves a dangling import.

The block runs a small boot function (:data:`BOOT`; the ``--pth`` form has the same code as
``_compatkit_boot.py`` beside its ``.pth``, whose import line loads it by path from its pyc,
not compiled again at every start): it checks the folder (owner, mode, no links) and the hook
file before importing the hook, and then starts it with the names of the modules the table
must patch. If any of that fails, the interpreter stops
with one line (docs/delivery.md, "Runtime mode"): with no working hook, those modules would be
imported unpatched.

>>> text = with_block("import mine\\n", block("/rt", "_compatkit_hook_x", ["m"], ["ps"], True))
>>> without_block(text)
'import mine\\n'
"""

from __future__ import annotations

from compatkit.errors import CompatkitError

BEGIN = "# >>> compatkit runtime >>>"
END = "# <<< compatkit runtime <<<"
HOOK_PREFIX = "_compatkit_hook_"
LEGACY = "# compatkit runtime hook"  # the first line of a whole-file sitecustomize.py (before)
PTH_NAME = "00-compatkit-runtime"  # the --pth form: PTH_NAME.pth and .start in site-packages,
BOOT_MODULE = "_compatkit_boot"  # and BOOT as a module there (the .pth line loads its pyc)

# Whether this process is compatkit's own command line (its console script, or ``python -m
# compatkit``), as ``sys`` tells it while ``site`` runs: ``sys.argv[0]`` is the script, or
# ``-m`` with the module's name in ``sys.orig_argv`` just before the arguments. A start that
# would be refused lets compatkit through, without the hook, so that the way out the refusal
# names ('compatkit runtime uninstall --dir DIR') works from that very interpreter.
OWN = (
    "(sys.orig_argv[-len(sys.argv)] if sys.argv[0] == '-m' else sys.argv[0])"
    ".rsplit('/', 1)[-1] == 'compatkit'"
)


WRITABLE = " is writable by others"  # the end of the reason a mode bit gives (BOOT, the hook)


def _refusal(why: str, modules: str, root: str, exit_: str) -> str:
    """Code that writes the one line of a refused start, then ends the process (``exit_``)
    unless it is compatkit's own (:data:`OWN`), which goes on without the hook, saying so
    once (site runs a venv's ``.pth`` files twice on some Pythons). The line names what
    works: for a folder writable by others, the ``chmod`` (install refuses such a folder)."""
    return (
        "try:\n"
        f"    own = {OWN}\n"
        "except Exception:\n"
        "    own = False\n"
        "told = sys.__dict__.setdefault('_compatkit_told', set())\n"
        f"if own and {root} not in told:\n"
        f"    told.add({root})\n"
        f"    sys.stderr.write(f'compatkit runtime: compatkit starts without the hook in "
        f"{{{root}}} ({{{why}}}); {{{modules}}} are not patched in this process\\n')\n"
        "elif not own:\n"
        f"    fix = f\"run 'compatkit runtime install' again, or 'compatkit runtime uninstall "
        f"--dir {{{root}}}'\"\n"
        f"    if {why}.endswith({WRITABLE!r}):\n"
        f"        path = {why}[: -len({WRITABLE!r})]\n"
        "        fix = f\"make it writable by you only ('chmod go-w {path}'), then run "
        "'compatkit runtime install' again\"\n"
        f"        if (path + '/').startswith({root} + '/'):\n"
        f"            fix += f\", or remove it: 'compatkit runtime uninstall --dir {{{root}}}'\"\n"
        f"    sys.stderr.write(f'compatkit runtime: refusing to start: {{{why}}}, and "
        f"{{{modules}}} must not be imported unpatched; {{fix}}\\n')\n"
        "    sys.stderr.flush()\n"
        f"    {exit_}\n"
    )


# Runs at every start of the target interpreter: standard library only, nothing heavy.
BOOT = (
    """\
def _compatkit_boot(root, hook, modules, chain):
    import os, stat, sys
    euid = os.geteuid()
    def bad(path, above, missing=False):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            if missing:
                return None
            raise
        if stat.S_ISLNK(st.st_mode):
            return path + " is a symbolic link"
        if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode) and not above):
            return path + " is not a regular file or folder"
        if st.st_uid not in (0, euid):
            return f"{path} is owned by another user (uid {st.st_uid})"
        if st.st_mode & 0o022 and not (above and st.st_mode & stat.S_ISVTX):
            return f"{path} is writable by others"
        return None
    why = None
    file = f"{root}/{hook}.py"
    try:
        from _frozen_importlib_external import SourceFileLoader, cache_from_source
        parts = root.split("/")
        paths = ["/".join(parts[:i]) or "/" for i in range(1, len(parts))]
        found = [bad(p, True) for p in paths] + [bad(root, False), bad(file, False)]
        pyc = sys.implementation.cache_tag and cache_from_source(file)  # the one it loads
        found += [bad(f"{root}/__pycache__", False, True), pyc and bad(pyc, False, True)]
        why = next(filter(None, found), None)
        hooked = sys.modules.get(hook)  # from this file already: site ran the .pth twice
        if why is None and getattr(hooked, "__file__", None) != file:
            # the file just checked, by its path: never a module found by name on sys.path
            from _frozen_importlib import module_from_spec
            from _frozen_importlib_external import spec_from_file_location
            spec = spec_from_file_location(hook, file, loader=SourceFileLoader(hook, file))
            sys.modules[hook] = hooked = module_from_spec(spec)
            spec.loader.exec_module(hooked)
    except Exception as exc:
        why = f"the runtime hook {file} cannot be loaded ({type(exc).__name__}: {exc})"
    if why:
        sys.modules.pop(hook, None)
        modules = ", ".join(modules)
"""
    + "".join(
        "        " + line + "\n"
        for line in _refusal("why", "modules", "root", "os._exit(1)").splitlines()
    )
    + """\
        return
    hooked.start(root, modules, True)  # root and the folders above it: checked just now
    if chain:
        hooked.chain_sitecustomize(os.path.join(root, "sitecustomize.py"))
"""
)


def _call(root: str, hook: str, modules: list[str], chain: bool) -> str:
    return f"_compatkit_boot({root!r}, {hook!r}, {tuple(modules)!r}, {chain})"


def block(root: str, hook: str, modules: list[str], names: list[str], chain: bool) -> str:
    """compatkit's block of ``sitecustomize.py`` (``chain``: run the one it shadows)."""
    return (
        f"{BEGIN}\n"
        f"# applies {', '.join(names)} at import time. Written by 'compatkit runtime install'\n"
        f"# (or exec); 'compatkit runtime uninstall --dir {root}' removes this block, and\n"
        "# only it. Nothing in site-packages is changed.\n"
        f"{BOOT}{_call(root, hook, modules, chain)}\n"
        "del _compatkit_boot\n"
        f"{END}\n"
    )


def boot_module() -> str:
    """The ``--pth`` form's start-up module, :data:`BOOT_MODULE` beside the ``.pth`` file."""
    return (
        f"{LEGACY}: the start-up checks of the folder {PTH_NAME}.pth names. Written by\n"
        "# 'compatkit runtime install --pth', removed by 'compatkit runtime uninstall'.\n"
        f"{BOOT}"
    )


def pth_lines(root: str, hook: str, modules: list[str], names: list[str], site: str) -> str:
    """The ``.pth`` file: a comment, the folder (a path line), one import line. That line loads
    :func:`boot_module` from ``site`` (its pyc: the checks are not compiled at every start),
    found there only; if it cannot, the start stops with one line."""
    why = f"{site}/{BOOT_MODULE}.py cannot be loaded ("
    fail = (  # compiled only when the boot module cannot be loaded
        "import os\n"
        f"why = {why!r} + f'{{type(exc).__name__}}: {{exc}})'\n"
        f"modules, root = {', '.join(modules)!r}, {root!r}\n"
        + _refusal("why", "modules", "root", "os._exit(1)")
    )
    code = (
        "try:\n"
        "    from _frozen_importlib_external import PathFinder\n"
        f"    spec = PathFinder.find_spec({BOOT_MODULE!r}, [{site!r}])\n"
        "    if spec is None:\n"
        "        raise ImportError('no such file')\n"
        f"    boot = type(sys)({BOOT_MODULE!r})\n"
        "    spec.loader.exec_module(boot)\n"
        "except Exception as exc:\n"
        f"    boot = exec({fail!r})\n"
        "if boot:\n"
        f"    boot.{_call(root, hook, modules, False)}\n"
    )
    return (
        f"{LEGACY}: applies {', '.join(names)} at import time; remove it with "
        f"'compatkit runtime uninstall --dir {root}'\n"
        f"{root}\nimport sys; exec({code!r})\n"
    )


def _split(text: str, where: str) -> tuple[str, str, str] | None:
    """(before, block, after) of ``text``, or None without a block; a damaged one is refused."""
    lines = text.splitlines(keepends=True)
    begins = [i for i, ln in enumerate(lines) if ln.rstrip("\r\n") == BEGIN]
    ends = [i for i, ln in enumerate(lines) if ln.rstrip("\r\n") == END]
    if not begins and not ends:
        return None
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise CompatkitError(
            f"{where}: compatkit's block is damaged ({len(begins)} begin and {len(ends)} end "
            f"markers); remove the lines between '{BEGIN}' and '{END}' yourself"
        )
    b, e = begins[0], ends[0] + 1
    return "".join(lines[:b]), "".join(lines[b:e]), "".join(lines[e:])


def without_block(text: str, where: str = "sitecustomize.py") -> str:
    """``text`` less compatkit's block; refused if the rest still imports the hook."""
    if text.startswith(LEGACY):  # written whole by compatkit before the block existed
        return ""
    parts = _split(text, where)
    rest = text if parts is None else parts[0] + parts[2]
    if HOOK_PREFIX in rest:
        raise CompatkitError(
            f"{where}: a line outside compatkit's block imports the runtime hook "
            f"({HOOK_PREFIX}...); remove it yourself, then run this again"
        )
    return rest


def with_block(text: str | None, new_block: str, where: str = "sitecustomize.py") -> str:
    """``text`` (None: no file) with ``new_block`` first, every other line kept; last if the
    rest has a ``from __future__`` import, which must stay first (the hook then starts after
    the user's lines: an import of a patched module there refuses the start, loudly)."""
    rest = "" if text is None else without_block(text, where)
    if "from __future__" in rest:
        return rest + ("" if rest.endswith("\n") else "\n") + new_block
    return new_block + rest
