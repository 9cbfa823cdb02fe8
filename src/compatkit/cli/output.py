"""What commands print: rich tables in a terminal, plain text in a pipe, JSON with ``--json``.

rich is imported only when stdout is a terminal: hooks and CI jobs, which read compatkit
through a pipe, get aligned plain text and do not pay rich's import time (benchmark P1).

A command gives its ``--json`` document once, from its result (:meth:`Output.result`); the
document is the command's own, never a dict other code writes into. An error raised out of a
command is its own document, made by compatkit.cli.main (``ok`` false, ``error``,
``problems``); a failure that is the command's result (a lint problem, a patch not proven) is
:meth:`Output.fail`: the result's document with ``ok`` false, ``error`` and ``problems``.

>>> out = Output(json_mode=True)
>>> out.result({"ok": True})
>>> out.line("hidden in JSON mode")
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from compatkit.errors import EXIT_FAILED

TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any


class Output:
    def __init__(self, json_mode: bool = False) -> None:
        self.json_mode = json_mode
        self._doc: dict[str, Any] | None = None
        self._console: Any = None
        self.rich = not json_mode and sys.stdout.isatty()

    @property
    def console(self) -> Any:
        if self._console is None:
            from rich.console import Console

            plain = bool(os.environ.get("NO_COLOR"))
            self._console = Console(
                highlight=False, soft_wrap=False, color_system=None if plain else "auto"
            )
        return self._console

    def result(self, doc: dict[str, Any]) -> None:
        """The command's ``--json`` document, from its result: given once, by the command."""
        if self._doc is not None:
            raise RuntimeError("a command gives its --json document once")
        self._doc = dict(doc)

    def fail(
        self,
        doc: dict[str, Any],
        message: str,
        problems: Sequence[str] = (),
        code: int = EXIT_FAILED,
    ) -> int:
        """A failure that is the command's result: ``doc`` with ``ok`` false, ``error`` and
        ``problems`` is the document, ``message`` and ``problems`` go to stderr as an
        error's do; returns the exit code (1: the failure was found, not a usage error)."""
        self.result({**doc, "ok": False, "error": message, "problems": list(problems)})
        error(message, problems)
        return code

    def line(self, text: str, style: str | None = None) -> None:
        if self.json_mode:
            return
        if style is None or os.environ.get("NO_COLOR") or not sys.stdout.isatty():
            print(text)
        else:
            self.console.print(text, style=style, markup=False)

    def lines(self, lines: Sequence[tuple[str, str | None]]) -> None:
        """Several :meth:`line` calls: (text, style) pairs."""
        for text, style in lines:
            self.line(text, style)

    def table(
        self, title: str | None, columns: Sequence[str], rows: Sequence[Sequence[str]]
    ) -> None:
        if self.json_mode:
            return
        if not self.rich:
            print(plain_table(title, columns, rows))
            return
        from rich.table import Table

        floors = _floors(columns, [[str(c) for c in r] for r in rows])
        table = Table(title=title, title_justify="left", show_lines=False)
        for col, floor in zip(columns, floors, strict=True):
            # wraps at spaces; a word is folded only when it is longer than IDENTIFIER
            table.add_column(col, overflow="fold", min_width=floor)
        for row in rows:
            table.add_row(*[_style(cell) for cell in row])
        needed = sum(floors) + 3 * len(floors) + 1  # rich's borders and padding
        if needed <= self.console.width:
            self.console.print(table)
        else:  # too narrow for the names: wider than the terminal (it wraps), never cut
            self.console.print(table, width=needed, crop=False)

    def renderable(self, obj: Any) -> None:
        if self.rich:
            self.console.print(obj)

    def emit(self, code: int = 0, command: str | None = None) -> None:
        """With --json, print the envelope: ``ok``, ``command``, then the command's document
        (keys sorted). ``ok`` is false when the exit code is not 0, whatever the document says."""
        if self.json_mode:
            import json  # only here: the commands run without --json never need it

            doc = envelope(self._doc or {}, code, command)
            print(json.dumps(doc, indent=2, default=str))


def notice(line: str) -> None:
    """Work under way, on stderr at once (``--json`` too): ``compatkit: LINE``."""
    print(f"compatkit: {line}", file=sys.stderr, flush=True)


def warning(line: str) -> None:
    """A warning on stderr (``--json`` too): ``compatkit: warning: LINE``."""
    print(f"compatkit: warning: {line}", file=sys.stderr, flush=True)


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun, singular for one.

    >>> count(1, "patch", "patches"), count(3, "file")
    ('1 patch', '3 files')
    """
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"


def error(message: str, problems: Sequence[str] = ()) -> None:
    """An error on stderr: ``compatkit: error: MESSAGE``, then one indented line a problem."""
    print(f"compatkit: error: {message}", file=sys.stderr)
    for problem in problems:
        print(f"  - {problem}", file=sys.stderr)


def envelope(payload: dict[str, Any], code: int, command: str | None) -> dict[str, Any]:
    """One shape for every command's JSON document.

    >>> envelope({"patchsets": [], "ok": True}, 1, "verify")
    {'ok': False, 'command': 'verify', 'patchsets': []}
    """
    ok = bool(payload.get("ok", True)) and code == 0
    rest = {k: _sorted(v) for k, v in sorted(payload.items()) if k not in ("ok", "command")}
    return {"ok": ok, "command": command, **rest}


def _sorted(value: Any) -> Any:
    """``value`` with every nested dict's keys in sorted order (json's sort_keys, but only
    below the envelope's first two keys)."""
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [_sorted(v) for v in value]
    return value


def plain_table(
    title: str | None,
    columns: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int | None = None,
) -> str:
    """Columns padded to their widest cell, the whole table (title included, wrapped at
    spaces) at most ``width`` columns wide
    ($COLUMNS, else 100): the widest columns are narrowed and their cells wrapped at spaces
    onto more lines, so a CI log stays readable (``--json`` has every text on one line). A
    word (a patchset name, a patch id, a version) is never split: a table whose words do not
    fit is wider than ``width``; only words longer than IDENTIFIER (a path, a hash) may be
    cut. Multi-line cells keep only their first line.

    >>> print(plain_table(None, ["id", "detail"], [["p1", "a b c d e f"]], width=10))
    id  detail
    --  ------
    p1  a b c
        d e f
    """
    limit = width or _plain_width()
    cells = [list(columns)] + [[str(c).splitlines()[0] if c else "" for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    floor = _floors(columns, cells[1:])
    while sum(widths) + 2 * (len(widths) - 1) > limit:
        i = max(range(len(widths)), key=lambda k: widths[k] - floor[k])
        if widths[i] <= floor[i]:
            break
        widths[i] -= 1
    lines = _wrap(title, limit) if title else []  # the title too: a long name + target
    for n, row in enumerate(cells):
        lines += _wrapped_row(row, widths)
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


IDENTIFIER = 40  # longer words are not names a user copies: they may be cut to fit


def _floors(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    """How narrow each column may get: its header and its longest word (up to IDENTIFIER)."""
    floors = []
    for i, col in enumerate(columns):
        words = [len(w) for row in rows for w in row[i].split() if len(w) <= IDENTIFIER]
        floors.append(max([len(col), 6, *words]))
    return floors


def _wrapped_row(row: list[str], widths: list[int]) -> list[str]:
    if all(len(c) <= w for c, w in zip(row, widths, strict=True)):
        return ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()]
    parts = [_wrap(c, w) for c, w in zip(row, widths, strict=True)]
    height = max(len(p) for p in parts)
    return [
        "  ".join(
            (p[k] if k < len(p) else "").ljust(w) for p, w in zip(parts, widths, strict=True)
        ).rstrip()
        for k in range(height)
    ]


def _wrap(text: str, width: int) -> list[str]:
    """textwrap's greedy wrap, never at a hyphen (a name like ``speculators-vllm016`` stays
    whole); an empty cell is one empty line.

    >>> _wrap("aa bb-cc dd", 6), _wrap("", 4)
    (['aa', 'bb-cc', 'dd'], [''])
    """
    import textwrap  # here: apply and revert print no table

    return textwrap.wrap(text, width, break_on_hyphens=False) or [""]


def _plain_width() -> int:
    """$COLUMNS, else the terminal's width, else 100 (a pipe: a CI log)."""
    import shutil  # here: only a plain table needs it

    return shutil.get_terminal_size((100, 24)).columns


_STYLES = {
    "applied": "green",
    "built in": "green",
    "pass": "green",
    "ok": "green",
    "not applied": "yellow",
    "excluded": "yellow",
    "outdated": "yellow",
    "drifted": "red",
    "fail": "red",
    "conflict": "red",
    "not applicable": "dim",
}


def _style(cell: str) -> Any:
    from rich.text import Text

    return Text(cell, style=_STYLES.get(cell.split(" (")[0], ""))
