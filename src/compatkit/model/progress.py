"""How an operation tells of long work while it runs: a :class:`Reporter` of :class:`Task`\\ s.

An operation that can take more than a second or two (``pristine --all``'s hashing,
a throw-away environment's build, a wheel's download, a matrix cell) takes a ``reporter`` and
opens one task per piece of work, with its total when known (steps: files, patchsets; and
bytes). This base class shows nothing: it is what every caller gets unless it asks for more
(a pipe, ``--json``, CI's logs, the pytest plugin, Ray's). The command line passes a rich
progress bar on standard error in a terminal (:mod:`compatkit.cli.progressbar`); nothing here
imports rich or prints. A task's methods may be called from several threads at once.

>>> class Count(Reporter):
...     def __init__(self) -> None:
...         self.steps = self.nbytes = 0
...     def task(self, what: str, total: int | None = None, nbytes: int | None = None) -> Task:
...         reporter = self
...         class T(Task):
...             def advance(self, steps: int = 1, nbytes: int = 0) -> None:
...                 reporter.steps += steps
...                 reporter.nbytes += nbytes
...         return T()
>>> seen = Count()
>>> with seen.task("hashing", total=2, nbytes=10) as task:
...     task.advance(nbytes=4)
...     task.advance(1, 6)
>>> seen.steps, seen.nbytes
(2, 10)
>>> with NONE.task("building", total=2) as task:
...     task.advance()
"""

from __future__ import annotations

from types import TracebackType


class Task:
    """One piece of long work, as it goes; this base class shows nothing. A ``with`` block
    ends it (its bar is removed), however the work ends."""

    def advance(self, steps: int = 1, nbytes: int = 0) -> None:
        """``steps`` more of its total done (files, patchsets), ``nbytes`` more bytes."""

    def describe(self, what: str) -> None:
        """What it does now (the step under way: ``installing pytest``, a patchset's name)."""

    def close(self) -> None:
        """The work is over, done or not."""

    def __enter__(self) -> Task:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Reporter:
    """Where an operation reports long work; this base class shows nothing (:data:`NONE`)."""

    def task(self, what: str, total: int | None = None, nbytes: int | None = None) -> Task:
        """A new task: ``what`` it does, its ``total`` steps and ``nbytes`` bytes (None: not
        known; with neither, the bar shows only that it is under way)."""
        return _IDLE


_IDLE = Task()
NONE = Reporter()  # the default of every operation: nothing shown
