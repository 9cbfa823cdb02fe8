"""Issue 46 item 6: ``--json`` prints one document however the command ends: also on Ctrl-C
(exit 130) and on an internal error (exit 3), where it printed nothing. The command itself
raises (its module's ``run``), as a bug or a Ctrl-C inside it would."""

from __future__ import annotations

import json

import pytest

from compatkit.cli.commands import status
from helpers import run_cli


@pytest.mark.parametrize(
    ("raised", "code", "error"),
    [
        (KeyboardInterrupt(), 130, "interrupted"),
        (RuntimeError("boom"), 3, "internal error: RuntimeError: boom"),
    ],
    ids=["ctrl-c", "internal"],
)
def test_json_prints_one_document_however_the_command_ends(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    raised: BaseException,
    code: int,
    error: str,
) -> None:
    def run(*_: object) -> int:
        raise raised

    monkeypatch.setattr(status, "run", run)
    got, out, err = run_cli(capsys, "--json", "status")
    assert got == code
    assert json.loads(out) == {"ok": False, "command": "status", "error": error, "problems": []}
    assert err.splitlines()[0] == f"compatkit: {error}"
    got, out, _ = run_cli(capsys, "status")  # without --json: the line alone, as before
    assert (got, out) == (code, "")
