"""The ``compatkit`` console script and ``python -m compatkit``.

Ctrl-C ends with one line, "compatkit: interrupted", and exit code 130, never a traceback:

- while the CLI and the command's module are being imported (the arguments are read then,
  nothing else), a handler writes the line (with ``--json``, a document too: ``ok`` false,
  ``error`` "interrupted") and leaves at once (nothing is written yet).
  ``KeyboardInterrupt`` cannot be relied on there: raised inside an import it can surface as
  another exception (Python 3.10 and 3.11 wrap an exception raised in ``__set_name__``, as
  ``ipaddress``'s ``cached_property`` does, in ``RuntimeError``) or be lost in importlib's
  lock callbacks;
- while a command runs, ``KeyboardInterrupt`` is raised as usual (one that lands where Python
  cannot raise it, as in importlib's lock callbacks, is delivered again), so a transaction
  rolls back in its own ``finally`` blocks, and becomes the line and 130 (and ``--json``'s
  document, compatkit.cli.main);
- once the command is done, Ctrl-C is ignored while the interpreter shuts down: the result
  stands (Python would otherwise end the process by the signal, with no line).

Before this module runs, a Ctrl-C is the interpreter's, as for any Python program.

The cyclic garbage collector is off while the CLI and the command's modules are imported: what
an import makes (modules, functions, classes) lives until the process exits, so collecting
during imports only walks it again and again. Once they are loaded, those objects are frozen
(``gc.freeze``: later collections skip them) and the collector runs as usual for the command's
work (:func:`_loaded`).
"""

import gc
import os
import signal
import sys

EXIT_INTERRUPTED = 130  # compatkit.errors.EXIT_INTERRUPTED, whose import may be interrupted


# --json's document of a run interrupted before its command was known (json not imported yet)
INTERRUPTED_DOC = (
    b'{\n  "ok": false,\n  "command": null,\n  "error": "interrupted",\n  "problems": []\n}\n'
)


def _interrupted(signum: int, frame: object) -> None:
    os.write(2, b"compatkit: interrupted\n")
    if "--json" in sys.argv[1:]:
        os.write(1, INTERRUPTED_DOC)
    os._exit(EXIT_INTERRUPTED)


def _unraisable(unraisable: "sys.UnraisableHookArgs") -> None:
    """A Ctrl-C that Python could not raise where it landed (in a callback of importlib's
    module locks, a ``__del__``...) is delivered again, to be raised in the command's own code
    a moment later, instead of being printed as "Exception ignored" with a traceback and lost.
    A signal sent to itself here would be raised in this hook (and lost again): a timer's
    signal arrives once the hook has returned."""
    if issubclass(unraisable.exc_type, KeyboardInterrupt):
        signal.signal(signal.SIGALRM, _raise_interrupt)
        signal.setitimer(signal.ITIMER_REAL, 0.001)
    else:
        sys.__unraisablehook__(unraisable)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _loaded() -> None:
    """The command's modules are imported: freeze what the imports made, collect from here,
    and let Ctrl-C raise ``KeyboardInterrupt`` from now on."""
    gc.freeze()
    gc.enable()
    signal.signal(signal.SIGINT, signal.default_int_handler)


def run() -> int:
    gc.disable()  # until _loaded
    signal.signal(signal.SIGINT, _interrupted)  # until _loaded
    sys.unraisablehook = _unraisable
    try:
        from compatkit.cli.main import main

        code = main(loaded=_loaded)
    except KeyboardInterrupt:
        sys.stderr.write("compatkit: interrupted\n")
        code = EXIT_INTERRUPTED
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return code
