"""The source sizes of the modules the real job imports: P7-hundred's module sizes.

    python bench/module_sizes.py --python ENV/bin/python

ENV: speculators 0.3.0 + vLLM 0.16.0 (``nox -s bench`` builds it under .nox/_envs). Imports
what the hidden-states generator imports, in that interpreter, and prints the count, the
median and mean, and the 100 quantiles (``(i + 0.5) / 100``) of the sizes in bytes of every
``.py`` file it loaded: bench/runtime_import.py's ``REAL_SIZES``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

JOB = "speculators.data_generation.vllm_hidden_states_generator"
CHILD = f"""
import json, os, sys
before = set(sys.modules)
import {JOB}
sizes = sorted(
    os.path.getsize(m.__file__)
    for name, m in list(sys.modules.items())
    if name not in before and (getattr(m, "__file__", None) or "").endswith(".py")
    and os.path.isfile(m.__file__)
)
print(json.dumps(sizes))
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", type=Path, required=True, help="the real stack's python")
    args = parser.parse_args()
    proc = subprocess.run(
        [str(args.python), "-c", CHILD], capture_output=True, text=True, check=True
    )
    sizes: list[int] = json.loads(proc.stdout.strip().splitlines()[-1])
    n = len(sizes)
    quantiles = [sizes[min(n - 1, int((i + 0.5) * n / 100))] for i in range(100)]
    print(f"{n} modules; median {sizes[n // 2]} bytes, mean {sum(sizes) // n}")
    print("REAL_SIZES =", tuple(quantiles))
    return 0


if __name__ == "__main__":
    sys.exit(main())
