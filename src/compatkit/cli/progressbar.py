"""Progress bars for long work: rich's, on standard error, in a terminal only.

An operation reports its work to a :class:`compatkit.model.progress.Reporter`;
:func:`reporter` gives a command the one it passes down: :class:`Bar` when standard error is
a terminal and the output is not ``--json``, else the reporter that shows nothing. So in a
pipe, in CI's logs (``CI`` set, as CI services set it), on a dumb terminal (``TERM=dumb``,
as rich reads it) and with ``--json`` not a byte of stdout or stderr changes. rich is
imported when the first task starts, never by a command that shows no bar (start-up time).
A bar goes away when its work ends (rich's ``transient``): what is left on the terminal is
what the command printed. Lines printed to a terminal's stdout while a bar runs appear above
it; a stdout that is no terminal is left alone.

>>> reporter(json_mode=True) is NONE
True
"""

from __future__ import annotations

import os
import sys

from compatkit.model.progress import NONE, Reporter, Task

TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any


def shown(json_mode: bool) -> bool:
    """Whether long work shows a bar: standard error is a terminal, not a dumb one, not
    ``--json`` and not CI."""
    if json_mode or os.environ.get("CI") or _dumb(os.environ.get("TERM", "")):
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # no stderr, or a closed one
        return False


def _dumb(term: str) -> bool:
    return term.lower() in ("dumb", "unknown")  # rich's Console.is_dumb_terminal


def reporter(json_mode: bool) -> Reporter:
    """A :class:`Bar` where :func:`shown`, else the reporter that shows nothing."""
    return Bar() if shown(json_mode) else NONE


class Bar(Reporter):
    """rich's progress display on standard error: one line per open task, the display
    started with the first task and removed when the last one ends."""

    def __init__(self) -> None:
        self._live: Any = None
        self._open = 0

    def task(self, what: str, total: int | None = None, nbytes: int | None = None) -> Task:
        if self._live is None:
            self._live = _display()
            self._live.start()
        self._open += 1
        counted = nbytes if nbytes is not None else total
        ident = self._live.add_task(what, total=counted, steps=0, of=total, bytes=nbytes)
        return _BarTask(self, ident, nbytes is not None)

    def _end(self, ident: Any) -> None:
        self._open -= 1
        if self._open:
            self._live.remove_task(ident)
        else:  # its last frame shows where the work ended; then rich removes the display
            self._live.stop()
            self._live = None


class _BarTask(Task):
    """A task's line: what it is told is added up here and handed to rich at most every
    :data:`_EVERY` seconds (hashing tells of every piece read, or of every batch its workers
    finish), and all of it when it ends, so its last frame shows where the work ended."""

    def __init__(self, bar: Bar, ident: Any, by_bytes: bool) -> None:
        import threading
        import time

        self._bar, self._ident, self._by_bytes = bar, ident, by_bytes
        self._lock = threading.Lock()  # a Reporter may be told from several threads
        self._clock = time.monotonic
        self._steps = self._pending = 0
        self._shown = self._clock()
        self._closed = False

    def advance(self, steps: int = 1, nbytes: int = 0) -> None:
        with self._lock:
            if self._closed:
                return
            self._steps += steps
            self._pending += nbytes if self._by_bytes else steps
            if self._clock() - self._shown >= _EVERY:
                self._show()

    def _show(self) -> None:
        self._bar._live.update(self._ident, advance=self._pending, steps=self._steps)
        self._pending, self._shown = 0, self._clock()

    def describe(self, what: str) -> None:
        with self._lock:
            if not self._closed:
                self._bar._live.update(self._ident, description=what)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._show()
        self._bar._end(self._ident)


_EVERY = 0.05  # seconds: rich draws ten frames a second


def _display() -> Any:
    """rich's Progress on standard error: spinner, what, bar, how much of the total, time
    left (80 columns hold the longest: hashing files and bytes)."""
    from rich.console import Console
    from rich.filesize import decimal
    from rich.progress import (
        BarColumn,
        Progress,
        ProgressColumn,
        SpinnerColumn,
        TextColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class Amount(ProgressColumn):
        """Steps of their total (``1,204/68,853``) and bytes of theirs (``2.1/7.3 GB``)."""

        def render(self, task: Any) -> Text:
            parts = []
            steps, of, nbytes = task.fields["steps"], task.fields["of"], task.fields["bytes"]
            if of is not None:
                parts.append(f"{steps:,}/{of:,}")
            if nbytes is not None:
                parts.append(f"{decimal(int(task.completed))}/{decimal(nbytes)}")
            return Text(" · ".join(parts), style="progress.download", no_wrap=True)

    console = Console(stderr=True, highlight=False)
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}", markup=False),
        BarColumn(bar_width=20),
        Amount(),
        TimeRemainingColumn(elapsed_when_finished=True),
        console=console,
        transient=True,
        redirect_stdout=sys.stdout.isatty(),
    )
