"""Benchmark P5: what a warm ``apply`` and ``revert`` import, pinned (issue 48).

The read-only commands' lists (test_startup.py, test_startup_paths.py) name what must stay off
their path; the two commands that write are pinned whole instead. Each is run through the
console script's entry (``compatkit.cli.entry.run``) in the demo venv with ``--python`` (as
the benchmark runs it), and every module it loads beyond the interpreter's start is compared:

- compatkit's own modules below ``cli/`` exactly (:data:`OWN`); ``cli/`` itself only as far as
  the command's module goes (its parser's layout is cli's business);
- every other module by its top-level package, against a closed list of what an apply or a
  revert may load (:data:`STDLIB` and packaging for apply's PEP 440 check), which holds each
  supported Python's names: a new top-level import anywhere on the path fails here, and so does
  one of :data:`NEVER` (what ``packaging.utils`` pulled in for a distribution's name, the rich
  console, ...).

A change that needs a new module on this path adds it here, with the reason, and measures it
(docs/benchmarks.md, P5).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from test_startup import _env, pythonpath

from helpers import Demo

# compatkit below cli/: what an apply and a revert need, and nothing else
SHARED = {
    "compatkit", "compatkit.atomic", "compatkit.bounded", "compatkit.errors",
    "compatkit.value", "compatkit.env",
    "compatkit.env.plan", "compatkit.env.session", "compatkit.env.state", "compatkit.env.target",
    "compatkit.env.txn", "compatkit.load", "compatkit.load.cache", "compatkit.load.config",
    "compatkit.load.registry", "compatkit.load.trust", "compatkit.model",
    "compatkit.model.answers", "compatkit.model.journal",
    "compatkit.model.names", "compatkit.model.ownership",
    "compatkit.model.paths", "compatkit.model.records", "compatkit.model.action",
    "compatkit.model.startup_code", "compatkit.ops",
    # issue 46: every write through folder descriptors (beneath.Tree), another user's
    # environment refused (owners); issue 47: the rollback checks out of txn (diskcheck)
    "compatkit.env.beneath", "compatkit.env.owners", "compatkit.env.diskcheck",
}  # fmt: skip
# what reading and applying a patch needs: the diff reader, the patchset model (a patch file
# that is a mail: model.mail, re only) and the hunk engine (engine.lines, issue 46: a file as
# the hunks see it, its bytes and line starts, re only)
PATCHES = {
    "compatkit.model.diff", "compatkit.model.patchset", "compatkit.model.mail",
    "compatkit.engine", "compatkit.engine.hunks", "compatkit.engine.lines",
}  # fmt: skip
OWN = {
    # apply checks the target (requirements, drift) and validates the patchset it loads
    "apply": SHARED
    | PATCHES
    | {"compatkit.ops.apply", "compatkit.env.checks", "compatkit.load.validate"},
    # revert reads the state it undoes: no patchset is loaded, validated or checked, and no
    # patch is read (issue 48: env.plan and load.registry import them where apply uses them)
    "revert": SHARED | {"compatkit.ops.revert"},
}

# the standard library's top-level modules either command may load on 3.10 to 3.13: the
# interpreter's own (gc, importlib), the CLI (argparse with gettext and locale; pathlib with
# fnmatch, ntpath, urllib and ipaddress), re and what it imports (enum, functools, collections,
# ...), json (the state, the journal's index), ctypes (syncfs), fcntl (the lock), hashlib, base64
# and csv (RECORD's hashes and rows, issue 47: public modules, no second implementation), hmac
# (the start-up cache's MAC), bisect (numbering RECORD lines), signal (cli.entry's handlers)
STDLIB = {
    "__future__", "_blake2", "_collections", "_ctypes", "_functools", "_json", "_locale",
    "_operator", "_hashlib", "hashlib", "hmac", "base64", "csv", "_csv",
    "signal", "_signal", "_sre", "_struct", "argparse", "binascii", "bisect",
    "_bisect", "collections", "contextlib", "copyreg", "ctypes", "enum", "errno", "fcntl",
    "fnmatch", "functools", "gc", "gettext", "importlib", "ipaddress", "itertools", "json",
    "keyword", "locale", "math", "ntpath", "operator", "pathlib", "re", "reprlib",
    "sre_compile", "sre_constants", "sre_parse", "struct", "types", "urllib", "warnings",
    "_weakrefset", "weakref", "posixpath", "stat", "_stat", "os", "abc", "_abc", "io",
    "glob", "grp", "pwd",  # pathlib from 3.13
}  # fmt: skip
# apply's PEP 440 check asks packaging itself (docs/security.md, "The cache"); it needs typing,
# and from Python 3.13 packaging.version decorates with warnings.deprecated, which imports
# inspect (with ast, dis and tokenize): packaging's cost, not compatkit's
PACKAGING = {"packaging", "typing", "_typing"}
DEPRECATED = {
    "inspect", "ast", "_ast", "dis", "opcode", "_opcode", "_opcode_metadata", "token",
    "tokenize", "_tokenize",
}  # fmt: skip
ALLOWED = {
    "apply": STDLIB | PACKAGING | (DEPRECATED if sys.version_info >= (3, 13) else set()),
    "revert": STDLIB,
}

# never on either path: packaging.utils and what its packaging.tags imports (compatkit.model.names
# normalizes names), the rich console, the modules only other commands need, and shutil (with
# zlib, bz2 and lzma): argparse asks it for the terminal's width only when help is formatted
# (cli.parser's formatter, issue 48); model.results, whose enums cost an import their building
# (Action, all that apply and revert report, is in model.action)
NEVER = (
    "shutil", "zlib", "bz2", "lzma",
    "compatkit.model.results",  # the reported states' enums: apply and revert's is model.action
    "packaging.utils", "packaging.tags", "packaging.requirements", "packaging.markers",
    "logging", "platform", "subprocess", "sysconfig", "threading", "rich",
    "textwrap", "tomllib", "tomli", "email", "dataclasses", "inspect", "tempfile", "zipfile",
    "importlib.metadata", "compatkit.cli.progressbar",
)  # fmt: skip

RUN = """
import sys
before = set(sys.modules)
from compatkit.cli.entry import run
sys.argv[0] = "compatkit"
code = run()
print("LOADED", " ".join(sorted(set(sys.modules) - before)), file=sys.stderr)
sys.exit(code)
"""


def _loaded(demo: Demo, tmp_path: Path, *args: str) -> list[str]:
    env = {**_env(), "PYTHONPATH": pythonpath(tmp_path)}
    env["COMPATKIT_CACHE_DIR"] = str(tmp_path / "cache")
    proc = subprocess.run(
        [demo.venv.python, "-c", RUN, "--python", demo.venv.python,
         "--patchset-dir", str(demo.patchsets), *args],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("LOADED")]
    return lines[-1].split()[1:]


def test_apply_and_revert_import_only_their_pinned_modules(demo: Demo, tmp_path: Path) -> None:
    """A warm apply and revert of the demo patchset, each against its pinned set."""
    _loaded(demo, tmp_path, "apply", "demo-fix")  # fills the start-up cache (TOML, probe)
    _loaded(demo, tmp_path, "revert", "demo-fix")
    for command in ("apply", "revert"):
        loaded = _loaded(demo, tmp_path, command, "demo-fix")
        own = {m for m in loaded if m.startswith("compatkit") and not m.startswith("compatkit.cli")}
        assert own == OWN[command], (
            f"compatkit {command}: new {sorted(own - OWN[command])}, "
            f"gone {sorted(OWN[command] - own)}"
        )
        cli = {m for m in loaded if m.startswith("compatkit.cli.commands.")}
        assert cli == {f"compatkit.cli.commands.{command}"}, cli
        others = {m.split(".")[0] for m in loaded if not m.startswith("compatkit")}
        assert others <= ALLOWED[command], (
            f"compatkit {command} on Python {sys.version_info[:2]} imported "
            f"{sorted(others - ALLOWED[command])}"
        )
        watched = [n for n in NEVER if n not in ALLOWED[command]]  # inspect: see DEPRECATED
        never = sorted(m for m in loaded for n in watched if m == n or m.startswith(n + "."))
        assert never == [], f"compatkit {command} imported {never}"
