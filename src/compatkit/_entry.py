"""The ``compatkit`` console script and ``python -m compatkit``.

Ctrl-C while the CLI is still being imported (its first ≈ 50 ms) ends quietly with exit code
130 instead of a traceback: nothing has been read or written yet. Once ``main()`` runs, its
own handler takes over (``KeyboardInterrupt`` → "compatkit: interrupted", 130).
"""

from __future__ import annotations

import os
import signal


def _early_interrupt(signum: int, frame: object) -> None:
    os.write(2, b"compatkit: interrupted\n")
    os._exit(130)


def run() -> int:
    signal.signal(signal.SIGINT, _early_interrupt)
    from compatkit.cli import main

    signal.signal(signal.SIGINT, signal.default_int_handler)
    return main()
