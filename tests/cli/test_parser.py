"""compatkit.cli.table, the one statement of every command and option, and the argparse parser
built from it (compatkit.cli.parser): every argparse action comes from the table, every option of
every command reaches argparse in each form a user types it, and a line that names a command
(built with that command's subparser only) reads as the full parser reads it."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from compatkit.cli import parser, table
from compatkit.cli.parser import build_parser

PARSER = build_parser()


def _argparse(
    args: list[str], parser: argparse.ArgumentParser = PARSER
) -> dict[str, object] | None:
    """argparse's namespace, or None where it exits (usage error, help, version)."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            ns = parser.parse_args(args)
        except SystemExit:
            return None
    return None if ns.command is None else vars(ns)


@pytest.mark.parametrize(
    "args",
    [
        ["explain", "patch-6"],
        ["explain", "--json", "RuntimeError: Boolean value of Tensor"],
        ["status"],
        ["status", "a", "b", "--json"],
        ["--json", "runtime", "status", "--dir", "hook"],
        ["runtime", "verify", "--dir=hook"],
        ["verify", "--allow-empty"],
        ["pristine", "vllm", "torch"],
        ["pristine", "--all", "-v"],
        ["list"],
        ["apply"],
        ["apply", "ps", "--exclude", "patch-2", "--exclude=patch-3", "--dry-run", "--force"],
        ["--python", "/venv/bin/python", "--patchset-dir", "a", "--patchset-dir", "b", "apply"],
        ["--python", "a", "status", "--python", "b"],
        ["--patchset-dir", "a", "status", "--patchset-dir", "b"],
        ["revert", "ps", "--force", "--python=/venv", "--config", "pyproject.toml"],
        ["recover", "--discard", "demo"],
        ["explain", ""],
        ["explain", "--", "-x"],
        ["fleet", "verify", "ps", "--timeout", "5"],
    ],
)
def test_a_named_command_reads_as_the_full_parser_reads_it(args: list[str]) -> None:
    ns = parser.parse(args)
    assert ns is not None, args
    found = vars(ns)
    assert found.pop("command_line") == []
    assert found == _argparse(args), args
    assert all(isinstance(p, Path) for p in ns.patchset_dir)


# -- command lines generated from the table ---------------------------------------------------


def _value(option: table.Option) -> str:
    """A value the option accepts."""
    if option.get("choices"):
        return option["choices"][-1]
    return "5" if option.get("type") == "seconds" else f"v-{table.dest(option)}"


def _positionals(command: table.Command) -> list[str]:
    """One value for each of the command's positionals (argparse accepts one for any nargs)."""
    return [_value(o) for o in command["options"] if o["kind"] == "positional"]


def _required(command: table.Command) -> list[str]:
    return [a for o in command["options"] if o.get("required") for a in (o["flags"][-1], _value(o))]


def _forms(option: table.Option) -> Iterator[list[str]]:
    """The option in each form a user may type it."""
    for flag in option["flags"]:
        if option["kind"] == "flag":
            yield [flag]
        elif option["kind"] in ("value", "repeat"):
            yield [flag, _value(option)]
            if flag.startswith("--"):
                yield [f"{flag}={_value(option)}"]
        if option["kind"] == "repeat":
            yield [flag, _value(option), flag, "second"]


def generated_lines(names: list[str]) -> Iterator[tuple[list[str], str]]:
    """(command line, the dest it sets) for every option of every command in each form, after
    the positionals and before them, and every global option before and after the name."""
    for name in names:
        command = table.COMMANDS[name]
        base, required = _positionals(command), _required(command)
        for option in command["options"]:
            if option["kind"] == "positional" or option.get("required"):
                continue
            for form in _forms(option):
                yield [name, *base, *form, *required], table.dest(option)
                yield [name, *form, *required, *base], table.dest(option)
        for option in table.GLOBALS:
            for form in _forms(option):
                yield [*form, name, *base, *required], table.dest(option)
                yield [name, *base, *required, *form], table.dest(option)
        yield [name, *base, *required], "command"


def _set(namespace: dict[str, object] | None, dest: str) -> bool:
    """Whether the generated line gave ``dest`` a value (not the option's default)."""
    assert namespace is not None
    value = namespace[dest]
    return value not in (None, False, []) and not str(value).startswith(("dist", "build/"))


ALL = list(table.COMMANDS)


@pytest.mark.parametrize("args,dest", list(generated_lines(ALL)), ids=" ".join)
def test_every_option_of_every_command_reaches_argparse_from_the_table(
    args: list[str], dest: str
) -> None:
    found = _argparse(args)
    assert found is not None, args
    assert _set(found, dest)
    assert found["command"] in args


# -- every argparse action comes from the table -------------------------------------------------


def _actions(p: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in p._actions if not isinstance(a, argparse._HelpAction)]


def _stated(action: argparse.Action) -> tuple[object, ...]:
    """What the user sees of an argparse action (or of a table option, below)."""
    choices = list(action.choices) if action.choices else None
    return (tuple(action.option_strings), action.dest, action.help, action.metavar, choices)


def _from_table(option: table.Option) -> tuple[object, ...]:
    strings = () if option["kind"] == "positional" else option["flags"]
    choices = list(option["choices"]) if option.get("choices") else None
    return (strings, table.dest(option), option.get("help"), option.get("metavar"), choices)


def test_every_argparse_action_of_every_command_comes_from_the_table() -> None:
    """An option added to parser.py by hand, outside the table, fails here."""
    full = build_parser()
    top = [o for o in _actions(full) if not isinstance(o, argparse._SubParsersAction)]
    assert [_stated(a) for a in top][1:] == [_from_table(o) for o in table.GLOBALS]
    assert top[0].option_strings == ["--version"]
    sub = next(a for a in full._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == list(table.COMMANDS)
    for name, command in table.COMMANDS.items():
        built = [_stated(a) for a in _actions(sub.choices[name])]
        assert built == [_from_table(o) for o in (*table.GLOBALS, *command["options"])], name
    listed = [a.dest for a in sub._choices_actions]
    assert listed == [n for n, c in table.COMMANDS.items() if not c.get("hidden")]


def test_an_option_added_to_the_table_is_parsed_and_in_the_help(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    status = table.COMMANDS["status"]
    since: table.Option = {
        "flags": ("--since",),
        "kind": "value",
        "metavar": "WHEN",
        "help": "only patches since WHEN",
    }
    deep: table.Option = {"flags": ("--deep",), "kind": "flag", "help": "look harder"}
    grown: table.Command = {**status, "options": (*status["options"], since, deep)}
    monkeypatch.setitem(table.COMMANDS, "status", grown)
    ns = parser.parse(["status", "a", "--since", "yesterday", "--deep"])
    assert ns is not None and ns.since == "yesterday" and ns.deep is True
    ns = parser.parse(["status"])
    assert ns is not None and ns.since is None and ns.deep is False
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser("status").parse_args(["status", "--help"])
    assert re.search(r"\n  --since WHEN +only patches since WHEN\n", out.getvalue())
    assert "--deep" in out.getvalue()


def test_an_abbreviated_global_option_before_the_command_is_not_a_crash() -> None:
    """``--pyth x status``: no abbreviation is taken (one meaning per flag), so it is a usage
    error naming the flag, never a traceback (it once raised AttributeError); the full names
    work."""
    for argv, flag in (
        (["--pyth", "x", "status"], "--pyth"),
        (["--patchset", "d", "list"], "--patchset"),
    ):
        with pytest.raises(parser.UsageExit) as exc:
            parser.parse(argv)
        message = exc.value.message
        assert exc.value.code == 2 and "\n" not in message, message
        assert flag in message or "unknown command" in message, message
    ns = parser.parse(["--python", "x", "status"])
    assert ns is not None and ns.command == "status" and ns.python == "x"
    ns = parser.parse(["--patchset-dir", "d", "list"])
    assert ns is not None and ns.command == "list" and ns.patchset_dir == [Path("d")]


def _help(argv: list[str], monkeypatch: pytest.MonkeyPatch, columns: int) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser(argv[0] if argv[0] in table.COMMANDS else None).parse_args(argv)
    return out.getvalue()


@pytest.mark.parametrize("argv", [["--help"], ["apply", "--help"]])
def test_help_is_wrapped_to_the_terminal_width_when_it_is_printed(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The formatter is set up when it first formats text (argparse makes one per
    ``add_argument`` without formatting anything, issue 48): the help still asks for the
    terminal's width then, and a subcommand's usage still names it."""
    narrow, wide = _help(argv, monkeypatch, 50), _help(argv, monkeypatch, 200)
    assert max(map(len, narrow.splitlines())) <= 50 < max(map(len, wide.splitlines()))
    prog = " ".join(["compatkit", *argv[:-1]])
    assert narrow.startswith(f"usage: {prog} [-h]"), narrow[:80]
