"""The command line, with argparse: every command and option, help, usage errors.

Every command and option comes from compatkit.cli.table. A command line that names a known
command gets only that command's subparser (the others are names argparse knows, for its
"invalid choice" list); help, a usage error before the command and shell completion get the
full parser.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from compatkit import __version__
from compatkit.cli import table
from compatkit.errors import EXIT_USAGE

TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any

DESCRIPTION = (
    "Versioned, explained, tested patches for the Python packages you have installed: apply "
    "them all or nothing, verify them, revert them byte for byte, and see why each exists."
)


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter, set up when it first formats text: argparse makes one at every
    ``add_argument`` only to check the metavar against ``nargs`` (``_format_args``, which
    reads no width), and a formatter's set-up asks shutil for the terminal's width (shutil
    imports zlib, bz2 and lzma), which a command that prints no help never needs."""

    def __init__(self, prog: str, **kwargs: Any) -> None:
        self._pending = (prog, kwargs)

    def __getattr__(self, name: str) -> Any:
        pending = self.__dict__.pop("_pending", None)
        if pending is None:
            raise AttributeError(name)
        super().__init__(pending[0], **pending[1])  # every attribute argparse's formatter has
        return getattr(self, name)


class _Parser(argparse.ArgumentParser):
    command: str | None = None  # the top parser: the command named on the line, if known

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        # no prefixes: `verify --all` is not `verify --allow-empty`, and a flag added later
        # never changes what an abbreviation in someone's script meant
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.split()[1] if " " in self.prog else None
        if command is None and message.startswith("unrecognized arguments"):
            command = self.command  # the top parser finds a subcommand's unknown options
        where = f"compatkit {command}" if command else "compatkit"
        text = f"{_friendlier(message)} (see '{where} --help')"
        sys.stderr.write(f"compatkit: error: {text}\n")
        raise UsageExit(text, command)


class UsageExit(SystemExit):
    """A usage error argparse found, already printed on stderr (exit code 2)."""

    def __init__(self, message: str, command: str | None) -> None:
        super().__init__(EXIT_USAGE)
        self.message, self.command = message, command


def _friendlier(message: str) -> str:
    """argparse's "invalid choice" line without hidden commands, and with a "did you mean"."""
    import re

    match = re.match(r"argument (\S+): invalid choice: '([^']*)' \(choose from (.*)\)$", message)
    if not match:
        return message
    what, given, listed = match.groups()
    choices = [c.strip("' ") for c in listed.split(",") if not c.strip("' ").startswith("_")]
    from difflib import get_close_matches

    close = get_close_matches(given, choices, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    noun = "command" if what == "COMMAND" else f"choice for {what}"
    return f"unknown {noun} {given!r}{hint}; choose from {', '.join(choices)}"


class _Skipped:
    """The stand-in for a subcommand that is not being run (never parsed with)."""


_SKIPPED = _Skipped()


def _command_in(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv`` (None: unknown, so build every subparser)."""
    # an option before the command that takes a value, or an abbreviation of one (argparse's)
    takes_value = [f for o in table.GLOBALS if o["kind"] != "flag" for f in o["flags"]]
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg.startswith("--") and "=" not in arg and len(arg) > 2:
            skip = any(flag.startswith(arg) for flag in takes_value)
        elif not arg.startswith("-"):
            return arg if arg in table.COMMANDS else None
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser from compatkit.cli.table; with ``only``, every other subcommand is a
    name and a help line."""
    parser = _Parser(prog="compatkit", description=DESCRIPTION)
    for option in (*table.TOP, *table.GLOBALS):
        _add_option(parser, option, globally=False)
    # prog: what argparse formats from the usage of the options before it (none positional)
    cmds = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=_Parser, prog=parser.prog
    )
    for name, command in table.COMMANDS.items():
        if only is not None and name != only:
            # a name argparse knows (for "invalid choice" and its list), but no parser
            cmds._name_parser_map[name] = _SKIPPED  # type: ignore[assignment]
            continue
        _add_command(cmds, name, command)
        parser.command = only  # known: its unrecognized options point at its own --help
    return parser


def _add_command(
    cmds: argparse._SubParsersAction[_Parser], name: str, command: table.Command
) -> None:
    if command.get("hidden"):
        sub = cmds.add_parser(name)
    else:
        sub = cmds.add_parser(name, help=command["help"], description=command["help"])
    if "usage" in command:
        sub.usage = command["usage"]
    for option in table.GLOBALS:
        _add_option(sub, option, globally=True)
    for option in command["options"]:
        _add_option(sub, option)


def _add_option(
    parser: argparse.ArgumentParser, option: table.Option, globally: bool = False
) -> None:
    """One argument as the table states it; ``globally``: a global option after the command
    name, set only when given (it keeps the value given before the name otherwise)."""
    kind, flags = option["kind"], option["flags"]
    if kind == "version":
        parser.add_argument(*flags, action="version", version=f"compatkit {__version__}")
        return
    kwargs: dict[str, Any] = {"help": option.get("help")}
    if kind in _ACTIONS:
        kwargs["action"] = _ACTIONS[kind]
    for name in ("metavar", "nargs", "const", "required"):
        if name in option:
            kwargs[name] = option[name]
    if "type" in option:
        kwargs["type"] = _TYPES[option["type"]]
    if "choices" in option:
        kwargs["choices"] = list(option["choices"])
    default = argparse.SUPPRESS if globally else _default(option)
    if default is not None:
        kwargs["default"] = default
    if kind == "positional":
        parser.add_argument(table.dest(option), **kwargs)
    else:
        parser.add_argument(*flags, dest=table.dest(option), **kwargs)


def _default(option: table.Option) -> object:
    """The option's default as argparse wants it: a fresh list, a path as a Path."""
    default = option.get("default")
    if option["kind"] == "repeat":
        return list(default) if isinstance(default, list) else []
    if option.get("type") == "path" and isinstance(default, str):
        return Path(default)
    return default


def _seconds(text: str) -> float:
    """A finite, positive number of seconds (``nan``, ``inf``, ``0`` and ``-5`` are not)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds above 0: {text!r}")
    return value


_ACTIONS = {"flag": "store_true", "repeat": "append"}
_TYPES: dict[str, Callable[[str], object]] = {"path": Path, "seconds": _seconds}


def _split_command(argv: list[str], name: str | None) -> tuple[list[str], list[str]]:
    """``exec``'s own arguments, and the COMMAND after its first ``--``."""
    if name != "exec" or "--" not in argv:
        return argv, []
    at = argv.index("--")
    return argv[:at], argv[at + 1 :]


def parse(argv: list[str]) -> argparse.Namespace | None:
    """The namespace for ``argv`` (exits 2 on a usage error, 0 after --help or --version);
    None when no command is named (the help has been printed)."""
    name = _command_in(argv)
    argv, command_line = _split_command(argv, name)
    parser = build_parser(name)
    args = parser.parse_args(argv)
    args.command_line = command_line
    if args.command is None:
        if args.json:  # a script asked for JSON: the help text is not JSON
            parser.error("no command given")
        parser.print_help()
        return None
    return args
