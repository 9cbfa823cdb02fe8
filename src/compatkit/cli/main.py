"""Command line: read the arguments (compatkit.cli.parser), run the command's module
(compatkit.cli.table names it; each exports ``run(args, ctx) -> int``), map errors to exit
codes.

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
    from argparse import Namespace
    from typing import Any

    from compatkit.cli.output import Output

ISSUES_URL = "https://github.com/compatkit/compatkit/issues"
# the commands that write nothing: packaging's answers may come from the cache for them
READ_ONLY = ("status", "verify", "explain", "list", "pristine")


def _run(args: Namespace, out: Output, loaded: Callable[[], None] | None) -> int:
    """Import only the module of the command being run: start-up time is a tracked figure.
    ``loaded`` is called once it is imported, before it runs (the console script's collector,
    compatkit.cli.entry)."""
    from importlib import import_module

    from compatkit.cli import table
    from compatkit.cli.context import Context
    from compatkit.cli.output import warning
    from compatkit.load.cache import remember_answers, tell

    tell(warning)  # the cache is ignored: one line on stderr
    remember_answers(args.command in READ_ONLY)  # commands that write ask packaging itself
    command = import_module(table.module(args.command))
    if loaded is not None:
        loaded()
    code: int = command.run(args, Context(args, out))
    return code


def main(argv: Sequence[str] | None = None, loaded: Callable[[], None] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = _parse(arguments)
    if isinstance(args, int):
        return args
    from compatkit.cli.output import Output

    out = Output(json_mode=args.json)
    try:
        code = _run(args, out, loaded)
    except CompatkitError as exc:  # the error's own document, not the command's
        from compatkit.cli.output import error

        code = exc.exit_code
        out = Output(json_mode=args.json)
        out.result({"ok": False, "error": exc.message, "problems": exc.problems})
        error(exc.message, exc.problems)
    except KeyboardInterrupt:
        print("compatkit: interrupted", file=sys.stderr)
        return _failed(args, "interrupted", EXIT_INTERRUPTED)
    except BrokenPipeError:  # the reader went away mid-run (`compatkit prove | head`)
        return _pipe_closed(EXIT_PIPE_CLOSED)
    except Exception as exc:
        if _caused_by_interrupt(exc):  # e.g. importlib's lock release failing after Ctrl-C
            print("compatkit: interrupted", file=sys.stderr)
            return _failed(args, "interrupted", EXIT_INTERRUPTED)
        what = f"internal error: {type(exc).__name__}: {exc}"
        print(
            f"compatkit: {what}\n"
            f"This is a bug; please report it at {ISSUES_URL} with the command you ran.",
            file=sys.stderr,
        )
        return _failed(args, what, EXIT_INTERNAL)
    try:
        out.emit(code, args.command)
        sys.stdout.flush()
    except BrokenPipeError:  # `compatkit status --json | head`: the work is done
        return _pipe_closed(code)
    return code


def _failed(args: Namespace, message: str, code: int) -> int:
    """``code``, after the ``--json`` document of a command that ended without its own
    (Ctrl-C, an internal error): ``ok`` false and ``error``, so a reader always gets one."""
    if args.json:
        from compatkit.cli.output import Output

        out = Output(json_mode=True)
        out.result({"ok": False, "error": message, "problems": []})
        try:
            out.emit(code, args.command)
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
        args = parse(arguments)
    except UsageExit as exc:
        if "--json" in arguments:
            from compatkit.cli.output import Output

            out = Output(json_mode=True)
            out.result({"ok": False, "error": exc.message, "problems": []})
            out.emit(EXIT_USAGE, exc.command)
        raise  # SystemExit(2), as argparse itself exits
    return EXIT_USAGE if args is None else args


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
