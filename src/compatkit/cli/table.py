"""Every command of the command line and its options, written once.

compatkit.cli.parser builds argparse from this table (parsing, help, usage errors, shell
completion). A new option goes here and nowhere else; tests/cli/test_parser.py checks that every
argparse action comes from the table. Plain dicts and tuples of constants, nothing imported:
this module is read on every run (CONTRIBUTING.md, "Start-up time").

An option (:class:`Option`): ``flags`` (for a positional, its one name); ``kind``: "flag"
(present or not), "value" (one value), "repeat" (a value each time it is given, collected in a
list), "positional", "version" (prints the version); ``type``: absent (text), "path" (a
``pathlib.Path``) or "seconds" (a finite number above 0), a text ``default`` is read with it;
``nargs`` as argparse's: for a positional absent (one), "?", "*" or "+", for an option "?"
(the value may be left out: then ``const``); ``default`` absent: the kind's own (None, False
for a flag, [] for a repeat or a "*" positional); ``dest``: absent, the last flag's name.

A command (:class:`Command`): ``help``, its ``options`` in the order help lists them;
``hidden``: not listed in the help; ``usage``: argparse's usage line, when its own would
mislead; ``module``: the module of ``compatkit.cli.commands`` whose ``run(args, ctx)`` runs
it (absent: the command's own name). compatkit.cli.main imports only that module.

>>> exclude = COMMANDS["apply"]["options"][1]
>>> exclude["flags"], dest(exclude), exclude["kind"]
(('--exclude',), 'exclude', 'repeat')
"""

from __future__ import annotations

TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Required, TypedDict

    class Option(TypedDict, total=False):
        flags: Required[tuple[str, ...]]
        kind: Required[str]
        dest: str
        nargs: str
        const: str
        choices: tuple[str, ...]
        required: bool
        type: str
        default: object
        metavar: str
        help: str

    class Command(TypedDict, total=False):
        help: Required[str | None]
        options: Required[tuple[Option, ...]]
        hidden: bool
        usage: str
        module: str


KINDS = ("flag", "value", "repeat", "positional", "version")


def module(name: str) -> str:
    """The module that runs the command ``name``: ``compatkit.cli.commands.<module>``."""
    return f"compatkit.cli.commands.{COMMANDS[name].get('module', name)}"


def dest(option: Option) -> str:
    """The attribute the option sets: ``dest``, else its last flag (``--wheel-dir``: wheel_dir)."""
    return option.get("dest") or option["flags"][-1].lstrip("-").replace("-", "_")


_DEFAULT_SET = "default: the project's [tool.compatkit] set"

# accepted before or after the command name (after it, only when given: argparse.SUPPRESS)
GLOBALS: tuple[Option, ...] = (
    {
        "flags": ("--python",),
        "kind": "value",
        "metavar": "PY",
        "help": "target this interpreter's environment (default: compatkit's own)",
    },
    {
        "flags": ("--patchset-dir",),
        "kind": "repeat",
        "type": "path",
        "metavar": "DIR",
        "help": "also look for patchsets in DIR (repeatable)",
    },
    {
        "flags": ("--config",),
        "kind": "value",
        "type": "path",
        "metavar": "PYPROJECT",
        "help": "the pyproject.toml with [tool.compatkit] (default: the nearest one)",
    },
    {"flags": ("--json",), "kind": "flag", "help": "print one JSON document on stdout"},
)
# before the command name only
TOP: tuple[Option, ...] = ({"flags": ("--version",), "kind": "version"},)
_PATCHSET: Option = {"flags": ("patchset",), "kind": "positional"}
_OFFLINE: Option = {
    "flags": ("--offline",),
    "kind": "flag",
    "help": "never download a wheel: only --wheel-dir's and the cache's",
}
_WHEEL_DIR: Option = {
    "flags": ("--wheel-dir",),
    "kind": "repeat",
    "type": "path",
    "metavar": "DIR",
    "help": "look for wheels in DIR first (repeatable; also COMPATKIT_WHEEL_DIR)",
}
# in the order the help lists them
COMMANDS: dict[str, Command] = {
    "apply": {
        "help": "apply a patchset to the installed files, all or nothing",
        "options": (
            {"flags": ("patchset",), "kind": "positional", "nargs": "?", "help": _DEFAULT_SET},
            {
                "flags": ("--exclude",),
                "kind": "repeat",
                "metavar": "ID",
                "help": "leave this patch out of the series (repeatable)",
            },
            {
                "flags": ("--force",),
                "kind": "flag",
                "help": "apply despite a version mismatch or files that differ from RECORD",
            },
            {
                "flags": ("--dry-run",),
                "kind": "flag",
                "help": "show what would change; write nothing",
            },
        ),
    },
    "revert": {
        "help": "restore the original files, byte for byte",
        "options": (
            _PATCHSET,
            {
                "flags": ("--force",),
                "kind": "flag",
                "help": "restore even files edited after apply",
            },
        ),
    },
    "verify": {
        "help": "check that patchsets are fully applied and intact",
        "options": (
            {"flags": ("patchset",), "kind": "positional", "nargs": "*", "help": _DEFAULT_SET},
            {
                "flags": ("--allow-empty",),
                "kind": "flag",
                "help": "exit 0 when there is nothing to verify (default: that is a failure)",
            },
        ),
    },
    "pristine": {
        "help": "check installed distributions against their RECORD, file by file",
        "options": (
            {
                "flags": ("distribution",),
                "kind": "positional",
                "nargs": "*",
                "metavar": "DIST",
                "help": "the distributions to check (or --all)",
            },
            {"flags": ("--all",), "kind": "flag", "help": "every distribution of the environment"},
            {
                "flags": ("-v", "--verbose"),
                "kind": "flag",
                "help": "name every file that is off (default: the first ten of each kind)",
            },
        ),
        "usage": "%(prog)s [-h] [options] (DIST [DIST ...] | --all) [-v]",
    },
    "recover": {
        "help": "roll back (or --discard) what an interrupted compatkit run left",
        "options": (
            {
                "flags": ("distribution",),
                "kind": "positional",
                "nargs": "*",
                "help": "default: every one that holds a journal",
            },
            {
                "flags": ("--discard",),
                "kind": "flag",
                "help": "delete the journal, restore nothing",
            },
        ),
    },
    "status": {
        "help": "show each patch's state in the target environment",
        "options": (
            {
                "flags": ("patchset",),
                "kind": "positional",
                "nargs": "*",
                "help": "the patchsets to show, each patch's state (default: every known patchset)",
            },
            {
                "flags": ("-v", "--verbose"),
                "kind": "flag",
                "help": "with no name, a table for every patchset, also those that do not apply",
            },
        ),
    },
    "list": {
        "help": "list the known patchsets",
        "options": (),
        "module": "status",
    },
    "explain": {
        "help": "tell the story of a patch, by id or by a pasted error message",
        "options": (
            {
                "flags": ("query",),
                "kind": "positional",
                "help": "a patch id (patch-6, or PATCHSET:patch-6) or error text",
            },
        ),
    },
    "smoke": {
        "help": "run the patches' smoke tests with pytest in the target environment",
        "options": (
            _PATCHSET,
            {
                "flags": ("--patch",),
                "kind": "repeat",
                "metavar": "ID",
                "help": "only this patch's smoke test (repeatable)",
            },
        ),
    },
    "upstream": {
        "help": "classify each patch against a newer release: upstream or still needed",
        "options": (
            _PATCHSET,
            {
                "flags": ("--target",),
                "kind": "value",
                "required": True,
                "metavar": "DIST==VERSION",
                "help": (
                    "the release to check, e.g. vllm==0.17.1 (installed in a throw-away venv); "
                    "DIST or DIST==latest: the newest release on the index"
                ),
            },
            {
                "flags": ("--with",),
                "kind": "repeat",
                "dest": "with_",
                "metavar": "REQ",
                "help": (
                    "also install this into the throw-away environment (repeatable; not with "
                    "--python)"
                ),
            },
            _OFFLINE,
            _WHEEL_DIR,
        ),
    },
    "constraints": {
        "help": "print a patchset's constraints as a file for pip/uv install -c",
        "options": (_PATCHSET,),
    },
    "matrix": {
        "help": "version matrix: run one cell, build the report, list CI jobs",
        "options": (
            {"flags": ("action",), "kind": "positional", "choices": ("run", "report", "jobs")},
            {
                "flags": ("cell",),
                "kind": "positional",
                "nargs": "?",
                "help": "the cell id (for run)",
            },
            {
                "flags": ("--matrix",),
                "kind": "value",
                "type": "path",
                "default": "matrix.toml",
                "help": "the matrix file",
            },
            {
                "flags": ("-o", "--output"),
                "kind": "value",
                "type": "path",
                "metavar": "FILE",
                "help": "report: also write the Markdown to the file FILE (the docs page)",
            },
            {
                "flags": ("--results",),
                "kind": "value",
                "type": "path",
                "metavar": "DIR",
                "help": (
                    "the folder of cell results (default: build/matrix): run writes the "
                    "cell's CELL.json there, report reads them and writes report.md and "
                    "report.json there"
                ),
            },
        ),
    },
    "prove": {
        "help": "show each smoke test fails without its patch and passes with it",
        "options": (
            _PATCHSET,
            {
                "flags": ("-o", "--output"),
                "kind": "value",
                "type": "path",
                "metavar": "DIR",
                "help": (
                    "the folder the table goes to, as JSON and Markdown (PATCHSET.json, "
                    "PATCHSET.md)"
                ),
            },
        ),
    },
    "diff": {
        "help": "turn hand edits of an installed distribution into a new patch",
        "options": (
            {"flags": ("distribution",), "kind": "positional"},
            {
                "flags": ("--patchset",),
                "kind": "value",
                "required": True,
                "metavar": "NAME",
                "help": "patchset to add it to",
            },
            {
                "flags": ("--id",),
                "kind": "value",
                "required": True,
                "metavar": "ID",
                "help": "the new patch's id (patch-11)",
            },
            {
                "flags": ("--title",),
                "kind": "value",
                "metavar": "TEXT",
                "help": "the new patch's one-line title",
            },
            {
                "flags": ("-o", "--output"),
                "kind": "value",
                "type": "path",
                "metavar": "DIR",
                "help": (
                    "the folder a new patchset is written in, also searched (default: "
                    "patchsets; an existing patchset stays where it is)"
                ),
            },
            _OFFLINE,
            _WHEEL_DIR,
        ),
    },
    "lint": {
        "help": "check patchsets: headers, ids, series, smoke tests, and the pristine wheel",
        "options": (
            {
                "flags": ("patchset",),
                "kind": "positional",
                "nargs": "*",
                "help": "names or directories (default: all)",
            },
            {"flags": ("--offline",), "kind": "flag", "help": "skip the checks that need wheels"},
            _WHEEL_DIR,
        ),
    },
    "rebase": {
        "help": "port a patchset to a new upstream version with a three-way merge",
        "options": (
            _PATCHSET,
            {
                "flags": ("--target",),
                "kind": "value",
                "required": True,
                "metavar": "DIST==VERSION",
                "help": "the new target release",
            },
            {
                "flags": ("--name",),
                "kind": "value",
                "metavar": "NAME",
                "help": "the new patchset's name (default: NAME-VERSION)",
            },
            {
                "flags": ("-o", "--output"),
                "kind": "value",
                "type": "path",
                "metavar": "DIR",
                "help": (
                    "the folder to write it in (default: beside the old patchset; patchsets "
                    "for a bundled one)"
                ),
            },
            _OFFLINE,
            _WHEEL_DIR,
        ),
    },
    "wheel": {
        "help": "build the target's wheel with a patchset built in (reproducible)",
        "options": (
            _PATCHSET,
            {
                "flags": ("-o", "--output"),
                "kind": "value",
                "type": "path",
                "default": "dist",
                "metavar": "DIR",
                "help": "the folder the wheel goes to (default: dist)",
            },
            _OFFLINE,
            {
                "flags": ("--sha256",),
                "kind": "value",
                "metavar": "HEX",
                "help": (
                    "the source wheel's sha256 (what proves it the release when it is not "
                    "installed)"
                ),
            },
            {
                "flags": ("--overwrite",),
                "kind": "flag",
                "help": "replace an output wheel of the same name that has other bytes",
            },
            _WHEEL_DIR,
        ),
    },
    "sbom": {
        "help": "write a CycloneDX SBOM of the environment, patches included",
        "options": (
            {
                "flags": ("--format",),
                "kind": "value",
                "choices": ("cyclonedx",),
                "default": "cyclonedx",
                "help": "the SBOM format: CycloneDX 1.6 JSON (default: cyclonedx, the only one)",
            },
            {
                "flags": ("--dir",),
                "kind": "repeat",
                "dest": "runtimes",
                "type": "path",
                "metavar": "DIR",
                "help": (
                    "include the patches the runtime folder DIR serves (as runtime --dir; "
                    "repeatable)"
                ),
            },
            {
                "flags": ("-o", "--output"),
                "kind": "value",
                "type": "path",
                "metavar": "FILE",
                "help": "the file the SBOM goes to (default: stdout)",
            },
        ),
    },
    "exec": {
        "help": "run a command with patchsets applied at import time (PATCHSET... -- CMD...)",
        "options": (
            {
                "flags": ("patchset",),
                "kind": "positional",
                "nargs": "+",
                "help": "the patchsets to apply at import time",
            },
            {
                "flags": ("--force",),
                "kind": "flag",
                "help": (
                    "as apply --force: despite a version mismatch or files that differ from RECORD"
                ),
            },
        ),
        "usage": "%(prog)s [-h] [options] PATCHSET [PATCHSET ...] -- COMMAND [ARG ...]",
    },
    "runtime": {
        "help": "install, check (status, verify) or remove a runtime-mode hook (sitecustomize.py)",
        "options": (
            {
                "flags": ("action",),
                "kind": "positional",
                "choices": ("install", "uninstall", "status", "verify"),
            },
            {
                "flags": ("patchset",),
                "kind": "positional",
                "nargs": "*",
                "help": "install: the patchsets to apply at import time",
            },
            {
                "flags": ("--dir",),
                "kind": "value",
                "required": True,
                "type": "path",
                "help": (
                    "the runtime directory (status: each patch's state in it; verify: exit 1 "
                    "unless the hook serves every patch)"
                ),
            },
            {
                "flags": ("--pth",),
                "kind": "flag",
                "help": "install: start it from a .pth (and PEP 829 .start) file in site-packages",
            },
        ),
    },
    "fleet": {
        "help": "status, verify, apply or revert on every alive node of a Ray cluster",
        "options": (
            {
                "flags": ("action",),
                "kind": "positional",
                "choices": ("status", "verify", "apply", "revert"),
            },
            {"flags": ("patchset",), "kind": "positional", "nargs": "+"},
            {
                "flags": ("--address",),
                "kind": "value",
                "metavar": "ADDR",
                "help": "the Ray cluster (default: $RAY_ADDRESS)",
            },
            {
                "flags": ("--timeout",),
                "kind": "value",
                "type": "seconds",
                "default": 600.0,
                "metavar": "S",
                "help": "wait at most S seconds for every node, above 0 (default: %(default)g)",
            },
            {
                "flags": ("--force",),
                "kind": "flag",
                "help": (
                    "apply: as apply --force (a version mismatch, files that differ from RECORD)"
                ),
            },
            {
                "flags": ("--keep-going",),
                "kind": "flag",
                "help": (
                    "apply: keep it on the nodes it reached when another node fails (default: "
                    "revert)"
                ),
            },
        ),
    },
    "completion": {
        "help": "print a bash or zsh completion script",
        "options": ({"flags": ("shell",), "kind": "positional", "choices": ("bash", "zsh")},),
    },
    # names for shell completion, run by the completion scripts
    "_names": {
        "help": None,
        "options": ({"flags": ("kind",), "kind": "positional", "choices": ("patchsets", "ids")},),
        "hidden": True,
        "module": "completion",
    },
}
