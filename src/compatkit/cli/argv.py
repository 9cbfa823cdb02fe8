"""The command lines users type most, read without argparse (start-up time: benchmark P1).

Importing argparse costs ≈ 4 ms and pulls in ``gettext`` and ``locale`` (≈ 3 ms more), and
building the parser another 1-2 ms: a fifth of a read-only command. :func:`parse` reads the
plain forms of the ``fast`` commands of compatkit.cli.table, the table argparse is built from
too (``status``, ``verify``, ``explain``, ``list``, ``apply``, ``revert``, ``recover``: long
options spelled out, ``--opt VALUE`` or ``--opt=VALUE``, positionals together), and gives the
same namespace argparse would (tests/test_argv.py checks that on command lines generated from
the table). Anything else, such as ``-h``, an abbreviated or unknown option, a value that
starts with ``-``, ``--`` or a usage error, returns ``None``: argparse reads it then, with its
help and its error messages.

>>> ns = parse(["--json", "explain", "patch-6"])
>>> ns.command, ns.query, ns.json, ns.patchset_dir
('explain', 'patch-6', True, [])
>>> parse(["explain", "--hel", "patch-6"]) is None  # abbreviations: argparse's business
True
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from compatkit.cli import table

# (least, most) positional values for argparse's nargs (-1: any)
_COUNTS = {None: (1, 1), "?": (0, 1), "*": (0, -1), "+": (1, -1)}


def parse(argv: list[str]) -> SimpleNamespace | None:
    """argparse's namespace for a plain command line, or None: let argparse read it."""
    known = _flags(table.GLOBALS)
    before: dict[str, object] = {}
    at = _options(argv, 0, known, before)
    if at is None or at >= len(argv):
        return None
    name = argv[at]
    command = table.COMMANDS.get(name)
    if command is None or not command.get("fast"):
        return None
    own = tuple(o for o in command["options"] if o["kind"] != "positional")
    positionals = [o for o in command["options"] if o["kind"] == "positional"]
    after: dict[str, object] = {}
    values = _read(argv, at + 1, {**known, **_flags(own)}, after)
    if values is None or len(positionals) > 1:
        return None
    if any(
        o["kind"] == "repeat" and table.dest(o) in before and table.dest(o) in after
        for o in table.GLOBALS
    ):
        return None  # argparse's subparser replaces the list given before the command
    if any(o.get("required") and table.dest(o) not in after for o in own):
        return None
    ns = SimpleNamespace(**{table.dest(o): _default(o) for o in (*table.GLOBALS, *own)})
    ns.command = name
    if positionals and not _place(ns, positionals[0], values):
        return None
    if not positionals and values:
        return None
    for found in (before, after):
        for attr, value in found.items():
            setattr(ns, attr, value)
    return ns


def _flags(options: tuple[table.Option, ...]) -> dict[str, table.Option]:
    return {flag: o for o in options for flag in o["flags"]}


def _read(
    argv: list[str], i: int, known: dict[str, table.Option], found: dict[str, object]
) -> list[str] | None:
    """The command's options into ``found``, and its positionals: one run of them, or None
    (argparse's business)."""
    values: list[str] = []
    while i < len(argv):
        i_next = _options(argv, i, known, found)
        if i_next is None:
            return None
        if i_next < len(argv):  # a run of positionals: argparse takes them in one go
            if values:
                return None  # positionals split by an option: argparse may refuse them
            while i_next < len(argv) and not argv[i_next].startswith("-"):
                values.append(argv[i_next])
                i_next += 1
        i = i_next
    return values


def _place(ns: SimpleNamespace, positional: table.Option, values: list[str]) -> bool:
    """Set the positional as argparse would; False when argparse should read the line."""
    least, most = _COUNTS[positional.get("nargs")]
    if len(values) < least or (most >= 0 and len(values) > most):
        return False
    choices = positional.get("choices")
    if choices and any(v not in choices for v in values):
        return False
    if most == 1:
        setattr(ns, table.dest(positional), values[0] if values else positional.get("default"))
    else:
        setattr(ns, table.dest(positional), values)
    return True


def _options(
    argv: list[str], i: int, known: dict[str, table.Option], found: dict[str, object]
) -> int | None:
    """Read options from ``argv[i]`` on into ``found``; the index of the first positional (or
    the end), or None for anything argparse should read."""
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("-") or arg == "-":
            return None if arg == "-" else i
        name, eq, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        option = known.get(name)
        kind = None if option is None else option["kind"]
        if option is None or kind not in ("flag", "value", "repeat"):
            return None
        if kind == "flag":
            if eq:
                return None
            found[table.dest(option)] = True
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
        item = _value(option, value)
        if item is None:
            return None
        if kind == "repeat":
            found.setdefault(table.dest(option), [])
            found[table.dest(option)].append(item)  # type: ignore[attr-defined]
        else:
            found[table.dest(option)] = item
    return i


def _value(option: table.Option, text: str) -> object:
    """The value as argparse's type would give it; None: argparse should check it."""
    choices, kind = option.get("choices"), option.get("type")
    if choices and text not in choices:
        return None
    if kind is None:
        return text
    return Path(text) if kind == "path" else None


def _default(option: table.Option) -> object:
    """The option's value when not given, as argparse gives it."""
    default = option.get("default")
    if option["kind"] == "repeat":
        return list(default) if isinstance(default, list) else []
    if option["kind"] == "flag":
        return bool(default)
    if option.get("type") == "path" and isinstance(default, str):
        return Path(default)
    return default
