"""Every command of the command line and its options, written once.

compatkit.cli.parser builds argparse from this table (help, usage errors, shell completion) and
compatkit.cli.argv reads the plain forms of the ``fast`` commands from it without argparse
(start-up time, bench P1). A new option goes here and nowhere else; tests/test_argv.py checks
that every argparse action comes from the table and that the two readers agree on it.

Plain classes with ``__slots__`` and nothing imported: this module is read on every run.

>>> option = COMMANDS["apply"].options[1]
>>> option.flags, option.dest, option.kind, option.default
(('--exclude',), 'exclude', 'repeat', [])
>>> [c.name for c in COMMANDS.values() if c.fast]
['apply', 'revert', 'verify', 'recover', 'status', 'list', 'explain']
"""

from __future__ import annotations

KINDS = ("flag", "value", "repeat", "positional", "version")


class Option:
    """One argument of a command.

    ``kind``: "flag" (present or not), "value" (one value), "repeat" (a value each time it is
    given, collected in a list), "positional" (``flags`` is its one name), "version" (prints
    the version). ``type``: None (text), "path" (a ``pathlib.Path``) or "seconds" (a finite
    number above 0); a text ``default`` is read with it. ``nargs`` as argparse's: for a
    positional None (one), "?", "*" or "+"; for an option "?" (the value may be left out:
    then ``const``). ``default`` None: the kind's own (None, False for a flag, [] for a
    repeat or a "*" positional).
    """

    __slots__ = (
        "flags",
        "dest",
        "kind",
        "help",
        "metavar",
        "type",
        "default",
        "choices",
        "nargs",
        "const",
        "required",
    )

    def __init__(
        self,
        *flags: str,
        kind: str = "flag",
        help: str | None = None,
        dest: str | None = None,
        metavar: str | None = None,
        type: str | None = None,
        default: object = None,
        choices: tuple[str, ...] = (),
        nargs: str | None = None,
        const: str | None = None,
        required: bool = False,
    ) -> None:
        assert kind in KINDS, kind
        self.flags = flags
        longs = [f for f in flags if f.startswith("--")] or list(flags)
        self.dest = dest or longs[0].lstrip("-").replace("-", "_")
        self.kind = kind
        self.help = help
        self.metavar = metavar
        self.type = type
        self.default: object = [] if kind == "repeat" and default is None else default
        self.choices = choices
        self.nargs = nargs
        self.const = const
        self.required = required

    def __repr__(self) -> str:
        return f"Option({', '.join(map(repr, self.flags))}, kind={self.kind!r})"


class Command:
    """A subcommand: its name, its one-line help, its options in the order help lists them.
    ``fast``: compatkit.cli.argv reads its plain forms; ``hidden``: not listed in the help;
    ``usage``: argparse's usage line, when its own would mislead."""

    __slots__ = ("name", "help", "options", "fast", "hidden", "usage")

    def __init__(
        self,
        name: str,
        help: str | None,
        *options: Option,
        fast: bool = False,
        hidden: bool = False,
        usage: str | None = None,
    ) -> None:
        self.name, self.help, self.options = name, help, options
        self.fast, self.hidden, self.usage = fast, hidden, usage


def _positional(
    name: str, help: str | None = None, nargs: str | None = None, choices: tuple[str, ...] = ()
) -> Option:
    return Option(name, kind="positional", help=help, nargs=nargs, choices=choices)


# accepted before or after the command name (after it, only when given: argparse.SUPPRESS)
GLOBALS = (
    Option(
        "--python",
        kind="value",
        metavar="PY",
        help="target this interpreter's environment (default: compatkit's own)",
    ),
    Option(
        "--patchset-dir",
        kind="repeat",
        metavar="DIR",
        type="path",
        help="also look for patchsets in DIR (repeatable)",
    ),
    Option(
        "--config",
        kind="value",
        metavar="PYPROJECT",
        type="path",
        help="the pyproject.toml with [tool.compatkit] (default: the nearest one)",
    ),
    Option("--json", help="print one JSON document on stdout"),
)
# before the command name only
TOP = (Option("--version", kind="version"),)

_DEFAULT_SET = "default: the project's [tool.compatkit] set"
_PATCHSET = _positional("patchset")
_RUNTIME = Option(
    "--runtime",
    kind="value",
    metavar="DIR",
    type="path",
    help="check the runtime-mode hook in DIR (compatkit runtime install) instead",
)
_WHEEL_DIR = Option(
    "--wheel-dir",
    kind="repeat",
    metavar="DIR",
    type="path",
    help="look for wheels in DIR first (repeatable; also COMPATKIT_WHEEL_DIR)",
)


_CORE = (
    Command(
        "apply",
        "apply a patchset to the installed files, all or nothing",
        _positional("patchset", _DEFAULT_SET, nargs="?"),
        Option(
            "--exclude",
            kind="repeat",
            metavar="ID",
            help="leave this patch out of the series (repeatable)",
        ),
        Option("--force", help="apply despite a version mismatch or files that differ from RECORD"),
        Option("--dry-run", help="show what would change; write nothing"),
        fast=True,
    ),
    Command(
        "revert",
        "restore the original files, byte for byte",
        _PATCHSET,
        Option("--force", help="restore even files edited after apply"),
        fast=True,
    ),
    Command(
        "verify",
        "check that patchsets are fully applied and intact",
        _positional("patchset", _DEFAULT_SET, nargs="*"),
        Option(
            "--pristine",
            kind="value",
            metavar="DIST",
            nargs="?",
            const="",
            help="check a whole distribution against RECORD (with --all: every distribution)",
        ),
        Option("--all", help="with --pristine: every distribution"),
        Option(
            "--allow-empty",
            help="exit 0 when there is nothing to verify (default: that is a failure)",
        ),
        _RUNTIME,
        fast=True,
    ),
    Command(
        "recover",
        "roll back (or --discard) what an interrupted compatkit run left",
        _positional("distribution", "default: every one that holds a journal", nargs="*"),
        Option("--discard", help="delete the journal, restore nothing"),
        fast=True,
    ),
    Command(
        "status",
        "show each patch's state in the target environment",
        _positional(
            "patchset",
            "the patchsets to show, each patch's state (default: every known patchset)",
            nargs="*",
        ),
        _RUNTIME,
        fast=True,
    ),
    Command("list", "list the known patchsets", fast=True),
    Command(
        "explain",
        "tell the story of a patch, by id or by a pasted error message",
        _positional("query", "a patch id (patch-6, or PATCHSET:patch-6) or error text"),
        fast=True,
    ),
)

_CHECKS = (
    Command(
        "smoke",
        "run the patches' smoke tests with pytest in the target environment",
        _PATCHSET,
        Option(
            "--patch", kind="repeat", metavar="ID", help="only this patch's smoke test (repeatable)"
        ),
    ),
    Command(
        "upstream",
        "classify each patch against a newer release: upstream or still needed",
        _PATCHSET,
        Option(
            "--against",
            kind="value",
            metavar="DIST==VERSION",
            required=True,
            help="the release to check, e.g. vllm==0.17.1 (installed in a throw-away venv)",
        ),
        Option(
            "--with",
            kind="repeat",
            dest="with_",
            metavar="REQ",
            help=(
                "also install this into the throw-away environment (repeatable; not with --python)"
            ),
        ),
    ),
    Command(
        "constraints",
        "print a patchset's constraints as a file for pip/uv install -c",
        _PATCHSET,
    ),
    Command(
        "matrix",
        "version matrix: run one cell, build the report, list CI jobs",
        _positional("action", choices=("run", "report", "jobs")),
        _positional("cell", "the cell id (for run)", nargs="?"),
        Option(
            "--matrix", kind="value", type="path", default="matrix.toml", help="the matrix file"
        ),
        Option(
            "--results",
            kind="value",
            type="path",
            default="build/matrix",
            help="where cell results go (and the report is built from)",
        ),
        Option("--docs", kind="value", type="path", help="report: also write the Markdown here"),
    ),
    Command(
        "prove",
        "show each smoke test fails without its patch and passes with it",
        _PATCHSET,
        Option(
            "--report",
            kind="value",
            metavar="DIR",
            type="path",
            help="write the table as JSON and Markdown",
        ),
    ),
)

_AUTHORING = (
    Command(
        "diff",
        "turn hand edits of an installed distribution into a new patch",
        _positional("distribution"),
        Option(
            "--patchset", kind="value", required=True, metavar="NAME", help="patchset to add it to"
        ),
        Option(
            "--id", kind="value", required=True, metavar="ID", help="the new patch's id (patch-11)"
        ),
        Option("--title", kind="value", metavar="TEXT", help="the new patch's one-line title"),
        _WHEEL_DIR,
    ),
    Command(
        "lint",
        "check patchsets: headers, ids, series, smoke tests, and the pristine wheel",
        _positional("patchset", "names or directories (default: all)", nargs="*"),
        Option("--offline", help="skip the checks that need wheels"),
        _WHEEL_DIR,
    ),
    Command(
        "rebase",
        "port a patchset to a new upstream version with a three-way merge",
        _PATCHSET,
        Option("--to", kind="value", required=True, metavar="DIST==VERSION", help="the new target"),
        Option(
            "--name",
            kind="value",
            metavar="NAME",
            help="the new patchset's name (default: NAME-VERSION)",
        ),
        Option("--into", kind="value", metavar="DIR", type="path", help="where to write it"),
        _WHEEL_DIR,
    ),
)

_BUILD = (
    Command(
        "wheel",
        "build the target's wheel with a patchset built in (reproducible)",
        _PATCHSET,
        Option(
            "-o",
            "--out-dir",
            kind="value",
            metavar="DIR",
            type="path",
            default="dist",
            help="default: dist",
        ),
        Option("--offline", help="never download the pristine wheel"),
        Option(
            "--sha256",
            kind="value",
            metavar="HEX",
            help="the source wheel's sha256 (what proves it the release when it is not installed)",
        ),
        Option("--force", help="replace an output wheel that has other bytes"),
        _WHEEL_DIR,
    ),
    Command(
        "sbom",
        "write a CycloneDX SBOM of the environment, patches included",
        Option(
            "--format",
            kind="value",
            choices=("cyclonedx",),
            default="cyclonedx",
            help="the SBOM format: CycloneDX 1.6 JSON (default: cyclonedx, the only one)",
        ),
        Option(
            "--runtime",
            kind="repeat",
            dest="runtimes",
            metavar="DIR",
            type="path",
            help="include the patches the runtime folder DIR serves (repeatable)",
        ),
        Option("-o", "--output", kind="value", metavar="FILE", type="path", help="default: stdout"),
    ),
)

_RUNTIME_COMMANDS = (
    Command(
        "exec",
        "run a command with patchsets applied at import time (PATCHSET... -- CMD...)",
        _positional("patchset", "the patchsets to apply at import time", nargs="+"),
        Option(
            "--force",
            help="as apply --force: despite a version mismatch or files that differ from RECORD",
        ),
        usage="%(prog)s [-h] [options] PATCHSET [PATCHSET ...] -- COMMAND [ARG ...]",
    ),
    Command(
        "runtime",
        "install or remove a runtime-mode hook (sitecustomize.py, or --pth)",
        _positional("action", choices=("install", "uninstall")),
        _positional("patchset", "install: the patchsets to apply at import time", nargs="*"),
        Option("--dir", kind="value", required=True, type="path", help="the runtime directory"),
        Option(
            "--pth", help="install: start it from a .pth (and PEP 829 .start) file in site-packages"
        ),
    ),
)

_FLEET = (
    Command(
        "fleet",
        "status, verify, apply or revert on every alive node of a Ray cluster",
        _positional("action", choices=("status", "verify", "apply", "revert")),
        _positional("patchset", nargs="+"),
        Option(
            "--address",
            kind="value",
            metavar="ADDR",
            help="the Ray cluster (default: $RAY_ADDRESS)",
        ),
        Option(
            "--timeout",
            kind="value",
            metavar="S",
            type="seconds",
            default=600.0,
            help="wait at most S seconds for every node, above 0 (default: %(default)g)",
        ),
        Option(
            "--force",
            help="apply: as apply --force (a version mismatch, files that differ from RECORD)",
        ),
        Option(
            "--keep-going",
            help="apply: keep it on the nodes it reached when another node fails (default: revert)",
        ),
    ),
    Command(
        "completion",
        "print a bash or zsh completion script",
        _positional("shell", choices=("bash", "zsh")),
    ),
    # names for shell completion, run by the completion scripts
    Command("_names", None, _positional("kind", choices=("patchsets", "ids")), hidden=True),
)

# in the order the help lists them
COMMANDS = {
    c.name: c
    for group in (_CORE, _CHECKS, _AUTHORING, _BUILD, _RUNTIME_COMMANDS, _FLEET)
    for c in group
}
