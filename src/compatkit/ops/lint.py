"""Lint patchsets (``compatkit lint [PATCHSET]...``): every problem of every patchset, at once.

Checked without the network: the toml, each patch's header (required fields present and no
longer ``TODO``), duplicate ids, patch files left out of the series, each patch parses, each
smoke test exists and defines a test function. Checked against the target's wheel (skipped with
``--offline``): the named version exists, and the series applies to the pristine files in order.
"""

from __future__ import annotations

import ast
import contextlib
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from compatkit.delivery.wheels import WheelSource, pristine
from compatkit.engine.hunks import HunkMismatch, apply_section
from compatkit.engine.rebase import syntax_error
from compatkit.errors import CompatkitError, UsageError
from compatkit.load.authoring import SMOKE_TODO_MARK, TODO
from compatkit.load.registry import Registry
from compatkit.load.validate import validate
from compatkit.model import startup_code
from compatkit.model.patchset import REQUIRED_FIELDS, UNIDIFF_ZERO, Patch, resolve_smoke
from compatkit.model.paths import check_relpath


def _targets(registry: Registry, names: list[str], dirs: list[Path]) -> list[Path]:
    if names:
        return [
            Path(n) if (Path(n) / "patchset.toml").is_file() else _location(registry, n)
            for n in names
        ]
    if not dirs:
        return [_location(registry, n) for n in registry.names()]
    found: list[Path] = []
    for d in dirs:
        if (d / "patchset.toml").is_file():
            found.append(d)
        elif d.is_dir():
            found += sorted(c for c in d.iterdir() if (c / "patchset.toml").is_file())
    return found


def _location(registry: Registry, name: str) -> Path:
    """Where patchset ``name`` is; a name two sources claim is refused with the line
    ``list``, ``status`` and ``apply`` give (lint would otherwise check one of the two)."""
    where = registry.location(name)
    if (clash := registry.conflict(name)) is not None:
        raise UsageError(clash)
    return where


class Lint:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.patches: list[Patch] = []
        self.distribution = ""
        self.specifier: SpecifierSet | None = None
        self.smoke_root = root
        self.startup_code: tuple[str, ...] = ()

    def problem(self, text: str) -> None:
        self.problems.append(text)

    def toml_and_series(self) -> None:
        """Everything loading checks, and what it leaves for first use (compatkit.load.validate)."""
        checked = validate(self.root, deep=True)
        self.problems += checked.problems
        self.patches = checked.patches
        self.smoke_root = checked.smoke
        self.startup_code = checked.startup_code
        self.distribution = str(checked.target.get("distribution", ""))
        specifier = checked.target.get("specifier")
        if isinstance(specifier, str) and specifier.strip():
            with contextlib.suppress(InvalidSpecifier):
                self.specifier = SpecifierSet(specifier)
        listed = {(self.root / e).resolve() for e in checked.series if e.isprintable()}
        for extra in sorted((self.root / "patches").glob("*.patch")):
            if extra.resolve() not in listed:
                self.problem(f"patches/{extra.name} is not in the series")

    def headers(self) -> None:
        for p in self.patches:
            label = f"{p.id} ({p.path.name})"
            for f in REQUIRED_FIELDS:
                if not p.fields.get(f, "").strip():
                    self.problem(f"{label}: required field {f.title()} is missing or empty")
            for f, value in p.fields.items():
                if value.strip().startswith(TODO):
                    self.problem(f"{label}: field {f.title()} is still a TODO placeholder")
            zero = p.fields.get("unidiff-zero")
            if zero is not None and zero.strip().lower() not in UNIDIFF_ZERO:
                self.problem(f"{label}: field Unidiff-Zero is {zero.strip()!r}, not yes or no")
            for fd in p.files:
                try:
                    check_relpath(fd.path)
                except CompatkitError as exc:
                    self.problem(f"{label}: {exc.message}")
            self.smoke(p, label)
        self.check_startup()

    def check_startup(self) -> None:
        """Undeclared start-up code is an error, declared a note, a stale declaration an error
        (it would let a later patch touch that file unnoticed)."""
        touched: set[str] = set()
        for p in self.patches:
            for path, kind in startup_code.files(p):
                touched.add(path)
                if path in self.startup_code:
                    self.notes.append(
                        f"{p.id}: {startup_code.VERBS[kind]} start-up code {path} "
                        f"(declared in {startup_code.KEY}): it runs at every interpreter start"
                    )
                else:
                    self.problem(startup_code.refusal(p.id, path, kind))
        for path in self.startup_code:
            if path not in touched:
                self.problem(f"patchset.toml: {startup_code.KEY} lists {path}, no patch touches it")

    def smoke(self, p: Patch, label: str) -> None:
        rel = p.fields.get("smoke-test", "").strip()
        if not rel:
            return
        path = resolve_smoke(self.root, self.smoke_root, rel).resolve()
        inside = any(path.is_relative_to(d.resolve()) for d in (self.root, self.smoke_root))
        if not inside or not path.is_file():
            self.problem(f"{label}: smoke test {rel} is missing")
            return
        text = path.read_text("utf-8", "replace")
        try:
            tree = ast.parse(text, filename=rel)
        except SyntaxError as exc:
            self.problem(f"{label}: smoke test {rel} does not parse: {exc.msg} (line {exc.lineno})")
            return
        if not _has_test(tree):
            self.problem(f"{label}: smoke test {rel} has no test_ function")
        if SMOKE_TODO_MARK in text:
            self.problem(f"{label}: smoke test {rel} is still the generated stub")

    def wheel(self, wheels: WheelSource) -> None:
        if self.specifier is None or not self.distribution or not self.patches:
            return
        version = self._version(wheels)
        if version is None:
            return
        paths = sorted({path for p in self.patches for fd in p.files for path in fd.names})
        try:
            got = pristine(wheels, self.distribution, str(version), paths)
        except CompatkitError as exc:
            self.problem(f"{exc.message}: {'; '.join(exc.problems)}")
            return
        for p in self.patches:  # a traditional diff's names, as apply binds them
            p.bind_names(lambda path: got.files.get(path) is not None)
        self.notes.append(f"checked against {self.distribution} {version} ({got.label})")
        tops = {p.split("/", 1)[0] for p in got.owned if "/" in p}
        contents = dict(got.files)
        for p in self.patches:
            self._apply(p, contents, tops, str(version))

    def _apply(self, p: Patch, contents: dict[str, bytes | None], tops: set[str], ver: str) -> None:
        staged = dict(contents)
        for fd in p.files:
            outside = fd.path.split("/", 1)[0] not in tops  # a declared .pth may be at the root
            new = fd.kind in ("create", "rename", "copy")
            if new and outside and not startup_code.is_startup_path(fd.path):
                self.problem(
                    f"{p.id}: new file {fd.path} is outside {self.distribution}'s packages"
                )
            try:
                written = apply_section(staged, fd)  # a rename or copy reads its source
            except HunkMismatch as exc:
                self.problem(f"{p.id}: does not apply to {self.distribution} {ver}: {exc.message}")
                return
            data, offsets = written[fd.path]
            broken = syntax_error(fd.path, data)
            if broken and not syntax_error(fd.path, staged.get(fd.path)):
                self.problem(
                    f"{p.id}: applies to {fd.path} as text, but it no longer compiles: {broken}"
                )
                return
            staged.update((path, after) for path, (after, _) in written.items())
            moved = [o for o in offsets if o]
            if moved:
                self.notes.append(f"{p.id}: {fd.path} applies with offset {moved[0]:+d}")
        contents.update(staged)

    def _version(self, wheels: WheelSource) -> Version | None:
        assert self.specifier is not None
        try:
            known = wheels.versions(self.distribution)
        except CompatkitError as exc:
            self.problem(f"cannot list the versions of {self.distribution}: {exc.message}")
            return None
        pins = [s for s in self.specifier if s.operator in ("==", "===") and "*" not in s.version]
        if pins:
            pinned = Version(pins[0].version)
            if pinned not in known:
                where = "on the index" if wheels.index else "in the wheel directories"
                self.problem(f"{self.distribution} {pinned} does not exist {where}")
                return None
            return pinned
        matching = [v for v in known if self.specifier.contains(v, prereleases=True)]
        if not matching:
            self.problem(f"no {self.distribution} version matches {self.specifier}")
            return None
        return max(matching)


def _is_test(node: ast.stmt) -> bool:
    funcs = (ast.FunctionDef, ast.AsyncFunctionDef)
    if isinstance(node, funcs):
        return node.name.startswith("test")
    if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
        return any(isinstance(n, funcs) and n.name.startswith("test") for n in node.body)
    return False


def _has_test(tree: ast.Module) -> bool:
    return any(_is_test(node) for node in tree.body)


def lint_patchset(root: Path, wheels: WheelSource, offline: bool) -> Lint:
    lint = Lint(root)
    lint.toml_and_series()
    lint.headers()
    if offline:
        lint.notes.append("--offline: the wheel checks (version exists, series applies) skipped")
    else:
        lint.wheel(wheels)
    return lint


class LintResult:
    """One :class:`Lint` per patchset checked; ``problems``: each prefixed with its name."""

    def __init__(self, lints: list[Lint]) -> None:
        self.lints = lints
        self.problems = [f"{r.root.name}: {p}" for r in lints for p in r.problems]

    def to_json(self) -> dict[str, object]:
        patchsets = [
            {"name": r.root.name, "path": str(r.root), "problems": r.problems, "notes": r.notes}
            for r in self.lints
        ]
        return {"ok": not self.problems, "patchsets": patchsets}


def lint(registry: Registry, names: list[str], dirs: list[Path], wheels: WheelSource) -> LintResult:
    """Every patchset named (a name or a directory), else every one in ``dirs``, else every
    known one; the wheel checks only when ``wheels`` has somewhere to look."""
    offline = not wheels.index and not wheels.wheel_dirs
    return LintResult(
        [lint_patchset(root, wheels, offline) for root in _targets(registry, names, dirs)]
    )
