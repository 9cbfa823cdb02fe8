"""The command line, with argparse: help, usage errors, and the parser of the commands named.

Each command adds its own arguments (``add_arguments(parser)`` in its module of
compatkit.cli.commands; compatkit.cli.main maps the names to the modules). A command line that
names a known command imports that command's module only and gets its subparser only; help
and a usage error before the command get every command's name and summary, none of their
arguments; shell completion and the docs' reference get the full parser
(compatkit.cli.main.build_parser).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Collection, Mapping, Sequence
from importlib import import_module

from compatkit import __version__
from compatkit.cli.options import add_globals
from compatkit.errors import EXIT_USAGE

TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any

# each command: its module in compatkit.cli.commands, and its summary (None: hidden)
Commands = Mapping[str, tuple[str, "str | None"]]

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
    verb: str | None = None  # and its sub-verb (runtime's, matrix's, fleet's), once read
    names: Sequence[str] = ()  # every command, where the parser was built with one only

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        # no prefixes: `verify --all` is not `verify --allow-empty`, and a flag added later
        # never changes what an abbreviation in someone's script meant
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.split()[1] if " " in self.prog else None
        where = self.prog
        if command is None and message.startswith("unrecognized arguments"):
            command = self.command  # the top parser finds a subcommand's unknown options
            named = " ".join(n for n in (command, self.verb) if n)
            where = f"compatkit {named}" if named else where
        text = f"{_friendlier(message, self.names)} (see '{where} --help')"
        sys.stderr.write(f"compatkit: error: {text}\n")
        raise UsageExit(text, command)


class UsageExit(SystemExit):
    """A usage error argparse found, already printed on stderr (exit code 2)."""

    def __init__(self, message: str, command: str | None) -> None:
        super().__init__(EXIT_USAGE)
        self.message, self.command = message, command


def _friendlier(message: str, names: Sequence[str] = ()) -> str:
    """argparse's "invalid choice" line without hidden commands, and with a "did you mean";
    ``names``: the commands to list (argparse knows only those it was given)."""
    import re

    match = re.match(r"argument (\S+): invalid choice: '([^']*)' \(choose from (.*)\)$", message)
    if not match:
        return message
    what, given, listed = match.groups()
    if what != "COMMAND" or not names:
        names = [c.strip("' ") for c in listed.split(",")]
    choices = [c for c in names if not c.startswith("_")]
    from difflib import get_close_matches

    close = get_close_matches(given, choices, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    noun = "command" if what == "COMMAND" else f"choice for {what}"
    return f"unknown {noun} {given!r}{hint}; choose from {', '.join(choices)}"


def _top() -> tuple[_Parser, list[str]]:
    """The parser of ``compatkit`` itself, and its options that take a value."""
    parser = _Parser(prog="compatkit", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"compatkit {__version__}")
    actions = add_globals(parser, after_command=False)
    return parser, [f for a in actions if a.nargs != 0 for f in a.option_strings]


def build(commands: Commands, filled: Collection[str], top: _Parser | None = None) -> _Parser:
    """The parser of ``commands`` (on ``top``, else a new one): each a name and a summary,
    and for those in ``filled`` its arguments too (its module's ``add_arguments``)."""
    parser = top or _top()[0]
    # prog: what argparse formats from the usage of the options before it (none positional)
    cmds = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=_Parser, prog=parser.prog
    )
    for name, (module, summary) in commands.items():
        if summary is None:  # hidden: not in the help's list
            sub = cmds.add_parser(name)
        else:
            sub = cmds.add_parser(name, help=summary, description=summary)
        add_globals(sub, after_command=True)
        if name in filled:
            import_module(f"compatkit.cli.commands.{module}").add_arguments(sub)
    return parser


def _command_in(argv: Sequence[str], commands: Commands, takes_value: list[str]) -> str | None:
    """The command named in ``argv`` (None: unknown, or none); ``takes_value``: the options
    before the command that take a value (an abbreviation of one skips a value too)."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg.startswith("--") and "=" not in arg and len(arg) > 2:
            skip = any(flag.startswith(arg) for flag in takes_value)
        elif not arg.startswith("-"):
            return arg if arg in commands else None
    return None


def _split_command(argv: list[str], name: str | None) -> tuple[list[str], list[str]]:
    """``exec``'s own arguments, and the COMMAND after its first ``--``."""
    if name != "exec" or "--" not in argv:
        return argv, []
    at = argv.index("--")
    return argv[:at], argv[at + 1 :]


def parse(argv: list[str], commands: Commands) -> argparse.Namespace | None:
    """The namespace for ``argv`` (exits 2 on a usage error, 0 after --help or --version);
    None when no command is named (the help has been printed)."""
    top, takes_value = _top()
    name = _command_in(argv, commands, takes_value)
    argv, command_line = _split_command(argv, name)
    parser = build({name: commands[name]} if name else commands, {name} if name else (), top)
    parser.command, parser.names = name, list(commands)  # named: its own --help, every name
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # as parse_args, but the help it points at is the sub-verb's, if any
        parser.verb = getattr(args, "action", None)
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    args.command_line = command_line
    if args.command is None:
        if args.json:  # a script asked for JSON: the help text is not JSON
            parser.error("no command given")
        parser.print_help()
        return None
    return args
