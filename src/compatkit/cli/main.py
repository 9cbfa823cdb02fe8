"""Command line: read the arguments (compatkit.cli.parser), then one function per command, then
exit codes.

Exit codes: 0 ok; 1 expected failure (mismatch, conflict, verify failed); 2 usage;
3 internal error (a bug: please report it); 130 interrupted.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from compatkit.errors import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_PIPE_CLOSED,
    EXIT_USAGE,
    CompatkitError,
    UsageError,
)

if TYPE_CHECKING:
    from argparse import Namespace
    from typing import Any

ISSUES_URL = "https://github.com/compatkit/compatkit/issues"


def _project(args: Namespace, config: Any, registry: Any, env: Any, out: Any) -> int:
    """apply / verify with no patchset name: the project's [tool.compatkit] set."""
    if args.command == "verify":
        from compatkit.cli.commands.verify import verify_here

        return verify_here(config, registry, env, out, args.allow_empty)
    if config is None:
        raise UsageError(
            f"{args.command} needs a patchset name, or a [tool.compatkit] table in "
            "pyproject.toml (searched upwards from the current directory)"
        )
    from compatkit.cli.commands.apply import apply_project

    if args.exclude:
        raise UsageError("apply --exclude needs a patchset name")
    return apply_project(config, registry, env, out, args.force, args.dry_run)


def _dispatch(args: Namespace, registry: Any, env: Any, out: Any) -> int:
    """Import only the module of the command being run: start-up time is a tracked figure."""
    cmd = args.command
    if cmd == "apply":
        from compatkit.cli.commands.apply import apply
        from compatkit.ops.apply import apply_patchset

        options = (args.exclude, args.force, args.dry_run)
        return apply(apply_patchset(registry, env, args.patchset, *options), out)
    if cmd == "revert":
        from compatkit.cli.commands.revert import revert

        return revert(registry, env, args.patchset, args.force, out)
    if cmd in ("exec", "runtime") or getattr(args, "runtime", None) is not None:
        return _runtime_mode(args, registry, env, out)
    if cmd == "verify":
        from compatkit.cli.commands import verify

        if args.pristine is not None or args.all:
            return _pristine(args, env, out)
        return verify.verify(registry, env, args.patchset, out)
    if cmd in ("status", "list"):
        from compatkit.cli.commands import status

        if cmd == "list":
            return status.list_patchsets(registry, env, out)
        pyproject = getattr(args, "project_pyproject", None)
        return status.status(registry, env, args.patchset, out, pyproject, args.verbose)
    if cmd == "explain":
        from compatkit.cli.commands.explain import explain

        return explain(registry, env, args.query, out)
    if cmd == "recover":
        from compatkit.cli.commands.recover import recover

        return recover(env, args.distribution, args.discard, out)
    return _dispatch_more(args, registry, env, out)


def _dispatch_more(args: Namespace, registry: Any, env: Any, out: Any) -> int:
    cmd = args.command
    if cmd == "smoke":
        from compatkit.cli.commands.smoke import smoke

        return smoke(registry, env, args.patchset, args.patch, out)
    if cmd == "upstream":
        from compatkit.cli.commands.upstream import upstream
        from compatkit.env.target import Environment

        if args.python and args.with_:
            raise UsageError(
                "--with adds to the throw-away environment; with --python there is none"
            )
        target = Environment.for_python(args.python) if args.python else None
        return upstream(registry, target, args.patchset, args.against, out, tuple(args.with_))
    if cmd == "constraints":
        from compatkit.cli.commands.constraints import constraints

        return constraints(registry, args.patchset, out)
    if cmd == "prove":
        from compatkit.cli.commands.prove import prove

        return prove(registry, env, args.patchset, args.report, out)
    if cmd in ("completion", "_names"):
        from compatkit.cli.commands import completion

        if cmd == "completion":
            from compatkit.cli.parser import build_parser

            return completion.completion(build_parser(), args.shell, out)
        return completion.names(registry, args.kind, out)
    if cmd == "matrix":
        return _matrix(args, registry, env, out)
    if cmd in ("diff", "lint", "rebase", "wheel"):
        return _run_authoring(args, registry, env, out)
    if cmd == "sbom":
        from compatkit.cli.commands.sbom import sbom

        return sbom(registry, env, args.output, out, args.runtimes)
    raise AssertionError(cmd)


def _pristine(args: Namespace, env: Any, out: Any) -> int:
    """``verify --pristine DIST`` or ``verify --pristine --all``."""
    from compatkit.cli.commands import verify

    if args.all and (args.pristine is None or args.pristine or args.patchset):
        raise UsageError("--all goes with --pristine alone: verify --pristine --all")
    if args.all:
        return verify.verify_pristine_all(env, out)
    if not args.pristine:
        raise UsageError("--pristine takes a distribution (or --all)")
    return verify.verify_pristine(env, args.pristine, out)


def _runtime_mode(args: Namespace, registry: Any, env: Any, out: Any) -> int:
    """exec, runtime install/uninstall, status/verify --runtime (compatkit.runtime)."""
    cmd = args.command
    if cmd == "exec":
        from compatkit.cli.commands.exec import exec_command

        return exec_command(registry, env, args.patchset, args.command_line, out, args.force)
    from compatkit.cli.commands import runtime

    if cmd in ("status", "verify"):
        if args.patchset:
            raise UsageError(f"{cmd} --runtime DIR checks the patchsets DIR holds; name none")
        check = runtime.status if cmd == "status" else runtime.verify
        return check(registry, args.runtime, out)
    if args.action == "install":
        return runtime.install(registry, env, args.patchset, args.dir, args.pth, out)
    if args.patchset or args.pth:
        raise UsageError("runtime uninstall takes only --dir")
    return runtime.uninstall(args.dir, out, env)


def _run(args: Namespace, out: Any) -> int:
    from compatkit.env.target import Environment
    from compatkit.load.config import find_config
    from compatkit.load.registry import Registry

    if args.command == "diff" and args.patchset_dir:
        from compatkit.cli.outputs import output_dir

        output_dir(args.patchset_dir[-1], "--patchset-dir")
        args.patchset_dir[-1].mkdir(parents=True, exist_ok=True)  # where diff writes
    config = find_config(Path.cwd(), args.config)
    dirs = [*args.patchset_dir, *(config.patchset_dirs if config else [])]
    registry = Registry(
        args.patchset_dir, *((config.patchset_dirs, config.patchset_source) if config else ())
    )
    if args.command == "fleet":  # --python names an interpreter on the nodes, not here
        from compatkit.cli.commands.fleet import fleet

        where = (args.address, args.python, dirs, args.timeout)
        return fleet(registry, args.action, args.patchset, *where, out, args.force, args.keep_going)
    env = Environment.for_python(args.python)
    no_name = args.command in ("apply", "verify") and not args.patchset
    pristine = getattr(args, "pristine", None) is not None or getattr(args, "all", False)
    if no_name and not pristine and getattr(args, "runtime", None) is None:
        return _project(args, config, registry, env, out)
    args.project_pyproject = config.path if config else None  # status: the upgrade check
    return _dispatch(args, registry, env, out)


def _matrix(args: Namespace, registry: object, env: object, out: object) -> int:
    from compatkit.cli.commands import matrix, matrix_report

    if args.action == "jobs":
        return matrix.jobs(args.matrix)
    if args.action == "report":
        from compatkit.model.matrix import load_matrix

        order = [c.id for c in load_matrix(args.matrix)] if args.matrix.is_file() else []
        return matrix_report.report(args.results, args.docs, out, order)  # type: ignore[arg-type]
    if not args.cell:
        raise UsageError("matrix run needs a cell id")
    return matrix.run(registry, env, args.matrix, args.cell, args.results, out)  # type: ignore[arg-type]


def _run_authoring(args: Namespace, registry: Any, env: Any, out: Any) -> int:
    from compatkit.delivery.wheels import WheelSource

    offline = getattr(args, "offline", False)
    wheels = WheelSource.configure(args.wheel_dir, offline, env.executable)
    if args.command == "wheel":
        from compatkit.cli.commands.wheel import wheel

        where = (args.patchset, args.out_dir, wheels, out, args.sha256, args.force)
        return wheel(registry, env, *where)
    from compatkit.cli.commands import diff, lint, rebase

    dirs = args.patchset_dir
    if args.command == "diff":
        into = dirs[-1] if dirs else Path("patchsets")
        return diff.diff(
            registry, env, args.distribution, args.patchset, args.id, args.title, into, wheels, out
        )
    if args.command == "lint":
        return lint.lint(registry, args.patchset, dirs, wheels, out)
    return rebase.rebase(registry, args.patchset, args.to, args.name, args.into, wheels, out)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = _parse(arguments)
    if isinstance(args, int):
        return args
    from compatkit.cli.output import Output

    out = Output(json_mode=args.json)
    try:
        code = _run(args, out)
    except CompatkitError as exc:
        code = exc.exit_code
        out.doc.update(ok=False, error=exc.message, problems=exc.problems)
        print(f"compatkit: error: {exc.message}", file=sys.stderr)
        for problem in exc.problems:
            print(f"  - {problem}", file=sys.stderr)
    except KeyboardInterrupt:
        print("compatkit: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away mid-run (`compatkit prove | head`)
        return _pipe_closed(EXIT_PIPE_CLOSED)
    except Exception as exc:
        if _caused_by_interrupt(exc):  # e.g. importlib's lock release failing after Ctrl-C
            print("compatkit: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        print(
            f"compatkit: internal error: {type(exc).__name__}: {exc}\n"
            f"This is a bug; please report it at {ISSUES_URL} with the command you ran.",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    try:
        out.emit(code, args.command)
        sys.stdout.flush()
    except BrokenPipeError:  # `compatkit status --json | head`: the work is done
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
            out.doc.update(ok=False, error=exc.message)
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
