"""compatkit.cli.argv (the common command lines without argparse) against argparse itself: where
the fast reader answers, argparse gives the same namespace; where argparse would refuse or
print help, the fast reader leaves the line to it."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compatkit.cli import argv
from compatkit.cli.parser import build_parser

PARSER = build_parser()

TOKENS = [
    *argv.COMMANDS,
    "lint",
    "exec",
    *argv.GLOBALS,
    "--exclude",
    "--force",
    "--dry-run",
    "--pristine",
    "--all",
    "--allow-empty",
    "--runtime",
    "--discard",
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


def _argparse(args: list[str]) -> dict[str, object] | None:
    """argparse's namespace, or None where it exits (usage error, help, version)."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            ns = PARSER.parse_args(args)
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
