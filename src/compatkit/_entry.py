"""The ``compatkit`` console script and ``python -m compatkit``.

Ctrl-C while the CLI is still being imported (its first ≈ 50 ms) ends quietly with exit code
130 instead of a traceback: nothing has been read or written yet. Once ``main()`` runs, its
own handler takes over (``KeyboardInterrupt`` → "compatkit: interrupted", 130).
"""

from __future__ import annotations

# the interpreter's own module: ``signal`` would import ``enum`` for its constants (≈ 2 ms)
import _signal  # type: ignore[import-not-found, unused-ignore]
import os


def _early_interrupt(signum: int, frame: object) -> None:
    os.write(2, b"compatkit: interrupted\n")
    os._exit(130)


def run() -> int:
    _signal.signal(_signal.SIGINT, _early_interrupt)
    from compatkit.cli import main

    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    return main()
