"""The ``compatkit`` console script and ``python -m compatkit``.

Ctrl-C at any moment ends with one line, "compatkit: interrupted", and exit code 130, never a
traceback:

- from the moment this module is imported until the CLI is loaded (its first ≈ 50 ms), a
  handler writes the line and leaves at once: nothing is being read or written then;
- while ``main()`` runs, ``KeyboardInterrupt`` is raised as usual, so a transaction rolls back
  (its own ``finally`` blocks), and ``main()`` or :func:`run` turns it into the line and 130;
- once ``main()`` has returned, the command is done and its result stands: SIGINT is ignored
  while the interpreter shuts down (Python resets any other handler to the default there, and
  a Ctrl-C in that window ended the process by the signal, with no line).

Before this module's first line only the interpreter runs (its start-up and ``site``); a
SIGINT that early ends the process by the signal itself (a shell shows 130), with no output.
"""

# No ``from __future__ import annotations`` here: it loads the ``__future__`` module from
# disk before the handler below is in place. ``_signal`` is built into the interpreter
# (``signal`` would import ``enum`` for its constants, ≈ 2 ms) and ``os`` is loaded already.
import _signal  # type: ignore[import-not-found, unused-ignore]
import os

EXIT_INTERRUPTED = 130  # compatkit.errors.EXIT_INTERRUPTED, without importing it first


def _interrupted(signum: int, frame: object) -> None:
    os.write(2, b"compatkit: interrupted\n")
    os._exit(EXIT_INTERRUPTED)


_signal.signal(_signal.SIGINT, _interrupted)  # at import: the rest of start-up is covered


def run() -> int:
    _signal.signal(_signal.SIGINT, _interrupted)
    try:
        from compatkit.cli.main import main

        _signal.signal(_signal.SIGINT, _signal.default_int_handler)
        code = main()
    except KeyboardInterrupt:  # between loading the CLI and main()'s own handler
        _interrupted(_signal.SIGINT, None)
    # done: SIG_IGN is the one handler Python's finalization keeps (it resets the others)
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
    return code
