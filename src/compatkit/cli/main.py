"""Command line: which module runs each command (:data:`COMMANDS`; each module of
compatkit.cli.commands has ``add_arguments(parser)`` and ``run(args, ctx) -> int``), read the
arguments (compatkit.cli.parser), run the command, map errors to exit codes.

Exit codes: 0 ok; 1 expected failure (mismatch, conflict, verify failed); 2 usage;
3 internal error (a bug: please report it); 130 interrupted.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

from compatkit.errors import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_PIPE_CLOSED,
    EXIT_USAGE,
    CompatkitError,
)

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace
    from typing import Any

    from compatkit.cli.output import Output

ISSUES_URL = "https://github.com/compatkit/compatkit/issues"
# each command, in the order --help lists them: its module in compatkit.cli.commands and its
# summary (None: hidden, not listed)
COMMANDS: dict[str, tuple[str, str | None]] = {
    "apply": ("apply", "apply a patchset to the installed files, all or nothing"),
    "revert": ("revert", "restore the original files, byte for byte"),
    "verify": ("verify", "check that patchsets are fully applied and intact"),
    "pristine": ("pristine", "check installed distributions against their RECORD, file by file"),
    "recover": ("recover", "roll back (or --discard) what an interrupted compatkit run left"),
    "status": ("status", "show each patch's state in the target environment"),
    "list": ("listing", "list the known patchsets"),
    "explain": ("explain", "tell the story of a patch, by id or by a pasted error message"),
    "smoke": ("smoke", "run the patches' smoke tests with pytest in the target environment"),
    "upstream": (
        "upstream",
        "classify each patch against a newer release: upstream or still needed",
    ),
    "constraints": (
        "constraints",
        "print a patchset's constraints as a file for pip/uv install -c",
    ),
    "matrix": ("matrix", "version matrix: run one cell, build the report, list CI jobs"),
    "prove": ("prove", "show each smoke test fails without its patch and passes with it"),
    "diff": ("diff", "turn hand edits of an installed distribution into a new patch"),
    "lint": (
        "lint",
        "check patchsets: headers, ids, series, smoke tests, and the pristine wheel",
    ),
    "rebase": ("rebase", "port a patchset to a new upstream version with a three-way merge"),
    "wheel": ("wheel", "build the target's wheel with a patchset built in (reproducible)"),
    "sbom": ("sbom", "write a CycloneDX SBOM of the environment, patches included"),
    "exec": (
        "exec",
        "run a command with patchsets applied at import time (PATCHSET... -- CMD...)",
    ),
    "runtime": (
        "runtime",
        "install, check (status, verify) or remove a runtime-mode hook (sitecustomize.py)",
    ),
    "fleet": ("fleet", "status, verify, apply or revert on every alive node of a Ray cluster"),
    "completion": ("completion", "print a bash or zsh completion script"),
    "_names": ("names", None),  # names for shell completion, run by the completion scripts
}
# the commands that write nothing: packaging's answers may come from the cache for them
READ_ONLY = ("status", "verify", "explain", "list", "pristine")


def _run(args: Namespace, out: Output, loaded: Callable[[], None] | None) -> int:
    """Import only the module of the command being run: start-up time is a tracked figure.
    ``loaded`` is called once it is imported, before it runs (the console script's collector,
    compatkit.cli.entry)."""
    from importlib import import_module

    from compatkit.cli.context import Context
    from compatkit.cli.output import warning
    from compatkit.load.cache import remember_answers, tell

    tell(warning)  # the cache is ignored: one line on stderr
    remember_answers(args.command in READ_ONLY)  # commands that write ask packaging itself
    command = import_module(f"compatkit.cli.commands.{COMMANDS[args.command][0]}")
    if loaded is not None:
        loaded()
    code: int = command.run(args, Context(args, out))
    return code


def main(argv: Sequence[str] | None = None, loaded: Callable[[], None] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    json_mode, command = "--json" in arguments, None  # until the arguments are read
    try:  # reading them imports the command's module (its add_arguments)
        args = _parse(arguments)
        if isinstance(args, int):
            return args
        from compatkit.cli.output import Output

        json_mode, command = args.json, args.command
        out = Output(json_mode=json_mode)
        code = _run(args, out, loaded)
    except CompatkitError as exc:  # the error's own document, not the command's
        from compatkit.cli.output import Output, error

        code = exc.exit_code
        out = Output(json_mode=json_mode)
        out.result({"ok": False, "error": exc.message, "problems": exc.problems})
        error(exc.message, exc.problems)
    except KeyboardInterrupt:
        print("compatkit: interrupted", file=sys.stderr)
        return _failed(json_mode, command, "interrupted", EXIT_INTERRUPTED)
    except BrokenPipeError:  # the reader went away mid-run (`compatkit prove | head`)
        return _pipe_closed(EXIT_PIPE_CLOSED)
    except Exception as exc:
        if _caused_by_interrupt(exc):  # e.g. importlib's lock release failing after Ctrl-C
            print("compatkit: interrupted", file=sys.stderr)
            return _failed(json_mode, command, "interrupted", EXIT_INTERRUPTED)
        what = f"internal error: {type(exc).__name__}: {exc}"
        print(
            f"compatkit: {what}\n"
            f"This is a bug; please report it at {ISSUES_URL} with the command you ran.",
            file=sys.stderr,
        )
        return _failed(json_mode, command, what, EXIT_INTERNAL)
    try:
        out.emit(code, command)
        sys.stdout.flush()
    except BrokenPipeError:  # `compatkit status --json | head`: the work is done
        return _pipe_closed(code)
    return code


def _failed(json_mode: bool, command: str | None, message: str, code: int) -> int:
    """``code``, after the ``--json`` document of a command that ended without its own
    (Ctrl-C, an internal error): ``ok`` false and ``error``, so a reader always gets one."""
    if json_mode:
        from compatkit.cli.output import Output

        out = Output(json_mode=True)
        out.result({"ok": False, "error": message, "problems": []})
        try:
            out.emit(code, command)
            sys.stdout.flush()
        except BrokenPipeError:
            return _pipe_closed(code)
    return code


def _parse(arguments: list[str]) -> Any:
    """argparse's namespace, or EXIT_USAGE when no command was named (the help was printed).
    A usage error exits 2 as argparse does; with --json it is also the JSON envelope on
    stdout (``ok`` false, ``error``)."""
    from compatkit.cli.parser import UsageExit, parse

    try:
        args = parse(arguments, COMMANDS)
    except UsageExit as exc:
        if "--json" in arguments:
            from compatkit.cli.output import Output

            out = Output(json_mode=True)
            out.result({"ok": False, "error": exc.message, "problems": []})
            out.emit(EXIT_USAGE, exc.command)
        raise  # SystemExit(2), as argparse itself exits
    return EXIT_USAGE if args is None else args


def build_parser() -> ArgumentParser:
    """The full parser: every command with its arguments, and the sub-verbs below ``runtime``,
    ``matrix`` and ``fleet`` (shell completion and the docs' command reference read it)."""
    from compatkit.cli.parser import build

    return build(COMMANDS, COMMANDS)


def _caused_by_interrupt(exc: BaseException) -> bool:
    """Whether a KeyboardInterrupt is in ``exc``'s chain: Ctrl-C inside a ``finally`` or an
    import can surface as another exception (RuntimeError) raised while handling it."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        if isinstance(link, KeyboardInterrupt):
            return True
        seen.add(id(link))
        link = link.__context__
    return False


def _pipe_closed(code: int) -> int:
    """The reader of stdout went away: not the user's error. Point stdout at /dev/null so
    the interpreter's own flush at exit cannot print a BrokenPipeError either."""
    import contextlib

    with contextlib.suppress(OSError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
