"""Issue 37 item 5: with no name, ``status`` gives a patchset that does not apply here one line;
the tables are for those that apply; ``-v`` shows every table; ``--json`` keeps every row."""

from __future__ import annotations

import json
import os
import re
import subprocess
from io import StringIO

import pytest

from compatkit.cli.output import Output
from compatkit.env.target import Environment
from helpers import Demo, write_patchset

MISFIT = "a-demo2: not applicable (needs demo==2.0, found demo 1.0)"
ABSENT = "speculators-vllm017: not applicable (needs speculators==0.3.0, not installed)"


def _misfit(demo: Demo) -> None:
    write_patchset(demo.patchsets, name="a-demo2", specifier="==2.0")


def test_a_patchset_that_does_not_apply_is_one_line(demo: Demo) -> None:
    _misfit(demo)
    code, out, err = demo.run("status")
    assert code == 0, err
    lines = out.splitlines()
    assert MISFIT in lines and ABSENT in lines, out
    assert "a-demo2 1.0.0 →" not in out and "speculators-vllm017 1." not in out, out
    assert "demo-fix 1.0.0 → demo==1.0 (found demo 1.0): not applied" in out, out
    assert "patch-1" in out  # the table of the one that applies


def test_verbose_and_a_name_show_the_table(demo: Demo) -> None:
    _misfit(demo)
    for args in (("status", "-v"), ("status", "--verbose"), ("status", "a-demo2")):
        code, out, err = demo.run(*args)
        assert code == 0, err
        assert "a-demo2 1.0.0 → demo==2.0 (found demo 1.0): not applicable" in out, (args, out)
        assert MISFIT not in out.splitlines(), out


def test_json_keeps_every_row(demo: Demo) -> None:
    _misfit(demo)
    code, out, err = demo.run("--json", "status")
    assert code == 0, err
    docs = {d["name"]: d for d in json.loads(out)["patchsets"]}
    rows = docs["a-demo2"]["patches"]
    assert rows and {(r["status"], r["detail"]) for r in rows} == {
        ("not applicable", "needs demo==2.0, found demo 1.0")
    }, rows
    assert docs["speculators-vllm017"]["patches"], docs["speculators-vllm017"]


class _Terminal(StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("width", [80, 60])
def test_one_line_on_a_terminal(demo: Demo, width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal: rich draws the tables and wraps the one line at spaces, names whole."""
    from rich.console import Console

    from compatkit.cli.commands.status import status
    from compatkit.load.registry import Registry
    from compatkit.ops import status as ops

    _misfit(demo)
    buffer = _Terminal()
    monkeypatch.setattr("sys.stdout", buffer)
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = Output()
    assert out.rich
    out._console = Console(file=buffer, width=width, color_system=None, highlight=False)
    env = Environment.for_python(demo.venv.python)
    assert status(ops.status(Registry([demo.patchsets]), env, []), out) == 0
    text = buffer.getvalue()
    assert max(len(line) for line in text.splitlines()) <= width, text
    assert " ".join(text.split()).count(MISFIT) == 1, text  # wrapped at spaces, nothing cut
    assert "speculators-vllm017: not applicable" in text, text
    assert not re.search(r"a-demo2 1\.0\.0|speculators-vllm017 1\.", text), text
    assert "demo-fix 1.0.0" in text and "patch-1" in text, text


@pytest.mark.parametrize("columns", ["", "60"])
def test_one_line_in_a_pipe(demo: Demo, columns: str) -> None:
    """Piped, each such patchset is one whole line, so ``grep``/``head`` read one per line."""
    _misfit(demo)
    env = {**os.environ, "COLUMNS": columns}
    proc = subprocess.run(demo.command("status"), capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert MISFIT in lines and ABSENT in lines, proc.stdout
    assert [line for line in lines if "not applicable (" in line] == [
        line for line in lines if ": not applicable" in line
    ], proc.stdout
    assert "demo-fix 1.0.0 → demo==1.0 (found demo 1.0): not applied" in proc.stdout
