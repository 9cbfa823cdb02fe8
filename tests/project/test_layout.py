"""The package's shape: no import cycles in src/compatkit, every import goes down the layers
(docs/architecture.md's table, pyproject.toml's import-linter contract), and
docs/architecture.md names every module and subpackage.

Every import counts as an edge of the graph: at module level, inside a function (the lazy
imports that keep start-up fast still run, only later: a cycle through one is a cycle, and it
works only as long as nobody moves the import to the top), and under ``if TYPE_CHECKING:`` (a
module that names another's types depends on it; mypy follows the edge). Relative imports are
resolved against the importing module. ``from compatkit.x import y`` is an edge to
``compatkit.x.y`` when that is a module, else to ``compatkit.x``. Importing a submodule also
runs its package's ``__init__``; that implicit edge is not drawn (no ``__init__`` here imports
its children).
"""

from __future__ import annotations

import ast
import itertools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
ARCHITECTURE = SRC.parent / "docs" / "architecture.md"

Graph = dict[str, dict[str, int]]  # module -> {imported module: line of the first import}


def modules(src: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` under ``src``, by dotted name (a package as its name)."""
    found = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _targets(node: ast.Import | ast.ImportFrom, name: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        here = name.split(".") if is_package else name.split(".")[:-1]
        here = here[: len(here) - (node.level - 1)]
        base = ".".join([*here, *([node.module] if node.module else [])])
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def import_graph(src: Path, package: str) -> Graph:
    """Which modules of ``package`` each of its modules imports, wherever the import stands."""
    found = modules(src, package)
    graph: Graph = {}
    for name, path in found.items():
        edges: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            targets = [t for t in _targets(node, name, path.name == "__init__.py") if t in found]
            if isinstance(node, ast.ImportFrom) and len(targets) > 1 and targets[0] in found:
                # `from pkg import mod`: the edge is to the module; to pkg only for its own names
                named = {t.rsplit(".", 1)[1] for t in targets[1:]}
                if all(a.name in named for a in node.names):
                    targets = targets[1:]
            for target in targets:
                if target != name:
                    edges.setdefault(target, node.lineno)
        graph[name] = edges
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan), each as
    the modules in import order, the first repeated at the end."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            if component:
                components.append(sorted([v, *component]))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_cycle_in(graph, set(c), c[0]) for c in components]


def _cycle_in(graph: Graph, component: set[str], start: str) -> list[str]:
    """A shortest import path from ``start`` back to itself inside ``component`` (BFS)."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(graph[v]):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if w in component and w not in came_from:
                    came_from[w] = v
                    following.append(w)
        frontier = following
    raise AssertionError(f"{start} is not on a cycle")


def _shown(graph: Graph, cycle: list[str]) -> str:
    steps = [f"{a} (line {graph[a][b]})" for a, b in itertools.pairwise(cycle)]
    return " → ".join([*steps, cycle[-1]])


def test_no_import_cycles() -> None:
    graph = import_graph(SRC, "compatkit")
    assert "compatkit.load.validate" in graph["compatkit.load.registry"]  # a function-level import
    found = [_shown(graph, c) for c in cycles(graph)]
    assert not found, "import cycles in src/compatkit:\n" + "\n".join(found)


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    """A package ``pkg`` under ``tmp_path`` holding ``files`` (``__init__.py`` empty)."""
    for rel, text in {"__init__.py": "", **files}.items():
        path = tmp_path / "pkg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_a_cycle_through_a_lazy_relative_import_is_found_and_named(tmp_path: Path) -> None:
    src = _package(
        tmp_path,
        {
            "model.py": "from pkg.sub import loader\n",
            "sub/__init__.py": "",
            "sub/loader.py": "from . import helper\n",
            "sub/helper.py": "def f():\n    from ..model import X\n",
            "free.py": "import pkg.model\nfrom typing import TYPE_CHECKING\n",
        },
    )
    graph = import_graph(src, "pkg")
    assert graph["pkg.sub.loader"] == {"pkg.sub.helper": 1}
    assert graph["pkg.sub.helper"] == {"pkg.model": 2}
    assert graph["pkg.free"] == {"pkg.model": 1}
    [cycle] = cycles(graph)
    assert cycle == ["pkg.model", "pkg.sub.loader", "pkg.sub.helper", "pkg.model"]
    shown = _shown(graph, cycle)
    assert shown == (
        "pkg.model (line 1) → pkg.sub.loader (line 1) → pkg.sub.helper (line 2) → pkg.model"
    )


def test_type_checking_imports_count_and_a_tree_has_no_cycle(tmp_path: Path) -> None:
    c_text = "import typing\nthing = 1\nif typing.TYPE_CHECKING:\n    from pkg import a\n"
    files = {"a.py": "from pkg import b\n", "b.py": "from pkg.c import thing\n", "c.py": c_text}
    src = _package(tmp_path, files)
    assert [c[:-1] for c in cycles(import_graph(src, "pkg"))] == [["pkg.a", "pkg.b", "pkg.c"]]
    (src / "pkg" / "c.py").write_text("thing = 1\n")
    assert cycles(import_graph(src, "pkg")) == []


# --- layers: pyproject.toml's [tool.importlinter] contract, run by nox -s lint too ----------


def layer_heights() -> dict[str, int]:
    """Each folder's (or top-level module's) height in the contract: 0 lowest, siblings equal."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    config = tomllib.loads((SRC.parent / "pyproject.toml").read_text())
    [contract] = config["tool"]["importlinter"]["contracts"]
    rows = reversed(contract["layers"])  # highest first, as import-linter writes them
    return {name.strip(): h for h, row in enumerate(rows) for name in re.split("[|:]", row)}


def lint_imports(src: Path) -> subprocess.CompletedProcess[str]:
    """pyproject.toml's layer contract, checked by import-linter on the compatkit under ``src``
    (import-linter needs Python 3.11+: the contract is checked on 3.11, in `tests` and `lint`)."""
    lint = Path(sys.executable).parent / "lint-imports"
    if sys.version_info < (3, 11) and not lint.exists():
        pytest.skip("import-linter runs on Python 3.11+ only; the 3.11 run checks the layers")
    command = [str(lint), "--no-cache", "--no-logo"]
    env = {**os.environ, "PYTHONPATH": str(src)}
    config = str(SRC.parent / "pyproject.toml")
    return subprocess.run([*command, config], cwd=src, env=env, capture_output=True, text=True)


def test_every_import_goes_down_the_layers() -> None:
    done = lint_imports(SRC)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_contract_finds_a_lazy_sibling_import_and_a_type_checking_one(tmp_path: Path) -> None:
    copy = tmp_path / "src" / "compatkit"
    shutil.copytree(SRC / "compatkit", copy, ignore=shutil.ignore_patterns("__pycache__"))
    with (copy / "engine" / "search.py").open("a") as f:  # engine and load are siblings
        f.write("\n\ndef _f() -> None:\n    from compatkit.load import cache\n")
    with (copy / "model" / "records.py").open("a") as f:
        f.write("\nTYPE_CHECKING = False\nif TYPE_CHECKING:\n    import compatkit.cli.output\n")
    done = lint_imports(copy.parent)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "compatkit.engine.search -> compatkit.load.cache" in done.stdout
    assert "compatkit.model.records -> compatkit.cli.output" in done.stdout


# --- docs/architecture.md -------------------------------------------------------------------

_TREE_LINE = re.compile(r"^[\s│├└─]")  # a line nested under the entry above it
_PY = re.compile(r"(?<![\w/.])((?:\w+/)*\w+\.py)\b")
_DIR = re.compile(r"(?<![\w/.])((?:\w+/)+)(?![\w<{])")


def documented(text: str) -> set[str]:
    """The paths (relative to the package, ``x.py`` or ``sub/``) a document names.

    A module is named by its path (``ops/apply.py``), or by its file name on a line nested
    (indented, or drawn with │ ├ └) under a code block's ``sub/`` entry, as a tree shows it.
    """
    named: set[str] = set()
    folder = ""  # the subpackage whose tree the current code block line belongs to
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code, folder = not in_code, ""
            continue
        head = _DIR.match(line)
        if in_code and head:
            folder = head.group(1)
        elif not (in_code and _TREE_LINE.match(line)):
            folder = ""
        named |= {m for m in _DIR.findall(line)}
        named |= {p if "/" in p else folder + p for p in _PY.findall(line)}
    return named


def expected_names(src: Path, package: str) -> list[str]:
    """Every module (``x.py``, ``sub/x.py``) and subpackage (``sub/``) of ``package``."""
    root = src / package
    packages = [p.parent for p in root.rglob("__init__.py") if p.parent != root]
    names = [f"{p.relative_to(root).as_posix()}/" for p in packages]
    names += [p.relative_to(root).as_posix() for p in root.rglob("*.py") if p.name != "__init__.py"]
    return sorted(names)


def test_architecture_doc_names_every_module_and_subpackage() -> None:
    named = documented(ARCHITECTURE.read_text())
    missing = [n for n in expected_names(SRC, "compatkit") if n not in named]
    assert not missing, f"not in {ARCHITECTURE.name}: {', '.join(missing)}"


def test_the_doc_reader_takes_a_tree_nesting_but_not_a_namesake() -> None:
    text = """\
Prose naming `ops/wheel.py` and `records.py`.
```
ops/          the use cases
  ├── apply.py  one
  │   and its continuation naming verify.py
revert.py     a top-level module, not the namesake in ops/
cli.py
  └── argv.py
```
`plan.py` outside the block is top level.
"""
    assert documented(text) == {
        "ops/",
        "ops/wheel.py",
        "records.py",
        "ops/apply.py",
        "ops/verify.py",
        "revert.py",
        "cli.py",
        "argv.py",
        "plan.py",
    }


def test_noxfile_docstring_lists_every_session() -> None:
    """``nox -l`` shows each session's first docstring line; the module docstring lists them."""
    tree = ast.parse((SRC.parent / "noxfile.py").read_text())
    listed = ast.get_docstring(tree) or ""
    sessions = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any("session" in ast.unparse(d) for d in node.decorator_list)
    ]
    assert len(sessions) >= 10
    undocumented = [s.name for s in sessions if not ast.get_docstring(s)]
    unlisted = [s.name for s in sessions if not re.search(rf"\b{s.name}\b", listed)]
    assert not undocumented, f"sessions without a docstring: {undocumented}"
    assert not unlisted, f"sessions the noxfile's docstring does not list: {unlisted}"


FORBIDDEN_IN_COMMANDS = ("compatkit.env", "compatkit.atomic")


def _runtime_imports(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports (line, name), except under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(), str(path))
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            typing_only |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def use_cases_in(folder: Path) -> list[str]:
    """Each import of a command module that does work a use case does (compatkit.env,
    compatkit.atomic, a transaction), as "file:line name"."""
    return [
        f"{path.name}:{line} {name}"
        for path in sorted(folder.glob("*.py"))
        for line, name in _runtime_imports(path)
        if name.startswith(FORBIDDEN_IN_COMMANDS) or ".txn" in name
    ]


def test_commands_only_read_arguments_and_render() -> None:
    """Issue 35: a command module calls one operation and renders its result; the use case
    (sessions, transactions, atomic writes) lives in ops/. Issue 47: explain's reading,
    ranking and choosing too (ops/explain.py); no command imports compatkit.env, even for a
    type."""
    commands = SRC / "compatkit" / "cli" / "commands"
    found = use_cases_in(commands)
    assert not found, f"use-case imports in cli/commands/: {found}"
    found = env_imports_in(commands)
    assert not found, f"compatkit.env imports in cli/commands/: {found}"


def test_a_use_case_import_in_a_command_is_found(tmp_path: Path) -> None:
    (tmp_path / "verb.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from compatkit.env.target import Environment\n"
        "def run():\n    from compatkit import atomic\n    from compatkit.env import txn\n"
        "import compatkit.env\nfrom compatkit.ops import status\n"
    )
    assert sorted(use_cases_in(tmp_path)) == [
        "verb.py:5 compatkit.atomic",
        "verb.py:6 compatkit.env.txn",
        "verb.py:7 compatkit.env",
    ]
    assert env_imports_in(tmp_path) == [
        "verb.py:3 compatkit.env.target.Environment",
        "verb.py:6 compatkit.env.txn",
        "verb.py:7 compatkit.env",
    ]


def absolute_imports(path: Path, members: bool = False) -> list[tuple[int, str]]:
    """Every absolute import of the module at ``path``, wherever it stands (in a function,
    under ``if TYPE_CHECKING:``), as (line, name), in order; ``members``: ``from m import x``
    is ``m.x``, else ``m``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [f"{node.module}.{a.name}" for a in node.names] if members else [node.module]
            found += [(node.lineno, name) for name in names]
    return sorted(found)


def env_imports_in(folder: Path) -> list[str]:
    """Each import of ``compatkit.env`` by a module of ``folder``, wherever it stands (under
    ``if TYPE_CHECKING:`` too: a command takes results, not the environment's types), as
    "file:line name"."""
    return [
        f"{path.name}:{line} {name}"
        for path in sorted(folder.glob("*.py"))
        for line, name in absolute_imports(path, members=True)
        if name == "compatkit.env" or name.startswith("compatkit.env.")
    ]


def test_every_command_module_exports_add_arguments_and_run() -> None:
    """One command protocol, one file per command (issue 47): compatkit.cli.main names a
    module for every command, and it has add_arguments(parser) and run(args, ctx); every
    module of cli/commands is one command's."""
    import importlib

    from compatkit.cli.main import COMMANDS

    for name, (module_name, _) in COMMANDS.items():
        module = importlib.import_module(f"compatkit.cli.commands.{module_name}")
        assert callable(getattr(module, "add_arguments", None)), name
        assert callable(getattr(module, "run", None)), name
    files = {p.stem for p in (SRC / "compatkit" / "cli" / "commands").glob("*.py")}
    assert files - {"__init__"} == {m for m, _ in COMMANDS.values()}


def dataclass_imports(folder: Path) -> list[str]:
    """Each import of ``dataclasses`` under ``folder``, wherever it stands, as "file:line"."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        names = absolute_imports(path)
        lines = {n for n, name in names if name == "dataclasses" or name.startswith("dataclasses.")}
        found += [f"{path.relative_to(folder).as_posix()}:{line}" for line in sorted(lines)]
    return found


def test_one_value_object_idiom() -> None:
    """Issue 35: a record type is a slotted class on compatkit.value.Value (CONTRIBUTING.md,
    "Value objects"); no module imports ``dataclasses``."""
    found = dataclass_imports(SRC / "compatkit")
    assert not found, f"dataclasses imported (use compatkit.value.Value): {found}"


def test_a_dataclasses_import_is_found_anywhere(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text("import os\nimport dataclasses as dc\n")
    (tmp_path / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from dataclasses import field\n"
        "def f():\n    from . import dataclasses\n"
    )
    assert dataclass_imports(tmp_path) == ["a.py:2", "sub/b.py:3"]


HOOK = ("runtime/hook.py",)  # runs in every start of a runtime-mode target (P7)


def private_imports(folder: Path) -> list[str]:
    """Each import of a private top-level module (``_sha2``, ``_operator``, ...) under
    ``folder`` but in the runtime hook, wherever it stands, as "file:line name"."""
    return [
        f"{where}:{line} {name}"
        for path in sorted(folder.rglob("*.py"))
        if (where := path.relative_to(folder).as_posix()) not in HOOK
        for line, name in absolute_imports(path)
        if name[:1] == "_" != name[1:2]
    ]


def test_no_private_module_outside_the_runtime_hook() -> None:
    """Issue 47: hashlib, hmac, base64 and csv as they are (CONTRIBUTING.md lists what is
    kept and why); only the runtime hook imports CPython's private modules."""
    found = private_imports(SRC / "compatkit")
    assert not found, f"private modules imported: {found}"


def test_a_private_import_is_found(tmp_path: Path) -> None:
    (tmp_path / "runtime").mkdir()
    (tmp_path / "runtime" / "hook.py").write_text("import _imp\n")
    (tmp_path / "digest.py").write_text(
        "def f():\n    from _sha2 import sha256\n    import __future__, os, _operator\n"
    )
    assert private_imports(tmp_path) == [
        "digest.py:2 _sha2",
        "digest.py:3 _operator",
    ]


QUIET = ("model", "engine", "env", "load")  # below the operations: results, never output


def prints_in(folder: Path) -> list[str]:
    """Each ``print()`` call and each use of ``sys.stdout``/``sys.stderr`` under ``folder``
    (code in a string, run by another interpreter, is not looked at), as "file:line"."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                hit = ast.unparse(node.func) == "print"
            elif isinstance(node, ast.Attribute):
                hit = ast.unparse(node) in ("sys.stdout", "sys.stderr")
            else:
                continue
            if hit:
                found.append(f"{path.relative_to(folder).as_posix()}:{node.lineno}")
    return found


def test_nothing_below_the_operations_prints() -> None:
    """Issue 47: warnings travel in results or through what the command line hands down
    (Environment.tell, find_config's warn, cache.tell); only cli/ writes to the terminal."""
    found = [f"{layer}/{hit}" for layer in QUIET for hit in prints_in(SRC / "compatkit" / layer)]
    assert not found, f"output below cli/: {found}"


def test_a_print_is_found(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "import sys\nCODE = 'print(1)'\ndef f():\n    print('x')\n    sys.stderr.write('y')\n"
    )
    assert prints_in(tmp_path) == ["m.py:4", "m.py:5"]
