"""``compatkit exec PATCHSET... -- COMMAND...``: run COMMAND with the patchsets applied at import.

``--force`` means what ``apply --force`` means: prepare despite a version mismatch or an unmet
requirement, and on files that differ from their RECORD hash (as they are).

COMMAND runs as in an activated target environment: the target interpreter's folder comes first
on ``PATH`` (and ``VIRTUAL_ENV`` names the venv), so ``-- python ...`` runs the ``--python``
interpreter, the one the patches were prepared for, not whichever ``python`` came first.

Exit code: COMMAND's own (128 + N when a signal N ended it); 1 when a patchset does not fit or
a diff does not apply (COMMAND does not run); 2 for usage errors; 127 when COMMAND is not found.
"""

from __future__ import annotations

import subprocess

from compatkit.cli import options
from compatkit.errors import CompatkitError, UsageError
from compatkit.ops import runtime as ops

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from compatkit.cli.context import Context

EXIT_NOT_FOUND = 127


class CommandNotFound(CompatkitError):
    exit_code = EXIT_NOT_FOUND


def add_arguments(parser: ArgumentParser) -> None:
    parser.usage = "%(prog)s [-h] [options] PATCHSET [PATCHSET ...] -- COMMAND [ARG ...]"
    options.patchset(parser, "+", "the patchsets to apply at import time")
    options.force(
        parser, "as apply --force: despite a version mismatch or files that differ from RECORD"
    )


def run(args: Namespace, ctx: Context) -> int:
    names, command = args.patchset, args.command_line
    if not command:
        raise UsageError(
            "exec needs a command after '--': compatkit exec PATCHSET... -- COMMAND..."
        )
    root = ops.exec_dir(ctx.registry, ctx.env, names, args.force)
    try:
        proc = subprocess.run(command, env=ops.child_environ(root, python=ctx.env.executable))
    except (FileNotFoundError, PermissionError) as exc:
        raise CommandNotFound(f"cannot run {command[0]!r}: {exc.strerror}") from None
    code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
    ctx.out.result(ops.ExecResult(names, root, code).to_json())
    return code
