"""``compatkit completion bash|zsh``: shell completion generated from the argparse parser.

shtab writes the script from the parser itself, so a new option completes without anyone
editing a completion file. Patchset names and patch ids are completed at run time through the
hidden ``compatkit _names patchsets|ids`` command (compatkit.cli.commands.names).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from compatkit.cli.output import Output

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from compatkit.cli.context import Context

PREAMBLE = {
    "bash": """
_compatkit_patchsets() { compgen -W "$(compatkit _names patchsets 2>/dev/null)" -- "$1"; }
_compatkit_ids() { compgen -W "$(compatkit _names ids 2>/dev/null)" -- "$1"; }
""",
    "zsh": """
_compatkit_patchsets() {
  local -a names; names=(${(f)"$(compatkit _names patchsets 2>/dev/null)"})
  _describe 'patchset' names
}
_compatkit_ids() {
  local -a ids; ids=(${(f)"$(compatkit _names ids 2>/dev/null)"})
  _describe 'patch id' ids
}
""",
}
_KINDS = {
    "patchset": "_compatkit_patchsets",
    "exclude": "_compatkit_ids",
    "patch": "_compatkit_ids",
    "query": "_compatkit_ids",
}


# where a path is completed: a folder, or a file (an option whose metavar is DIR: a folder, so
# -o completes folders for wheel, prove, rebase, diff, and files for sbom and matrix)
_PATHS = {
    "patchset_dir": "directory",
    "results": "directory",
    "wheel_dir": "directory",
    "runtimes": "directory",
    "dir": "directory",
    "output": "file",
    "matrix": "file",
    "config": "file",
}


def _actions(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for action in parser._actions:
        yield action
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _actions(sub)


def completion(parser: argparse.ArgumentParser, shell: str, out: Output | None = None) -> int:
    """Print the script; with --json, the envelope holds it (``shell``, ``script``)."""
    import shtab

    for action in _actions(parser):
        function = _KINDS.get(action.dest)
        if function:
            action.complete = {"bash": function, "zsh": function}  # type: ignore[attr-defined]
        elif action.dest in _PATHS:
            folder = _PATHS[action.dest] == "directory" or action.metavar == "DIR"
            action.complete = shtab.DIRECTORY if folder else shtab.FILE  # type: ignore[attr-defined]
    script = shtab.complete(parser, shell=shell, preamble=PREAMBLE[shell])
    if out is not None and out.json_mode:
        out.result({"shell": shell, "script": script})
    else:
        print(script)
    return 0


def add_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("shell", choices=["bash", "zsh"])


def run(args: Namespace, ctx: Context) -> int:
    """The script for the full parser, every command and sub-verb with its options."""
    from compatkit.cli.main import build_parser

    return completion(build_parser(), args.shell, ctx.out)
