"""The argparse parser (compatkit.cli.parser, each command's ``add_arguments``): a line that
names a command (built with that command's subparser only) reads as the full parser reads it,
every option of every command and sub-verb reaches argparse in each form a user types it, and
a sub-verb of ``runtime``, ``matrix`` or ``fleet`` takes only its own options."""

from __future__ import annotations

import argparse
import contextlib
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from compatkit.cli import parser
from compatkit.cli.main import COMMANDS, build_parser, main

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


def _parse(args: list[str]) -> dict[str, object] | None:
    """What compatkit's own reading gives (a named command's parser only), as _argparse."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            ns = parser.parse(args, COMMANDS)
        except SystemExit:
            return None
    if ns is None:
        return None
    found = vars(ns)
    assert found.pop("command_line") == []
    return found


@pytest.mark.parametrize(
    "args",
    [
        ["explain", "patch-6"],
        ["explain", "--json", "RuntimeError: Boolean value of Tensor"],
        ["status"],
        ["status", "a", "b", "--json"],
        ["--json", "runtime", "status", "--dir", "hook"],
        ["runtime", "verify", "--dir=hook"],
        ["runtime", "--json", "install", "ps", "--dir", "hook", "--pth"],
        ["verify", "--allow-empty"],
        ["pristine", "vllm", "torch"],
        ["pristine", "--all", "-v"],
        ["list"],
        ["apply"],
        ["apply", "ps", "--exclude", "patch-2", "--exclude=patch-3", "--dry-run", "--force"],
        ["--python", "/venv/bin/python", "--patchset-dir", "a", "--patchset-dir", "b", "apply"],
        ["--python", "a", "status", "--python", "b"],
        ["--patchset-dir", "a", "status", "--patchset-dir", "b"],
        ["--patchset-dir", "a", "matrix", "run", "c1", "--patchset-dir", "b"],
        ["revert", "ps", "--force", "--python=/venv", "--config", "pyproject.toml"],
        ["recover", "--discard", "demo"],
        ["explain", ""],
        ["explain", "--", "-x"],
        ["fleet", "verify", "ps", "--timeout", "5"],
        ["fleet", "apply", "ps", "--keep-going", "--json"],
        ["matrix", "report", "--results", "r", "-o", "c.md"],
    ],
)
def test_a_named_command_reads_as_the_full_parser_reads_it(args: list[str]) -> None:
    found = _parse(args)
    assert found is not None, args
    assert found == _argparse(args), args
    assert all(isinstance(p, Path) for p in found["patchset_dir"])  # type: ignore[attr-defined]


# -- command lines generated from the real parser -----------------------------------------------


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def leaves(
    p: argparse.ArgumentParser = PARSER, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """(command path, its parser) for every command and sub-verb that takes no sub-verb."""
    subs = _subparsers(p)
    if path and not subs:
        yield path, p
    for name, sub in subs.items():
        yield from leaves(sub, (*path, name))


def _value(action: argparse.Action) -> str:
    if action.choices:
        return str(list(action.choices)[-1])
    return "5" if action.dest == "timeout" else f"v-{action.dest}"


def _forms(action: argparse.Action) -> Iterator[list[str]]:
    """The option in each form a user may type it."""
    for flag in action.option_strings:
        if action.nargs == 0:
            yield [flag]
            continue
        yield [flag, _value(action)]
        if flag.startswith("--"):
            yield [f"{flag}={_value(action)}"]
        if isinstance(action, argparse._AppendAction):
            yield [flag, _value(action), flag, "second"]


def generated_lines() -> Iterator[tuple[list[str], str]]:
    """(command line, the dest it sets) for every option of every command and sub-verb in each
    form, after the positionals and before them; the global options also before the name."""
    top = [a for a in PARSER._actions if a.option_strings and a.dest not in ("help", "version")]
    for path, sub in leaves():
        actions = [a for a in sub._actions if not isinstance(a, argparse._HelpAction)]
        base = [_value(a) for a in actions if not a.option_strings]
        needed = [s for a in actions if a.required and a.option_strings for s in next(_forms(a))]
        for action in actions:
            if not action.option_strings or action.required:
                continue
            for form in _forms(action):
                yield [*path, *base, *form, *needed], action.dest
                yield [*path, *form, *needed, *base], action.dest
        for action in top:
            for form in _forms(action):
                yield [*form, *path, *base, *needed], action.dest
        yield [*path, *base, *needed], "command"


def _set(namespace: dict[str, object] | None, dest: str) -> bool:
    """Whether the generated line gave ``dest`` a value (not the option's default)."""
    assert namespace is not None
    value = namespace[dest]
    return value not in (None, False, []) and not str(value).startswith(("dist", "matrix.toml"))


LINES = list(generated_lines())


@pytest.mark.parametrize(
    "args,dest", LINES, ids=lambda v: " ".join(v) if isinstance(v, list) else v
)
def test_every_option_of_every_command_reaches_argparse(args: list[str], dest: str) -> None:
    found = _parse(args)
    assert found is not None, args
    assert _set(found, dest)
    assert found["command"] in args
    assert found == _argparse(args), args


def test_the_lines_cover_every_sub_verb_and_its_own_options() -> None:
    paths = {" ".join(p) for p, _ in leaves()}
    assert {"runtime install", "runtime status", "matrix jobs", "fleet apply", "apply"} <= paths
    assert "runtime" not in paths and len(paths) == len(COMMANDS) - 3 + 4 + 3 + 4
    dests = {(a[1] if a[0] in ("runtime", "matrix", "fleet") else "", d) for a, d in LINES}
    assert ("install", "pth") in dests and ("apply", "keep_going") in dests


# -- each sub-verb its own options ----------------------------------------------------------


def _help(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main([*args, "--help"])
    assert exc.value.code == 0
    return capsys.readouterr().out


def test_a_sub_verbs_help_shows_only_its_own_options(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 47: ``runtime status --help`` once offered ``--pth``, install's option."""
    status = _help(capsys, "runtime", "status")
    assert status.startswith("usage: compatkit runtime status ") and "--dir" in status
    assert "--pth" not in status and "patchset [patchset" not in status
    assert "--pth" in _help(capsys, "runtime", "install")
    verify = _help(capsys, "fleet", "verify")
    assert "--timeout" in verify and "--force" not in verify and "--keep-going" not in verify
    assert "--force" in _help(capsys, "fleet", "apply")
    jobs = _help(capsys, "matrix", "jobs")
    assert "--matrix" in jobs and "--results" not in jobs and "--smoke-not-run" not in jobs
    report = _help(capsys, "matrix", "report")
    assert "--output" in report and "--smoke-not-run" not in report
    assert "--output" not in _help(capsys, "matrix", "run")
    top = _help(capsys, "runtime")
    assert all(verb in top for verb in ("install", "uninstall", "status", "verify"))


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (["runtime", "status", "--pth", "--dir", "d"], "unrecognized arguments: --pth"),
        (["runtime", "verify", "ps", "--dir", "d"], "unrecognized arguments: ps"),
        (["runtime", "uninstall", "ps", "--dir", "d"], "unrecognized arguments: ps"),
        (["runtime", "install", "--dir", "d"], "required: patchset"),
        (["runtime", "status"], "required: --dir"),
        (["runtime"], "required: action"),
        (["runtime", "stat", "--dir", "d"], "unknown choice for action 'stat' (did you mean"),
        (["matrix", "jobs", "--results", "r"], "unrecognized arguments: --results r"),
        (["matrix", "run", "c1", "-o", "r"], "unrecognized arguments: -o r"),
        (["matrix", "report", "--smoke-not-run", "x"], "unrecognized arguments: --smoke-not-run"),
        (["matrix", "run"], "required: cell"),
        (["fleet", "verify", "ps", "--keep-going"], "unrecognized arguments: --keep-going"),
        (["fleet", "status", "ps", "--force"], "unrecognized arguments: --force"),
        (["fleet", "apply", "ps", "--timeout", "nan"], "finite number of seconds"),
    ],
)
def test_argparse_checks_which_option_goes_with_which_sub_verb(
    capsys: pytest.CaptureFixture[str], argv: list[str], what: str
) -> None:
    """One line, exit 2 (docs/reference/exit-codes.md), pointing at the sub-verb's help."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith("compatkit: error: ") and what in err, err
    verbs = ("install", "uninstall", "status", "verify", "run", "report", "jobs", "apply")
    verb = [a for a in argv[1:2] if a in verbs]
    assert f"(see '{' '.join(['compatkit', argv[0], *verb])} --help')" in err, err


def test_an_abbreviated_global_option_before_the_command_is_not_a_crash() -> None:
    """``--pyth x status``: no abbreviation is taken (one meaning per flag), so it is a usage
    error naming the flag, never a traceback (it once raised AttributeError); the full names
    work."""
    for argv, flag in (
        (["--pyth", "x", "status"], "--pyth"),
        (["--patchset", "d", "list"], "--patchset"),
    ):
        with pytest.raises(parser.UsageExit) as exc:
            parser.parse(argv, COMMANDS)
        message = exc.value.message
        assert exc.value.code == 2 and "\n" not in message, message
        assert flag in message or "unknown command" in message, message
        # built with the named command's parser only, the list is still every command's
        listed = message.split("choose from ", 1)[-1].split(" (see")[0].split(", ")
        assert "unknown command" not in message or listed == [c for c in COMMANDS if c[0] != "_"]
    ns = parser.parse(["--python", "x", "status"], COMMANDS)
    assert ns is not None and ns.command == "status" and ns.python == "x"
    ns = parser.parse(["--patchset-dir", "d", "list"], COMMANDS)
    assert ns is not None and ns.command == "list" and ns.patchset_dir == [Path("d")]


def _help_at(argv: list[str], monkeypatch: pytest.MonkeyPatch, columns: int) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        parser.parse(argv, COMMANDS)
    return out.getvalue()


@pytest.mark.parametrize("argv", [["--help"], ["apply", "--help"]])
def test_help_is_wrapped_to_the_terminal_width_when_it_is_printed(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The formatter is set up when it first formats text (argparse makes one per
    ``add_argument`` without formatting anything, issue 48): the help still asks for the
    terminal's width then, and a subcommand's usage still names it."""
    narrow, wide = _help_at(argv, monkeypatch, 50), _help_at(argv, monkeypatch, 200)
    assert max(map(len, narrow.splitlines())) <= 50 < max(map(len, wide.splitlines()))
    prog = " ".join(["compatkit", *argv[:-1]])
    assert narrow.startswith(f"usage: {prog} [-h]"), narrow[:80]
