"""Which venv under .nox/_envs holds a stack: one name per interpreter + packages.

The noxfile's proof, matrix and pristine_real sessions build the venvs under these names;
bench/p4_matrix.py times a matrix cell in the one its session built. No imports but hashlib, so
the noxfile can load it before nox has anything installed.
"""

from __future__ import annotations

import hashlib


def stack_name(stack: list[str], python: str) -> str:
    """One venv per distinct stack (interpreter + packages): the proof session and every
    matrix cell that install the same packages share it (vLLM 0.33's is about 10 GB of
    hardlinks and a minute of uv even with a warm cache; CI's budget is 50 minutes).

    >>> stack_name(["b==1", "a==2"], "3.11") == stack_name(["a==2", "b==1"], "3.11")
    True
    """
    key = "\n".join([python, *sorted(p.replace(" ", "") for p in stack)])
    return f"stack-{hashlib.sha256(key.encode()).hexdigest()[:12]}"
