"""Run the benchmarks and write docs/benchmarks.md.

    python bench/run.py --python ENV/bin/python [--quick] [--out docs/benchmarks.md] [--only P2]

Every figure is a ratio to a reference measured in the same run (median of at least 5 runs in
full mode). ``--quick`` is what CI runs: one run each at small sizes, to prove the scripts work;
it asserts no timings.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

from common import Report, machine

# ruff: noqa: E501  (the targets table is Markdown)

TARGETS = """\
| id | what | reference | target |
|---|---|---|---|
| P1 | wall time of `status`, `verify`, `explain patch-6` with the patchset applied (peers beside them: `pre-commit --version`, `nox --version`, `pip --version`, no target); `explain patch-6` with the requirements unmet and from a tool venv with `--python`; the pytest plugin's overhead per session | `python -c pass` | ≤ 6× |
| P2 | `apply` + `revert` of 1,000 files, one hunk each, over a 1,000-module distribution | `git apply` + `git apply -R` | ≤ 2× |
| P3 | `pristine vllm` over all of vLLM 0.16.0 | `sha256sum` on both cores | ≤ 1.2× |
| P3-all | `pristine --all` over every distribution of the environment (each RECORD-listed file once) | `sha256sum` over the same files, `xargs -P <cores>` (cores: the process's CPU affinity) | ≤ 1.0× |
| P4 | warm re-run of the speculators 0.3.0 + vLLM 0.16.0 matrix cell | its smoke tests alone | ≤ 1.3× |
| P5 | `apply` + `revert` of a real upgrade diff: requests 2.31.0 → 2.32.3 as one patch (click and jinja2 as extra rows; peers beside each, where installed: socket-patch, patch-ng, patch-package-py, venv-patcher: compatkit's pair ≤ 1.25× socket-patch's (a Rust binary) and ≤ 1× each Python peer's; wall and CPU time) | `git apply` + `git apply -R` | ≤ 4× |
| P6 | `compatkit wheel speculators-vllm016`: the patched speculators 0.3.0 wheel | a re-zip of the same wheel | (reported) |
| P7 | runtime mode: re-import of speculators-vllm016's 2 patched modules through the hook | the same patched files imported normally | (reported) |
| P7-hundred | runtime mode, a whole process (start-up included) importing 100 modules with the real job's sizes (bench/module_sizes.py), 1 patched; `PYTHONPATH` and `--pth` forms (P7-hundred-tiny: 100 modules of 318 bytes, the worst case, reported) | the same process without the hook | ≤ 1.05× |

| G | growth with the environment (bench/growth.py): `status NAME` and `verify NAME` at 10, 100 and 400 distributions, 400 against 10; `apply` of a 3-file patch to a 15,000-file distribution; `pristine --all` and `sbom` per MiB and per distribution | the same command at 10 distributions (its CPU time beyond `python -c pass` of the same venv); the same patch on a 100-file distribution; `sha256sum` with `xargs -P <cores>` and `cat` of the metadata (floors, no target) | ≤ 1.1× (status, verify); ≤ 1.5× (apply) |

F1 (no target: a figure): `compatkit fleet verify` on a local two-node Ray cluster against one
plain `verify` of one node's environment.
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--python",
        type=lambda text: Path(text).absolute(),  # the venv's link, not what it points to
        required=True,
        help="the real-stack venv's python, with compatkit installed in it",
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--only", action="append", default=[])
    args = parser.parse_args()
    report = Report(quick=args.quick)
    where = machine()
    print(f"machine: {where}", flush=True)
    import fleet
    import growth
    import p1_p3
    import p2_apply
    import p4_matrix
    import p5_real
    import p6_wheel
    import runtime_import

    steps = {
        "P1": lambda: p1_p3.p1(report, args.python),
        "P2": lambda: p2_apply.run(report, args.python),
        "P2-n": lambda: p2_apply.scaling_only(report, args.python),
        "P3": lambda: p1_p3.p3(report, args.python),
        "P3-all": lambda: p1_p3.p3_all(report, args.python),
        "P4": lambda: p4_matrix.run(report),
        "P5": lambda: p5_real.run(report, args.python),
        "P6": lambda: p6_wheel.run(report, args.python),
        "P7": lambda: runtime_import.run(report, args.python),
        "F1": lambda: fleet.run(report),
        "G": lambda: growth.run(report),
    }
    for name, step in steps.items():
        if name in args.only or (not args.only and name != "P2-n"):  # P2-n: a part of P2
            step()
    table = report.markdown()
    print(table)
    if args.out:
        mode = "quick (CI smoke run, 1 run each)" if args.quick else "full (median of ≥5 runs)"
        args.out.write_text(
            f"# Benchmarks\n\nTargets (each a ratio to a reference measured in the same run):\n\n"
            f"{TARGETS}\nLast run: {datetime.date.today()}, {mode}, by `nox -s bench`.\n\n"
            f"Machine: {where}.\n\n{table}\n\n" + "\n".join(report.notes) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    sys.exit(main())
