"""One meaning per flag (issue 35, item 6): the flags each command used to have are usage
errors now (exit 2, one line, no aliases: the package is unreleased), and the flags that
replace them reach the commands. The runs that write with them: test_wheelcheck (--overwrite),
test_diff (-o), test_rebase (--target, -o), test_smoke (prove -o, upstream --target),
test_matrix (matrix run --results), test_json_keys (matrix report --results -o)."""

from __future__ import annotations

import json

import pytest
from test_parser import leaves

from compatkit.cli import parser
from compatkit.cli.main import COMMANDS, build_parser, main

# (the old command line, the flag the error names)
OLD = [
    (["wheel", "demo-fix", "--out-dir", "dist"], "--out-dir"),
    (["wheel", "demo-fix", "--force"], "--force"),
    (["prove", "demo-fix", "--report", "r"], "--report"),
    (["matrix", "report", "--docs", "c.md"], "--docs"),
    (["matrix", "run", "c1", "-o", "r"], "-o"),  # a folder there: --results (issue 47)
    (["rebase", "demo-fix", "--target", "demo==2.0", "--to", "demo==2.0"], "--to"),
    (["rebase", "demo-fix", "--target", "demo==2.0", "--into", "d"], "--into"),
    (["upstream", "demo-fix", "--target", "demo==2.0", "--against", "demo==2.0"], "--against"),
    # no abbreviations: `verify --all` once meant `verify --allow-empty`
    (["verify", "--all"], "--all"),
    (["apply", "demo-fix", "--dry"], "--dry"),
    (["wheel", "demo-fix", "--over"], "--over"),
]


def _usage(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's usage errors exit as argparse does
        code = int(str(exc.code))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    ("argv", "flag"), OLD, ids=lambda v: " ".join(v) if isinstance(v, list) else v
)
def test_an_old_flag_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], argv: list[str], flag: str
) -> None:
    code, out, err = _usage(capsys, argv)
    assert code == 2 and err.count("\n") == 1 and flag in err, err
    assert err.startswith("compatkit: error: ") and out == ""
    code, out, _ = _usage(capsys, ["--json", *argv])
    doc = json.loads(out)
    assert code == 2 and doc["ok"] is False and doc["command"] == argv[0] and flag in doc["error"]


NEW = [
    (["wheel", "p", "-o", "d", "--overwrite"], {"output": "d", "overwrite": True}),
    (["wheel", "p", "--output", "d"], {"output": "d", "overwrite": False}),
    (["prove", "p", "-o", "r"], {"output": "r"}),
    (["matrix", "run", "c1", "--results", "r"], {"results": "r"}),
    (["matrix", "report", "--results", "r", "-o", "c.md"], {"output": "c.md", "results": "r"}),
    (["rebase", "p", "--target", "d==2", "-o", "x"], {"target": "d==2", "output": "x"}),
    (["upstream", "p", "--target", "d==2"], {"target": "d==2"}),
    (["diff", "d", "--patchset", "p", "--id", "p-1", "-o", "x"], {"output": "x"}),
]


@pytest.mark.parametrize(
    ("argv", "expected"), NEW, ids=lambda v: " ".join(v) if isinstance(v, list) else ""
)
def test_the_new_flags_reach_the_command(argv: list[str], expected: dict[str, object]) -> None:
    ns = parser.parse(argv, COMMANDS)
    assert ns is not None
    found = {k: getattr(ns, k) for k in expected}
    assert {
        k: v if v is None or isinstance(v, bool) else str(v) for k, v in found.items()
    } == expected


FETCHES = ("lint", "wheel", "diff", "rebase", "upstream")


def test_one_meaning_per_flag() -> None:
    """Every output is -o/--output; every command that fetches a wheel takes --wheel-dir and
    --offline; --force is never about an output; a target release is --target."""
    actions = {" ".join(path): sub._actions for path, sub in leaves()}
    flags = {name: {f for a in have for f in a.option_strings} for name, have in actions.items()}
    for name, have in flags.items():
        assert not have & {"--out-dir", "--report", "--into", "--docs", "--to", "--against"}, name
        assert ("--wheel-dir" in have) == ("--offline" in have) == (name in FETCHES), name
        if "-o" in have:
            assert "--output" in have, name
    for name in ("rebase", "upstream"):
        assert "--target" in flags[name]
    forces = [a for have in actions.values() for a in have if "--force" in a.option_strings]
    assert len(forces) == 4 and all("replace" not in str(a.help) for a in forces)


def test_completion_offers_the_new_flags_only(capsys: pytest.CaptureFixture[str]) -> None:
    code, script, _ = _usage(capsys, ["completion", "bash"])
    assert code == 0
    wheel = next(line for line in script.splitlines() if "_wheel_option_strings=" in line)
    assert "--output" in wheel and "--overwrite" in wheel and "--out-dir" not in wheel
    assert "--force" not in wheel
    for old in ("--against", "--into", "--report", "--docs", "--out-dir"):
        assert old not in script, old
    assert "_wheel___output_COMPGEN=_shtab_compgen_dirs" in script  # -o DIR: a folder
    assert "_sbom___output_COMPGEN=_shtab_compgen_files" in script  # -o FILE: a file


def test_dash_o_is_a_file_or_a_folder_and_its_help_says_which() -> None:
    """Issue 47: ``-o`` means one kind of thing per command (matrix run's folder is
    ``--results``, the folder matrix report reads), and its help names it."""
    seen = {}
    for path, sub in leaves(build_parser()):
        name = path[0]
        for action in sub._actions:
            if "-o" in action.option_strings:
                word = {"FILE": "file", "DIR": "folder"}.get(str(action.metavar))
                assert word is not None and word in str(action.help), (name, action.help)
                seen[name] = action.metavar
    assert seen["matrix"] == "FILE" and seen["wheel"] == "DIR" and seen["sbom"] == "FILE"


def test_completion_comes_from_the_real_parser(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 47: the script is shtab's reading of the parser the commands build (each
    module's add_arguments), sub-verbs included: every option of every command and sub-verb
    completes for it, and a sub-verb offers only its own (runtime status: no --pth)."""
    code, script, _ = _usage(capsys, ["completion", "bash"])
    assert code == 0
    offered = {
        line.split("=", 1)[0]: set(line.split("=(", 1)[1].rstrip(")").split())
        for line in script.splitlines()
        if line.startswith("_shtab_compatkit_") and "_option_strings=(" in line
    }
    for path, sub in leaves(build_parser()):
        if path[0].startswith("_"):  # hidden (_names): the scripts run it, nobody types it
            continue
        name = "_shtab_compatkit_" + "_".join(path) + "_option_strings"
        assert offered[name] == {f for a in sub._actions for f in a.option_strings}, name
    assert "--pth" in offered["_shtab_compatkit_runtime_install_option_strings"]
    assert "--pth" not in offered["_shtab_compatkit_runtime_status_option_strings"]
    assert "--keep-going" not in offered["_shtab_compatkit_fleet_verify_option_strings"]
