"""Move each ``tests/test_*.py`` into ``tests/<layer>/`` (issue 35, item 9), and fix what names
a test's path.

Run from the repository root, on a clean tree: ``python tests/relayout.py`` (``--dry-run``
prints the moves and changes nothing). It is idempotent: a second run finds everything in
place and changes nothing. It exits 1 when it printed a warning (something left for a person:
a file it could not place, a line to rewrap), else 0. What it does:

- ``git mv`` each test file named in LAYERS to ``tests/<layer>/``, and each shared module named
  in HELPER_MODULES into the ``tests/helpers`` package; a ``Path(__file__)`` climb in a moved
  file gets one level more (its data folders, ``fuzz_corpus`` and ``explain_corpus``, stay in
  ``tests/``). A ``tests/test_*.py`` not in LAYERS stays put, with a warning: add it to LAYERS
  and run again.
- rewrites ``from conftest import X`` (a straggler from a branch merged late), ``from wheelkit
  import X`` and the other moved modules' imports to ``helpers`` in tests/ and bench/, and
  warns about a name imported from ``helpers`` that the package does not define (one still in
  conftest.py: move it to tests/helpers/__init__.py);
- replaces every ``tests/<old path>`` in the tracked text files (noxfile.py's RELIABILITY and
  sessions, pyproject.toml, README, docs/, CONTRIBUTING.md, bench/, the tests' own docstrings)
  by the new path, and adds CONTRIBUTING.md's "Where tests live" section once;
- sorts and formats the Python files it changed with ruff, when ruff is at hand.

Layer folders have no ``__init__.py``: pytest (``prepend`` import mode) puts each test's folder
and, through the rootdir's ``tests/conftest.py``, ``tests/`` itself on ``sys.path``, so
``helpers`` imports from every folder and test file names stay unique across folders.
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

# Where each test belongs: the layer of docs/architecture.md whose code it tests (model, engine,
# load, env, delivery, runtime, ops, integrations, cli), or one of the suites across layers:
# security (docs/security.md's attacks and trust rules), reliability (docs/reliability.md: crashes,
# journals, fuzzing, concurrency, faults), system (end to end on the real stack from PyPI),
# project (the repository itself: layout, the test run's own summary).
LAYERS: dict[str, str] = {
    # model: pure data
    "test_diff_model": "model",
    "test_diffstrict": "model",
    "test_patch_messages": "model",
    "test_patchset": "model",
    "test_results": "model",
    # engine: pure functions
    "test_engine": "engine",
    "test_search": "engine",
    # load: patchset folders, config, cache
    "test_validate": "load",
    "test_patchset_package": "load",
    # env: the target environment
    "test_atomic": "env",
    "test_plan": "env",
    "test_requirements": "env",
    "test_containment": "env",
    "test_bighash": "env",
    "test_targeted_reads": "env",  # (e-growth) reads only the targeted distribution
    # delivery: wheels and SBOMs
    "test_wheel": "delivery",
    "test_sbom": "delivery",
    # runtime mode
    "test_runtime": "runtime",
    "test_runtime_closed": "runtime",
    "test_runtime_real": "runtime",
    "test_statfacts": "runtime",
    # ops: one operation each
    "test_apply": "ops",
    "test_constraints": "ops",
    "test_diff": "ops",
    "test_lint": "ops",
    "test_matrix": "ops",
    "test_pristine_all": "ops",
    "test_rebase": "ops",
    "test_smoke": "ops",
    "test_startup_code": "ops",
    "test_upstream_removed": "ops",
    # integrations: pytest's and Ray's side
    "test_fleet": "integrations",
    "test_fleet_rollback": "integrations",
    "test_pytest_plugin": "integrations",
    "test_raycluster": "integrations",
    # cli: arguments, output, exit codes, start-up
    "test_bad_input": "cli",
    "test_cli": "cli",
    "test_json_keys": "cli",
    "test_newuser": "cli",
    "test_parser": "cli",
    "test_progress": "cli",  # (merged from f-progress) bars the CLI draws on stderr
    "test_flags": "cli",  # (b-cmds) one meaning per flag
    "test_project": "cli",
    "test_startup": "cli",
    "test_startup_answers": "cli",
    "test_startup_paths": "cli",
    "test_status_quiet": "cli",
    "test_ux": "cli",
    # security: attacks and the trust rule
    "test_bounded_reads": "security",
    "test_runtime_trust": "security",
    "test_security": "security",
    "test_trust": "security",
    "test_trust_cache": "security",
    "test_trust_patchset": "security",
    "test_wheelcheck": "security",
    # reliability: crashes, journals, fuzzing, concurrency, faults
    "test_concurrency": "reliability",
    "test_crash": "reliability",
    "test_exact_revert": "reliability",
    "test_faults": "reliability",
    "test_fuzz": "reliability",
    "test_interop": "reliability",
    "test_journal": "reliability",
    "test_roundtrip_property": "reliability",
    # system: end to end on the real stack
    "test_explain_real": "system",
    "test_real_speculators": "system",
    # project: the repository and the test run themselves
    "test_layout": "project",
    "test_relayout": "project",
    "test_route": "project",  # revert's route down the layers, traced by project/route.py
    "test_run_summary": "project",
}
# The modules tests import: into the tests/helpers package, or beside the only tests that use
# them (route.py imports test_layout). ("conftest": what tests imported from it is in
# helpers/__init__.py already; only stragglers' imports are rewritten.)
MODULES: dict[str, str] = {
    "wheelkit": "helpers",
    "reliability": "helpers",
    "raycluster": "helpers",
    "fuzzgen": "helpers",
    "bigfiles": "helpers",  # (d-stream) sparse files and peak memory, for test_bighash
    "route": "project",
}
HELPER_MODULES = tuple(name for name, folder in MODULES.items() if folder == "helpers")
STAY = {"conftest.py", "relayout.py"}  # tests/'s own files
SELF = {"relayout.py", "test_relayout.py"}  # their old paths are examples: never rewritten
DATA = {"explain_corpus", "fuzz_corpus"}  # data folders: stay in tests/, never rewritten
TEXT = {".py", ".md", ".toml", ".txt", ".cfg", ".ini", ".yml", ".yaml", ".json", ""}
SECTION = "## Where tests live"


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def _climb_one_more(text: str) -> str:
    """``Path(__file__)[.resolve()].parent...`` one folder further up (the file moved down)."""

    def deeper(match: re.Match[str]) -> str:
        climb = match.group(2)
        levels = climb.count(".parent") if match.group(3) is None else int(match.group(3)) + 1
        return f"{match.group(1)}.parents[{levels}]"

    pattern = r"(Path\(__file__\)(?:\.resolve\(\))?)((?:\.parent(?![s\w]))+|\.parents\[(\d+)\])"
    return re.sub(pattern, deeper, text)


def _fix_imports(text: str) -> str:
    """Imports of conftest and the moved modules → the helpers package."""
    text = re.sub(r"^(\s*)from conftest import", r"\1from helpers import", text, flags=re.M)
    for name in HELPER_MODULES:
        text = re.sub(
            rf"^(\s*)from {name} import", rf"\1from helpers.{name} import", text, flags=re.M
        )
        text = re.sub(rf"^(\s*)import {name}$", rf"\1from helpers import {name}", text, flags=re.M)
    return text


def _defined(module: Path) -> set[str]:
    """The top-level names a module defines (functions, classes, assignments, imports)."""
    names: set[str] = set()
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _unknown_helper_names(files: list[Path], helpers: Path) -> list[str]:
    """``from helpers import X`` where tests/helpers/__init__.py defines no X."""
    known = _defined(helpers / "__init__.py") | {p.stem for p in helpers.glob("*.py")}
    found = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "helpers":
                found += [f"{path}: {a.name}" for a in node.names if a.name not in known]
    return found


def _plan(tests: Path) -> tuple[list[tuple[Path, Path]], list[str]]:
    """(from, to) for every file still to move, and the warnings (files it cannot place)."""
    moves: list[tuple[Path, Path]] = []
    warnings: list[str] = []
    for path in sorted(tests.glob("*.py")):
        if path.name in STAY:
            continue
        if path.stem in LAYERS:
            moves.append((path, tests / LAYERS[path.stem] / path.name))
        elif path.stem in MODULES:
            moves.append((path, tests / MODULES[path.stem] / path.name))
        else:
            kind = "a test file" if path.name.startswith("test_") else "a module"
            warnings.append(f"not placed: {path} ({kind} not in LAYERS or MODULES)")
    for stem, layer in sorted(LAYERS.items()):
        if not (tests / f"{stem}.py").exists() and not (tests / layer / f"{stem}.py").exists():
            warnings.append(f"missing: {stem}.py is in LAYERS but neither in tests/ nor {layer}/")
    return moves, warnings


def _renames(tests: Path) -> dict[str, str]:
    """Every old path → new path (done now or by an earlier run), relative to the root."""
    done = {f"{tests}/{stem}.py": f"{tests}/{layer}/{stem}.py" for stem, layer in LAYERS.items()}
    for name, folder in MODULES.items():
        done[f"{tests}/{name}.py"] = f"{tests}/{folder}/{name}.py"
    return {old: new for old, new in done.items() if Path(new).exists()}


def _fix_mentions(renames: dict[str, str], warnings: list[str]) -> list[Path]:
    """``tests/test_x.py`` → ``tests/<layer>/test_x.py`` in every tracked text file; a line
    the longer path takes past 100 columns is a warning (ruff's limit; the docs keep it too)."""
    if not renames:
        return []
    pattern = re.compile(
        r"(?<![\w.-])(" + "|".join(re.escape(old) for old in sorted(renames)) + r")(?![\w])"
    )
    changed = []
    for name in _git("ls-files").splitlines():
        path = Path(name)
        if path.suffix not in TEXT or path.name in SELF or not path.is_file():
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        new = pattern.sub(lambda m: renames[m.group(1)], text)
        if new != text:
            path.write_text(new)
            changed.append(path)
            for number, (before, after) in enumerate(
                zip(text.split("\n"), new.split("\n"), strict=True)
            ):
                if path.suffix != ".py" and len(after) > 100 >= len(before):
                    warnings.append(f"now over 100 columns, rewrap: {path}:{number + 1}")
    return changed


def _cross_folder_imports(files: list[Path], tests: Path) -> list[str]:
    """A test folder's module imported from another folder: pytest puts a folder on sys.path
    only when it imports a test there, so such an import fails when that folder runs alone."""
    where = {p.stem: p.parent for p in tests.glob("*/*.py") if not any(x in DATA for x in p.parts)}
    found = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module.split(".")[0]]
            elif isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            for name in names:
                folder = where.get(name)
                if folder is not None and folder != path.parent and folder.name != "helpers":
                    found.append(f"cross-folder import: {path} imports {name} from {folder}")
    return found


def _contributing_section() -> str:
    lines = [
        SECTION,
        "",
        "`tests/<layer>/` holds the tests of one layer of docs/architecture.md (model, engine,",
        "load, env, delivery, runtime, ops, integrations, cli); the suites across layers have",
        "their own folders: security (docs/security.md's attacks), reliability",
        "(docs/reliability.md: crashes, journals, fuzzing, concurrency, faults), system (end to",
        "end on the real stack) and project (the repository itself: its layout, the route of a",
        "command down the layers, the test run's summary). What tests share is the",
        "`tests/helpers` package (`from helpers import ...`); `tests/conftest.py` holds only",
        "fixtures and hooks; a module a few tests of one folder share sits in that folder. A test",
        "file's name is unique across the folders; a new one goes in the folder of the layer",
        "whose code it tests.",
        "",
    ]
    return "\n".join(lines)


def _add_section() -> bool:
    path = Path("CONTRIBUTING.md")
    if not path.exists() or SECTION in path.read_text():
        return False
    text = path.read_text()
    anchor = "## The fast subset"
    section = _contributing_section() + "\n"
    text = text.replace(anchor, section + anchor, 1) if anchor in text else text + "\n" + section
    path.write_text(text)
    return True


def _ruff(files: list[Path], warnings: list[str]) -> str:
    """Sort the imports of and format the Python files changed; a line still over ruff's
    limit (a comment or docstring a longer path pushed past it) is a warning."""
    ruff = shutil.which("ruff") or (
        str(Path(".venv/bin/ruff")) if Path(".venv/bin/ruff").exists() else None
    )
    names = [str(p) for p in files if p.suffix == ".py" and p.exists()]
    if not names:
        return "ruff: nothing to format"
    if ruff is None:
        warnings.append("ruff not found: run `ruff check --fix` and `ruff format` on tests/")
        return "ruff: not run"
    subprocess.run([ruff, "check", "-q", "--select", "I", "--fix", *names], check=False)
    subprocess.run([ruff, "format", "-q", *names], check=False)
    long = [ruff, "check", "-q", "--select", "E501", "--output-format", "concise", *names]
    found = subprocess.run(long, capture_output=True, text=True, check=False).stdout
    warnings += [f"rewrap: {line}" for line in found.splitlines() if line.strip()]
    return f"ruff: imports sorted and formatted in {len(names)} files"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--dry-run", action="store_true", help="print the moves, change nothing")
    args = parser.parse_args(argv)
    tests = Path("tests")
    if not (tests / "conftest.py").is_file() or not Path("pyproject.toml").is_file():
        print("relayout: run it from the repository root (tests/conftest.py not found)")
        return 2
    moves, warnings = _plan(tests)
    for old, new in moves:
        print(f"{'would move' if args.dry_run else 'moved'} {old} -> {new}")
    if args.dry_run:
        for line in warnings:
            print(f"relayout: warning: {line}")
        return 0
    changed: list[Path] = []
    for old, new in moves:
        new.parent.mkdir(exist_ok=True)
        _git("mv", str(old), str(new))
        text = new.read_text()
        fixed = _climb_one_more(text)
        if fixed != text:
            new.write_text(fixed)
            print(f"  {new}: Path(__file__) climbs one folder more")
        changed.append(new)
    python = [
        path
        for path in sorted({*tests.rglob("*.py"), *Path("bench").rglob("*.py")})
        if path.name not in SELF and not any(p in DATA for p in path.parts)
    ]
    for path in python:
        text = path.read_text()
        fixed = _fix_imports(text)
        if fixed != text:
            path.write_text(fixed)
            print(f"  {path}: imports from helpers")
            changed.append(path)
    for path in _fix_mentions(_renames(tests), warnings):
        print(f"  {path}: test paths renamed")
        changed.append(path)
    if _add_section():
        print(f"  CONTRIBUTING.md: section {SECTION!r} added")
    if changed:
        print(_ruff(sorted(set(changed)), warnings))
    warnings += _unknown_helper_names(python, tests / "helpers")
    warnings += _cross_folder_imports([p for p in python if p.is_relative_to(tests)], tests)
    conftest = tests / "conftest.py"
    fixtures = re.compile(r"^(pytest_|_)")
    for name in sorted(_defined(conftest)):
        node_text = conftest.read_text()
        is_fixture = re.search(rf"@pytest\.fixture[^\n]*\n(?:@[^\n]*\n)*def {name}\(", node_text)
        is_def = re.search(rf"^(?:def|class) {name}\b", node_text, flags=re.M)
        if is_def and not is_fixture and not fixtures.match(name):
            warnings.append(f"not placed: {conftest} defines {name} (helpers belong in helpers/)")
    for line in warnings:
        print(f"relayout: warning: {line}")
    if not moves and not changed:
        print("relayout: everything is in place; nothing changed")
    return 1 if warnings else 0


if __name__ == "__main__":
    sys.exit(main())
