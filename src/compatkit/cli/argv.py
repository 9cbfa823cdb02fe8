"""The command lines users type most, read without argparse (start-up time: benchmark P1).

Importing argparse costs ≈ 4 ms and pulls in ``gettext`` and ``locale`` (≈ 3 ms more), and
building the parser another 1-2 ms: a fifth of a read-only command. :func:`parse` reads the
plain forms of ``status``, ``verify``, ``explain``, ``list``, ``apply``, ``revert`` and
``recover`` (long options spelled out, ``--opt VALUE`` or ``--opt=VALUE``, positionals
together) and gives the same namespace argparse would (tests/test_argv.py checks that on
generated command lines). Anything else, such as ``-h``, an abbreviated or unknown option, a
value that starts with ``-``, ``--`` or a usage error, returns ``None``: argparse reads it then,
with its help and its error messages.

>>> ns = parse(["--json", "explain", "patch-6"])
>>> ns.command, ns.query, ns.json, ns.patchset_dir
('explain', 'patch-6', True, [])
>>> parse(["explain", "--hel", "patch-6"]) is None  # abbreviations: argparse's business
True
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

# option -> (attribute, kind): "flag" (store_true), "value", "path", "append", "append-path"
GLOBALS = {
    "--python": ("python", "value"),
    "--patchset-dir": ("patchset_dir", "append-path"),
    "--config": ("config", "path"),
    "--json": ("json", "flag"),
}
GLOBAL_DEFAULTS: dict[str, object] = {
    "python": None,
    "patchset_dir": [],
    "config": None,
    "json": False,
}
_RUNTIME = {"--runtime": ("runtime", "path")}
# command -> (its positional's attribute, (least, most) positionals (-1: any), the
# positional's default when it takes at most one, its own options)
COMMANDS: dict[str, tuple[str | None, tuple[int, int], object, dict[str, tuple[str, str]]]] = {
    "apply": (
        "patchset",
        (0, 1),
        None,
        {
            "--exclude": ("exclude", "append"),
            "--force": ("force", "flag"),
            "--dry-run": ("dry_run", "flag"),
        },
    ),
    "revert": ("patchset", (1, 1), None, {"--force": ("force", "flag")}),
    "verify": (
        "patchset",
        (0, -1),
        [],
        {
            "--pristine": ("pristine", "value"),
            "--all": ("all", "flag"),
            "--allow-empty": ("allow_empty", "flag"),
            **_RUNTIME,
        },
    ),
    "status": ("patchset", (0, -1), [], dict(_RUNTIME)),
    "list": (None, (0, 0), None, {}),
    "explain": ("query", (1, 1), None, {}),
    "recover": ("distribution", (0, -1), [], {"--discard": ("discard", "flag")}),
}
_DEFAULT: dict[str, object] = {
    "flag": False,
    "value": None,
    "path": None,
    "append": [],
    "append-path": [],
}


def parse(argv: list[str]) -> SimpleNamespace | None:
    """argparse's namespace for a plain command line, or None: let argparse read it."""
    before: dict[str, object] = {}
    at = _options(argv, 0, GLOBALS, before)
    if at is None or at >= len(argv) or argv[at] not in COMMANDS:
        return None
    command = argv[at]
    positional, (least, most), default, own = COMMANDS[command]
    after: dict[str, object] = {}
    values: list[str] = []
    i = at + 1
    while i < len(argv):
        i_next = _options(argv, i, {**GLOBALS, **own}, after)
        if i_next is None:
            return None
        if i_next < len(argv):  # a run of positionals: argparse takes them in one go
            if values:
                return None  # positionals split by an option: argparse may refuse them
            while i_next < len(argv) and not argv[i_next].startswith("-"):
                values.append(argv[i_next])
                i_next += 1
        i = i_next
    if len(values) < least or (most >= 0 and len(values) > most):
        return None
    if "patchset_dir" in before and "patchset_dir" in after:
        return None  # argparse's subparser replaces the list given before the command
    ns = SimpleNamespace(**{k: _copy(v) for k, v in GLOBAL_DEFAULTS.items()})
    for attr, kind in own.values():
        setattr(ns, attr, _copy(_DEFAULT[kind]))
    ns.command = command
    if positional is not None:
        setattr(ns, positional, values if most != 1 else (values[0] if values else default))
    for found in (before, after):
        for attr, value in found.items():
            setattr(ns, attr, value)
    return ns


def _options(
    argv: list[str],
    i: int,
    known: dict[str, tuple[str, str]],
    found: dict[str, object],
) -> int | None:
    """Read options from ``argv[i]`` on into ``found``; the index of the first positional (or
    the end), or None for anything argparse should read."""
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("-") or arg == "-":
            if arg == "-":
                return None
            return i
        name, eq, inline = arg.partition("=")
        if name not in known:
            return None
        attr, kind = known[name]
        if kind == "flag":
            if eq:
                return None
            found[attr] = True
            i += 1
            continue
        if eq:
            value = inline
            i += 1
        else:
            if i + 1 >= len(argv) or argv[i + 1].startswith("-"):
                return None
            value = argv[i + 1]
            i += 2
        if kind == "path":
            found[attr] = Path(value)
        elif kind == "value":
            found[attr] = value
        else:
            item: object = Path(value) if kind == "append-path" else value
            found.setdefault(attr, [])
            found[attr].append(item)  # type: ignore[attr-defined]
    return i


def _copy(value: object) -> object:
    return list(value) if isinstance(value, list) else value
