"""The options several commands share, one small function each; a command's own options are
in its module's ``add_arguments(parser)`` (compatkit.cli.commands).

The global options (:func:`add_globals`) are taken before the command name and after it (and
after a sub-verb: ``compatkit runtime status --dir D --json``).

>>> import argparse
>>> parser = argparse.ArgumentParser(prog="compatkit wheel")
>>> output(parser, "DIR", "the folder the wheel goes to")
>>> parser.parse_args(["-o", "dist"]).output
PosixPath('dist')
"""

from __future__ import annotations

import argparse
from pathlib import Path

TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any

DEFAULT_SET = "default: the project's [tool.compatkit] set"


def add_globals(parser: argparse.ArgumentParser, after_command: bool) -> list[argparse.Action]:
    """``--python``, ``--patchset-dir``, ``--config``, ``--json``; ``after_command``: after the
    command name, each is set only when given (the value given before the name stays)."""
    kept: dict[str, Any] = {"default": argparse.SUPPRESS} if after_command else {}
    dirs: dict[str, Any] = kept or {"default": []}
    return [
        parser.add_argument(
            "--python",
            metavar="PY",
            help="target this interpreter's environment (default: compatkit's own)",
            **kept,
        ),
        parser.add_argument(
            "--patchset-dir",
            action="append",
            type=Path,
            metavar="DIR",
            help="also look for patchsets in DIR (repeatable)",
            **dirs,
        ),
        parser.add_argument(
            "--config",
            type=Path,
            metavar="PYPROJECT",
            help="the pyproject.toml with [tool.compatkit] (default: the nearest one)",
            **kept,
        ),
        parser.add_argument(
            "--json", action="store_true", help="print one JSON document on stdout", **kept
        ),
    ]


def patchset(
    parser: argparse.ArgumentParser, nargs: str | None = None, help: str | None = None
) -> None:
    """The positional ``patchset``: one name (``nargs`` None), or as argparse's ``nargs``."""
    parser.add_argument("patchset", nargs=nargs, help=help)


def offline(
    parser: argparse.ArgumentParser,
    help: str = "never download a wheel: only --wheel-dir's and the cache's",
) -> None:
    parser.add_argument("--offline", action="store_true", help=help)


def wheel_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wheel-dir",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="look for wheels in DIR first (repeatable; also COMPATKIT_WHEEL_DIR)",
    )


def wheels(parser: argparse.ArgumentParser) -> None:
    """``--offline`` and ``--wheel-dir``: every command that fetches a wheel takes both."""
    offline(parser)
    wheel_dir(parser)


def output(
    parser: argparse.ArgumentParser, kind: str, help: str, default: Path | None = None
) -> None:
    """``-o/--output``: a folder (``kind`` "DIR") or a file ("FILE"), as its help says."""
    parser.add_argument("-o", "--output", type=Path, default=default, metavar=kind, help=help)


def force(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--force", action="store_true", help=help)


def sub_verbs(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[Any]:
    """The sub-verbs of ``runtime``, ``matrix`` and ``fleet`` (``args.action``): each its own
    parser, so its help shows only its options and argparse checks which go with which."""
    return parser.add_subparsers(dest="action", required=True)


def verb(verbs: argparse._SubParsersAction[Any], name: str, help: str) -> argparse.ArgumentParser:
    """One sub-verb's parser, with the global options (as after a command name)."""
    sub: argparse.ArgumentParser = verbs.add_parser(name, help=help, description=help)
    add_globals(sub, after_command=True)
    return sub
