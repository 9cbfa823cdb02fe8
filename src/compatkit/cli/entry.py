"""The ``compatkit`` console script and ``python -m compatkit``.

Ctrl-C ends with one line, "compatkit: interrupted", and exit code 130, never a traceback:
while the CLI is still being imported and while a command runs (``main()``, after a
transaction has rolled back in its own ``finally`` blocks). Once the command is done, Ctrl-C
is ignored while the interpreter shuts down: the result stands (Python would otherwise end
the process by the signal, with no line). Before this module runs, a Ctrl-C is the
interpreter's, as for any Python program.
"""

import signal
import sys


def run() -> int:
    try:
        from compatkit.cli.main import main

        code = main()
    except KeyboardInterrupt:
        sys.stderr.write("compatkit: interrupted\n")
        code = 130  # compatkit.errors.EXIT_INTERRUPTED: its import may be what was interrupted
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return code
