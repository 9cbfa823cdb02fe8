"""The full command line, with argparse: help, every command and option, usage errors.

The plain forms of the common commands never get here (compatkit.cli.argv reads them without
argparse: start-up time, P1); tests/test_argv.py checks the two agree.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from compatkit import __version__
from compatkit.errors import EXIT_USAGE

TYPE_CHECKING = False  # not typing's: `import typing` moves bench P1 explain 3.95× → 4.24×
if TYPE_CHECKING:
    from typing import Any

DESCRIPTION = (
    "Versioned, explained, tested patches for the Python packages you have installed: apply "
    "them all or nothing, verify them, revert them byte for byte, and see why each exists."
)


def _columns() -> int:
    """The terminal width as shutil.get_terminal_size() gives it, without importing shutil."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Formatter(argparse.HelpFormatter):
    """argparse builds a formatter for every add_argument() to check it, and each one imports
    shutil for the terminal width (≈ 3 ms of every run); this one is told the width."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_columns() - 2)


class _Parser(argparse.ArgumentParser):
    command: str | None = None  # the top parser: the command named on the line, if known

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
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


def _globals(parser: argparse.ArgumentParser, sub: bool) -> None:
    """Options accepted before or after the command name."""
    default = argparse.SUPPRESS if sub else None
    parser.add_argument(
        "--python",
        metavar="PY",
        default=default,
        help="target this interpreter's environment (default: compatkit's own)",
    )
    parser.add_argument(
        "--patchset-dir",
        metavar="DIR",
        action="append",
        type=Path,
        default=default if sub else [],
        help="also look for patchsets in DIR (repeatable)",
    )
    parser.add_argument(
        "--config",
        metavar="PYPROJECT",
        type=Path,
        default=default,
        help="the pyproject.toml with [tool.compatkit] (default: the nearest one)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=default or False,
        help="print one JSON document on stdout",
    )


def _ignore(*args: Any, **kwargs: Any) -> None:
    """add_argument of a subcommand that is not being run: its arguments are never built."""


class _Skipped:
    """The stand-in for a subcommand that is not being run."""

    add_argument = staticmethod(_ignore)


_SKIPPED = _Skipped()


def _command_in(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv`` (None: unknown, so build every subparser)."""
    from compatkit.cli.argv import GLOBALS  # the global options, and which of them take a value

    takes_value = {name for name, (_, kind) in GLOBALS.items() if kind != "flag"}
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in takes_value:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser; with ``only``, every other subcommand is a name and a help line."""
    parser = _Parser(prog="compatkit", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"compatkit {__version__}")
    _globals(parser, sub=False)
    cmds = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        if only is not None and name != only:
            # a name argparse knows (for "invalid choice" and its list), but no parser: each
            # ArgumentParser costs ≈ 0.2 ms to build, times every other command (P1)
            cmds._name_parser_map[name] = _SKIPPED  # type: ignore[assignment]
            return _SKIPPED  # type: ignore[return-value]
        p = cmds.add_parser(name, help=help_text, description=help_text)
        parser.command = only  # known: its unrecognized options point at its own --help
        _globals(p, sub=True)
        return p

    p = add("apply", "apply a patchset to the installed files, all or nothing")
    p.add_argument("patchset", nargs="?", help="default: the project's [tool.compatkit] set")
    p.add_argument(
        "--exclude",
        metavar="ID",
        action="append",
        default=[],
        help="leave this patch out of the series (repeatable)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="apply despite a version mismatch or files that differ from RECORD",
    )
    p.add_argument("--dry-run", action="store_true", help="show what would change; write nothing")

    p = add("revert", "restore the original files, byte for byte")
    p.add_argument("patchset")
    p.add_argument("--force", action="store_true", help="restore even files edited after apply")

    p = add("verify", "check that patchsets are fully applied and intact")
    p.add_argument("patchset", nargs="*", help="default: the project's [tool.compatkit] set")
    p.add_argument(
        "--pristine",
        metavar="DIST",
        nargs="?",
        const="",
        help="check a whole distribution against RECORD (with --all: every distribution)",
    )
    p.add_argument("--all", action="store_true", help="with --pristine: every distribution")
    p.add_argument(
        "--allow-empty",
        action="store_true",
        help="exit 0 when there is nothing to verify (default: that is a failure)",
    )
    _runtime_option(p)

    p = add("recover", "roll back (or --discard) what an interrupted compatkit run left")
    p.add_argument("distribution", nargs="*", help="default: every one that holds a journal")
    p.add_argument("--discard", action="store_true", help="delete the journal, restore nothing")

    p = add("status", "show each patch's state in the target environment")
    p.add_argument(
        "patchset",
        nargs="*",
        help="the patchsets to show, each patch's state (default: every known patchset)",
    )
    _runtime_option(p)

    add("list", "list the known patchsets")

    p = add("explain", "tell the story of a patch, by id or by a pasted error message")
    p.add_argument("query", help="a patch id (patch-6, or PATCHSET:patch-6) or error text")

    p = add("smoke", "run the patches' smoke tests with pytest in the target environment")
    p.add_argument("patchset")
    p.add_argument(
        "--patch",
        metavar="ID",
        action="append",
        default=[],
        help="only this patch's smoke test (repeatable)",
    )
    p = add("upstream", "classify each patch against a newer release: upstream or still needed")
    p.add_argument("patchset")
    p.add_argument(
        "--against",
        metavar="DIST==VERSION",
        required=True,
        help="the release to check, e.g. vllm==0.17.1 (installed in a throw-away venv)",
    )
    p.add_argument(
        "--with",
        dest="with_",
        metavar="REQ",
        action="append",
        default=[],
        help="also install this into the throw-away environment (repeatable; not with --python)",
    )

    p = add("constraints", "print a patchset's constraints as a file for pip/uv install -c")
    p.add_argument("patchset")

    p = add("matrix", "version matrix: run one cell, build the report, list CI jobs")
    p.add_argument("action", choices=["run", "report", "jobs"])
    p.add_argument("cell", nargs="?", help="the cell id (for run)")
    p.add_argument("--matrix", type=Path, default=Path("matrix.toml"), help="the matrix file")
    p.add_argument(
        "--results",
        type=Path,
        default=Path("build/matrix"),
        help="where cell results go (and the report is built from)",
    )
    p.add_argument("--docs", type=Path, help="report: also write the Markdown here")

    p = add("prove", "show each smoke test fails without its patch and passes with it")
    p.add_argument("patchset")
    p.add_argument(
        "--report", metavar="DIR", type=Path, help="write the table as JSON and Markdown"
    )
    _authoring_commands(add)
    _build_commands(add)
    _runtime_commands(add)
    p = add("fleet", "status, verify, apply or revert on every alive node of a Ray cluster")
    p.add_argument("action", choices=["status", "verify", "apply", "revert"])
    p.add_argument("patchset", nargs="+")
    p.add_argument("--address", metavar="ADDR", help="the Ray cluster (default: $RAY_ADDRESS)")
    p.add_argument(
        "--timeout",
        metavar="S",
        type=_seconds,
        default=600.0,
        help="wait at most S seconds for every node, above 0 (default: %(default)g)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="apply: as apply --force (a version mismatch, files that differ from RECORD)",
    )
    p.add_argument(
        "--keep-going",
        action="store_true",
        help="apply: keep it on the nodes it reached when another node fails (default: revert)",
    )
    p = add("completion", "print a bash or zsh completion script")
    p.add_argument("shell", choices=["bash", "zsh"])
    p = cmds.add_parser("_names")  # hidden: names for shell completion
    _globals(p, sub=True)
    p.add_argument("kind", choices=["patchsets", "ids"])
    return parser


def _seconds(text: str) -> float:
    """A finite, positive number of seconds (``nan``, ``inf``, ``0`` and ``-5`` are not)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds above 0: {text!r}")
    return value


def _wheel_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--wheel-dir",
        metavar="DIR",
        action="append",
        type=Path,
        default=[],
        help="look for wheels in DIR first (repeatable; also COMPATKIT_WHEEL_DIR)",
    )


def _runtime_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--runtime",
        metavar="DIR",
        type=Path,
        help="check the runtime-mode hook in DIR (compatkit runtime install) instead",
    )


def _runtime_commands(add: Callable[[str, str], argparse.ArgumentParser]) -> None:
    p = add("exec", "run a command with patchsets applied at import time (PATCHSET... -- CMD...)")
    p.usage = "%(prog)s [-h] [options] PATCHSET [PATCHSET ...] -- COMMAND [ARG ...]"
    p.add_argument("patchset", nargs="+", help="the patchsets to apply at import time")
    p.add_argument(
        "--force",
        action="store_true",
        help="as apply --force: despite a version mismatch or files that differ from RECORD",
    )
    p = add("runtime", "install or remove a runtime-mode hook (sitecustomize.py, or --pth)")
    p.add_argument("action", choices=["install", "uninstall"])
    p.add_argument("patchset", nargs="*", help="install: the patchsets to apply at import time")
    p.add_argument("--dir", required=True, type=Path, help="the runtime directory")
    p.add_argument(
        "--pth",
        action="store_true",
        help="install: start it from a .pth (and PEP 829 .start) file in site-packages",
    )


def _authoring_commands(add: Callable[[str, str], argparse.ArgumentParser]) -> None:
    p = add("diff", "turn hand edits of an installed distribution into a new patch")
    p.add_argument("distribution")
    p.add_argument("--patchset", required=True, metavar="NAME", help="patchset to add it to")
    p.add_argument("--id", required=True, metavar="ID", help="the new patch's id (patch-11)")
    p.add_argument("--title", metavar="TEXT", help="the new patch's one-line title")
    _wheel_options(p)

    p = add("lint", "check patchsets: headers, ids, series, smoke tests, and the pristine wheel")
    p.add_argument("patchset", nargs="*", help="names or directories (default: all)")
    p.add_argument("--offline", action="store_true", help="skip the checks that need wheels")
    _wheel_options(p)

    p = add("rebase", "port a patchset to a new upstream version with a three-way merge")
    p.add_argument("patchset")
    p.add_argument("--to", required=True, metavar="DIST==VERSION", help="the new target")
    p.add_argument("--name", metavar="NAME", help="the new patchset's name (default: NAME-VERSION)")
    p.add_argument("--into", metavar="DIR", type=Path, help="where to write it")
    _wheel_options(p)


def _build_commands(add: Callable[[str, str], argparse.ArgumentParser]) -> None:
    p = add("wheel", "build the target's wheel with a patchset built in (reproducible)")
    p.add_argument("patchset")
    p.add_argument(
        "-o", "--out-dir", metavar="DIR", type=Path, default=Path("dist"), help="default: dist"
    )
    p.add_argument("--offline", action="store_true", help="never download the pristine wheel")
    p.add_argument(
        "--sha256",
        metavar="HEX",
        help="the source wheel's sha256 (what proves it the release when it is not installed)",
    )
    p.add_argument(
        "--force", action="store_true", help="replace an output wheel that has other bytes"
    )
    _wheel_options(p)

    p = add("sbom", "write a CycloneDX SBOM of the environment, patches included")
    p.add_argument(
        "--format",
        choices=["cyclonedx"],
        default="cyclonedx",
        help="the SBOM format: CycloneDX 1.6 JSON (default: cyclonedx, the only one)",
    )
    p.add_argument(
        "--runtime",
        dest="runtimes",
        metavar="DIR",
        type=Path,
        action="append",
        default=[],
        help="include the patches the runtime folder DIR serves (repeatable)",
    )
    p.add_argument("-o", "--output", metavar="FILE", type=Path, help="default: stdout")


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
