"""The activated venv (``VIRTUAL_ENV``), as seen by a compatkit installed as a tool.

A compatkit installed with ``uv tool install`` or ``pipx`` lives in an environment of its own;
run inside an activated venv, it targets that venv, as uv does. Any other compatkit targets
its own environment and names the active venv in its "not installed" line.

>>> active_venv() is None or isinstance(active_venv(), str)
True
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

_TOOL_MARKERS = ("uv-receipt.toml", "pipx_metadata.json")  # uv tool / pipx environments


def active_venv() -> str | None:
    """The activated venv when compatkit runs from a tool environment of its own (``uv tool
    install``, ``pipx``), as uv targets it; else None: compatkit's own environment."""
    venv = other_venv()
    here = Path(sys.prefix)
    if venv is None or not any((here / marker).is_file() for marker in _TOOL_MARKERS):
        return None
    return venv


def other_venv() -> str | None:
    """``VIRTUAL_ENV``, when it names a venv with an interpreter that is not compatkit's own."""
    venv = os.environ.get("VIRTUAL_ENV")
    if not venv or _same_prefix(venv) or not _interpreter_in(venv):
        return None
    return venv


def _same_prefix(venv: str) -> bool:
    return os.path.realpath(venv) == os.path.realpath(sys.prefix)


def _interpreter_in(venv: str) -> bool:
    return os.path.isfile(os.path.join(venv, "bin", "python")) or os.path.isfile(
        os.path.join(venv, "Scripts", "python.exe")
    )
