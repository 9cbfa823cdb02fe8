"""The command reference page, generated from compatkit's own argparse parser.

Every command, sub-command (nested subparsers, walked recursively) and option the parser
knows, each with its help; hidden commands (no help: ``_names``) are left out, as ``--help``
leaves them out. :func:`full_parser` is the one place that asks compatkit for its parser.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

WIDTH = "90"  # the columns argparse formats usage lines for


def full_parser() -> argparse.ArgumentParser:
    """compatkit's full parser: every command and sub-verb, with every option."""
    from compatkit.cli.main import build_parser

    return build_parser()


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[Any] | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def walk(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser, str]]:
    """(command path, its parser, its help) for ``parser`` and every visible subparser below
    it, depth first, in the order the parser lists them."""
    yield path, parser, parser.description or ""
    subs = _subparsers(parser)
    if subs is None:
        return
    for choice in subs._choices_actions:  # only the commands given a help (not hidden ones)
        sub = subs.choices[choice.dest]
        yield from walk(sub, (*path, choice.dest))


def _invocation(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    return parser._get_formatter()._format_action_invocation(action)


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    text = ""
    if action.help and action.help != argparse.SUPPRESS:
        text = parser._get_formatter()._expand_help(action)
    if action.choices:
        text += " (one of: " + ", ".join(f"`{c}`" for c in action.choices) + ")"
    return " ".join(text.split())


def _own_actions(parser: argparse.ArgumentParser, inherited: set[str]) -> Iterator[argparse.Action]:
    """The arguments of ``parser`` but the global ones (listed once, under ``compatkit``)."""
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        if action.option_strings and set(action.option_strings) <= inherited:
            continue
        yield action


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;")


def _section(
    path: tuple[str, ...], parser: argparse.ArgumentParser, text: str, inherited: set[str]
) -> list[str]:
    name = " ".join(("compatkit", *path))
    level = "#" * min(len(path) + 2, 6)
    lines = [f"({anchor(path)})=", f"{level} `{name}`", ""]
    if text:
        lines += [_escape(text), ""]
    lines += ["```text", parser.format_usage().strip(), "```", ""]
    rows = [
        f"| `{_escape(_invocation(parser, a))}` | {_escape(_help(parser, a))} |"
        for a in _own_actions(parser, inherited)
    ]
    if rows:
        lines += ["| argument | what it does |", "|---|---|", *rows, ""]
    return lines


def anchor(path: tuple[str, ...]) -> str:
    """The page's label of one command: ``cli-runtime``, ``cli-runtime-install``."""
    return "-".join(("cli", *path)) if path else "cli-compatkit"


def render(parser: argparse.ArgumentParser | None = None) -> str:
    """The command reference page (MyST Markdown)."""
    parser = parser or full_parser()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH  # compatkit's formatter reads the width from COLUMNS
    try:
        lines = [
            "# Command-line reference",
            "",
            "Generated from compatkit's own argument parser when the site is built: every "
            "command, sub-command and option, with the help `--help` prints. The options of "
            "`compatkit` itself (`--json`, `--python`, `--patchset-dir`, ...) are global: "
            "they are taken before or after the command name, and are listed once, below.",
            "",
        ]
        top = {s for a in parser._actions for s in a.option_strings}
        for path, sub, text in walk(parser):
            lines += _section(path, sub, text, set() if not path else top)
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(lines)


def missing(page: str, parser: argparse.ArgumentParser | None = None) -> list[str]:
    """Every command and argument of the parser that ``page`` does not show in its own section
    (a global option: in ``compatkit``'s); empty when the page is complete."""
    parser = parser or full_parser()
    top = {s for a in parser._actions for s in a.option_strings}
    gone = []
    for path, sub, _ in walk(parser):
        name = " ".join(("compatkit", *path))
        at = page.find(f"({anchor(path)})=\n")
        if at < 0 or f"`{name}`" not in page[at:].split("\n", 2)[1]:
            gone.append(name)
            continue
        nxt = page.find("\n(cli-", at + 1)
        section = page[at : nxt if nxt > 0 else len(page)]
        for action in _own_actions(sub, top if path else set()):
            shown = action.option_strings or [_invocation(sub, action)]
            gone += [f"{name} {s}" for s in shown if f"`{s}" not in section and s not in section]
            gone += [f"{name} {c}" for c in action.choices or () if f"`{c}`" not in section]
    return gone
