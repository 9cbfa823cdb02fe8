"""compatkit.cli.table, the one statement of every command and option, and the two readers built
from it: argparse (compatkit.cli.parser) and the fast reader without argparse
(compatkit.cli.argv). Every argparse action comes from the table; on command lines generated
from the table (every option of every command, in each form) and on random ones, where the fast
reader answers argparse gives the same namespace; where argparse would refuse or print help,
the fast reader leaves the line to it."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compatkit.cli import argv, parser, table
from compatkit.cli.parser import build_parser

PARSER = build_parser()
FAST = [name for name, c in table.COMMANDS.items() if c.get("fast")]

TOKENS = [
    *FAST,
    "lint",
    "exec",
    *sorted(
        {
            f
            for c in FAST
            for o in (*table.GLOBALS, *table.COMMANDS[c]["options"])
            if o["kind"] != "positional"
            for f in o["flags"]
        }
    ),
    "--help",
    "-h",
    "--version",
    "--pyth",
    "--json=1",
    "--python=/usr/bin/python3",
    "--patchset-dir=ps",
    "--exclude=patch-2",
    "--",
    "-",
    "-x",
    "",
    "speculators-vllm016",
    "patch-6",
    "Boolean value of Tensor",
    "a b",
]


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


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TOKENS), max_size=7))
def test_fast_reader_agrees_with_argparse(args: list[str]) -> None:
    fast = argv.parse(args)
    if fast is not None:
        assert _argparse(args) == vars(fast), args


@pytest.mark.parametrize(
    "args",
    [
        ["explain", "patch-6"],
        ["explain", "--json", "RuntimeError: Boolean value of Tensor"],
        ["status"],
        ["status", "a", "b", "--json"],
        ["--json", "status", "--runtime", "hook"],
        ["verify", "--allow-empty"],
        ["verify", "--pristine", "vllm"],
        ["verify", "--all", "--pristine="],
        ["list"],
        ["apply"],
        ["apply", "ps", "--exclude", "patch-2", "--exclude=patch-3", "--dry-run", "--force"],
        ["--python", "/venv/bin/python", "--patchset-dir", "a", "--patchset-dir", "b", "apply"],
        ["revert", "ps", "--force", "--python=/venv", "--config", "pyproject.toml"],
        ["recover", "--discard", "demo"],
        ["explain", ""],
    ],
)
def test_the_common_lines_are_read_fast_and_the_same(args: list[str]) -> None:
    fast = argv.parse(args)
    assert fast is not None, args
    assert vars(fast) == _argparse(args)
    assert all(isinstance(p, Path) for p in fast.patchset_dir)


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--help"],
        ["status", "-h"],
        ["--version"],
        ["explain"],  # argparse's usage error
        ["revert", "a", "b"],
        ["verify", "a", "--json", "b"],  # positionals split by an option
        ["status", "--pyth", "x"],  # an abbreviation
        ["status", "--python"],  # a value missing
        ["status", "--python", "-x"],
        ["apply", "--force=1"],
        ["--patchset-dir", "a", "status", "--patchset-dir", "b"],  # argparse keeps only b
        ["exec", "ps", "--", "python"],
        ["lint"],
        ["explain", "--", "-x"],
    ],
)
def test_everything_else_is_left_to_argparse(args: list[str]) -> None:
    assert argv.parse(args) is None


def test_a_flag_on_both_sides_of_the_command_is_read_as_argparse_reads_it() -> None:
    args = ["--python", "a", "status", "--python", "b"]
    fast = argv.parse(args)
    assert fast is not None and fast.python == "b" and vars(fast) == _argparse(args)


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


@pytest.mark.parametrize("args,dest", list(generated_lines(FAST)), ids=" ".join)
def test_every_option_of_a_fast_command_is_read_fast_and_as_argparse_reads_it(
    args: list[str], dest: str
) -> None:
    fast = argv.parse(args)
    assert fast is not None, args
    assert vars(fast) == _argparse(args)
    assert _set(vars(fast), dest)


ALL = list(table.COMMANDS)


@pytest.mark.parametrize("args,dest", list(generated_lines(ALL)), ids=" ".join)
def test_every_option_of_every_command_reaches_argparse_from_the_table(
    args: list[str], dest: str
) -> None:
    found = _argparse(args)
    assert found is not None, args
    assert _set(found, dest)
    assert found["command"] in args


def test_the_fast_reader_agrees_with_argparse_on_any_command_marked_fast(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fast reader is not written for its seven commands: marked ``fast``, any command of
    the table is read as argparse reads it (or left to argparse: choices, required, seconds)."""
    for name, command in table.COMMANDS.items():
        monkeypatch.setitem(table.COMMANDS, name, {**command, "fast": True})
    read = 0
    for args, _ in generated_lines(ALL):
        fast = argv.parse(args)
        if fast is not None:
            read += 1
            assert vars(fast) == _argparse(args), args
    assert read > 200  # most lines are read fast, not left to argparse


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


def test_an_option_added_to_the_table_is_read_by_both_paths(
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
    args = ["status", "a", "--since", "yesterday", "--deep"]
    fast = argv.parse(args)
    assert fast is not None and fast.since == "yesterday" and fast.deep is True
    assert vars(fast) == _argparse(args, build_parser())
    assert vars(argv.parse(["status"]) or {})["since"] is None
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser("status").parse_args(["status", "--help"])
    assert re.search(r"\n  --since WHEN +only patches since WHEN\n", out.getvalue())
    assert "--deep" in out.getvalue()


def test_an_abbreviated_global_option_before_the_command_is_not_a_crash() -> None:
    """``--pyth x status``: argparse reads ``x`` as --python's value; the parser must be
    built for ``status``, not for ``x`` (it used to raise AttributeError, a traceback)."""
    ns = parser.parse(["--pyth", "x", "status"])
    assert ns is not None and ns.command == "status" and ns.python == "x"
    ns = parser.parse(["--patchset", "d", "list"])
    assert ns is not None and ns.command == "list" and ns.patchset_dir == [Path("d")]
