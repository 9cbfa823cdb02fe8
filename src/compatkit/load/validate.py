"""One validator for a patchset directory: loading and ``compatkit lint`` both use it.

:func:`validate` reads ``patchset.toml`` and every patch of its series and returns every
problem found (never the first only) plus what it read. :func:`load_patchset` (here, not in
the model it builds: ``compatkit.model.patchset`` imports no loader) refuses a patchset with any
problem; ``lint`` reports them, with
``deep=True`` adding what loading leaves for first use (a diff is parsed only when a command
needs it, and specifiers and requirements only when one is checked: start-up time) and its own
checks (header fields, smoke tests, the pristine wheel). A new ``patchset.toml`` key is
added once, here, in :data:`KEYS`.

>>> import pathlib, tempfile
>>> root = pathlib.Path(tempfile.mkdtemp()) / "p"
>>> root.mkdir()
>>> _ = (root / "patchset.toml").write_text('[patchset]\\nname = "p"\\nrequire = []\\n')
>>> validate(root).problems[:2]  # doctest: +NORMALIZE_WHITESPACE
["unknown key 'require' in [patchset] (known: name, version, summary, series, smoke-from,
startup-code)", 'missing [target] table']
"""

from __future__ import annotations

import os
from hashlib import sha256
from pathlib import Path

from compatkit import bounded
from compatkit.errors import CompatkitError, PatchFormatError
from compatkit.load import cache
from compatkit.load.trust import Finding, Resolver, refusal, shown
from compatkit.model import startup_code
from compatkit.model.names import normalize_name
from compatkit.model.patchset import Patch, Patchset, parse_patch, smoke_clashes, smoke_root_for

TYPE_CHECKING = False

if TYPE_CHECKING:
    from hashlib import _Hash as Hash

# every key patchset.toml may hold, per table ("" is the top level)
KEYS: dict[str, tuple[str, ...]] = {
    "": ("patchset", "target", "series", "constraints"),
    "patchset": ("name", "version", "summary", "series", "smoke-from", "startup-code"),
    "target": ("distribution", "specifier", "requires", "series"),
}


class Checked:
    """What :func:`validate` read, and every problem with it (empty: the patchset is sound)."""

    __slots__ = (
        "root",
        "problems",
        "meta",
        "target",
        "series",
        "patches",
        "digest",
        "smoke",
        "own_smoke",
        "startup_code",
        "constraints",
        "untrusted",
        "trust",
    )

    def __init__(self, root: Path, trust: Resolver) -> None:
        self.root = root
        self.problems: list[str] = []
        self.meta: dict[str, object] = {}
        self.target: dict[str, object] = {}
        self.series: list[str] = []
        self.patches: list[Patch] = []
        self.digest = ""
        self.smoke = root  # the patchset directory whose smoke/ holds the (shared) tests
        self.own_smoke = False  # smoke-from, and a smoke/ of its own on top of it
        self.startup_code: tuple[str, ...] = ()  # start-up files it may touch (startup_code)
        self.constraints: tuple[tuple[str, str], ...] = ()  # (PEP 508 pin, rationale)
        self.untrusted: list[Finding] = []  # parts another user may change (load.trust)
        self.trust = trust

    def text(self, table: dict[str, object], key: str, name: str) -> str:
        value = table.get(key)
        if not isinstance(value, str) or not value.strip():
            self.problems.append(f"[{name}] '{key}' must be a non-empty string")
            return ""
        return value

    def strings(self, value: object, key: str) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.problems.append(f"'{key}' must be a list of strings")
            return []
        return list(value)


def validate(root: Path, deep: bool = False, trust: Resolver | None = None) -> Checked:
    """Every problem of the patchset folder ``root``; ``trust`` judges each part of it that is
    read (compatkit.load.trust: a part another user may change is in ``untrusted``, and is
    not read). ``root`` is resolved here unless ``trust`` is given (the registry resolved it)."""
    found: list[Finding] = []
    if trust is None:
        trust = Resolver()
        try:
            root = Path(trust.resolve(str(root), found))
        except OSError as exc:  # missing, not a folder: the one problem
            checked = Checked(root, trust)
            checked.problems.append(f"{shown(root)}: {exc.strerror}")
            return checked
    checked = Checked(root, trust)
    checked.untrusted = found
    trust.survey(str(root), found)
    toml = str(root / "patchset.toml")
    try:
        raw = None if any(f.path == toml for f in found) else trust.read(toml, found)
        if raw is None:
            if not found:
                why = "not a regular file" if os.path.lexists(root / "patchset.toml") else "missing"
                checked.problems.append(f"patchset.toml: {why}")
            return _untrusted(checked, deep)
        data = cache.toml_loads(raw)
    except bounded.Refused as exc:  # larger than its bound: never read
        checked.problems.append(f"patchset.toml: {exc.why}")
        return checked
    except (OSError, ValueError, RecursionError) as exc:  # UnicodeDecodeError, TOMLDecodeError
        checked.problems.append(f"patchset.toml: {str(exc)[:200]}")
        return checked
    _tables(checked, data)
    digest = sha256(raw)  # it takes raw and one 32-byte digest per patch
    _series(checked, digest, deep)
    checked.digest = digest.hexdigest()
    if deep:
        _deep(checked)
    return _untrusted(checked, deep)


def _untrusted(checked: Checked, deep: bool) -> Checked:
    """lint (``deep``) reports each untrusted part as a problem; loading refuses them."""
    if deep:
        seen = {f.path: f for f in checked.untrusted}.values()
        checked.problems.extend(f"{shown(f.path)}: {f.why}" for f in seen)
    return checked


def load_patchset(root: Path, trust: Resolver | None = None) -> Patchset:
    """Load ``root/patchset.toml`` and every patch in its series; refuse it with every part
    another user may change, or else with every problem :func:`validate` finds."""
    checked = validate(root, trust=trust)
    if checked.untrusted:
        raise refusal(f"patchset folder {shown(checked.root)}", checked.untrusted)
    if checked.problems:
        where = checked.root / "patchset.toml"
        raise PatchFormatError(f"{where}: {checked.problems[0]}", checked.problems[1:])
    meta, target = checked.meta, checked.target
    return Patchset(
        name=str(meta["name"]),
        version=str(meta["version"]),
        summary=str(meta.get("summary", "")),
        distribution=normalize_name(str(target["distribution"])),
        specifier_text=str(target["specifier"]),
        requires_text=tuple(str(r) for r in target.get("requires", [])),  # type: ignore[attr-defined]
        patches=tuple(checked.patches),
        root=checked.root,
        digest=checked.digest,
        series=tuple(checked.series),
        smoke_root=checked.smoke,
        own_smoke=checked.own_smoke,
        startup_code=checked.startup_code,
        constraints=checked.constraints,
    )


def _tables(checked: Checked, data: dict[str, object]) -> None:
    _unknown(checked, "", data)
    for name in ("patchset", "target"):
        table = data.get(name)
        if not isinstance(table, dict):
            checked.problems.append(f"missing [{name}] table")
            table = {}
        _unknown(checked, name, table)
        setattr(checked, "meta" if name == "patchset" else "target", table)
    meta, target = checked.meta, checked.target
    name = checked.text(meta, "name", "patchset")
    if name and name != checked.root.name:
        checked.problems.append(f"name {name!r} differs from its directory {checked.root.name!r}")
    checked.text(meta, "version", "patchset")
    checked.text(target, "distribution", "target")
    checked.text(target, "specifier", "target")
    checked.strings(target.get("requires", []), "requires")
    raw_series = meta.get("series", data.get("series", target.get("series")))
    checked.series = checked.strings(raw_series, "series")
    try:
        checked.smoke = smoke_root_for(checked.root, meta, "[patchset]")
    except CompatkitError as exc:
        checked.problems.append(exc.message)
    if checked.smoke != checked.root:  # smoke-from: its tests run from the sibling's smoke/
        try:
            sibling = checked.trust.resolve(str(checked.smoke), checked.untrusted)
        except OSError as exc:
            checked.problems.append(f"smoke-from: {exc.strerror}")
        else:
            checked.trust.survey(sibling, checked.untrusted, ("smoke",))
            checked.smoke = Path(sibling)
    _own_smoke(checked)
    _constraints(checked, data.get("constraints", []))
    try:
        checked.startup_code = startup_code.declared(meta, "[patchset]")
    except CompatkitError as exc:
        checked.problems.append(exc.message)


def _constraints(checked: Checked, raw: object) -> None:
    """``[[constraints]]``: each a ``pin`` (PEP 508) and the ``rationale`` for it."""
    if not isinstance(raw, list) or not all(isinstance(c, dict) for c in raw):
        checked.problems.append("'constraints' must be an array of tables ([[constraints]])")
        return
    found = []
    for i, table in enumerate(raw, 1):
        where = f"constraints #{i}"
        for key in table:
            if key not in ("pin", "rationale"):
                checked.problems.append(
                    f"unknown key {str(key)[:60]!r} in {where} (known: pin, rationale)"
                )
        pin, why = checked.text(table, "pin", where), checked.text(table, "rationale", where)
        if pin and "\n" in pin:
            checked.problems.append(f"[{where}] 'pin' must be one line")
        elif pin and why:
            found.append((pin.strip(), why.strip()))
    checked.constraints = tuple(found)


def _own_smoke(checked: Checked) -> None:
    """smoke-from plus a smoke/ of its own: the two run as one, so no file may be in both."""
    own = checked.root / "smoke"
    checked.own_smoke = checked.smoke != checked.root and own.is_dir()
    if not checked.own_smoke:
        return
    for rel in smoke_clashes([checked.smoke / "smoke", own]):
        checked.problems.append(
            f"smoke/{rel} is both in its own smoke/ and in smoke-from's "
            f"{checked.smoke.name}/smoke/ (the two folders run as one)"
        )


def _unknown(checked: Checked, name: str, table: dict[str, object]) -> None:
    known = KEYS[name]
    where = f"[{name}]" if name else "patchset.toml"
    for key in table:
        if key not in known:
            checked.problems.append(
                f"unknown key {str(key)[:60]!r} in {where} (known: {', '.join(known)})"
            )


def _series(checked: Checked, digest: Hash, deep: bool) -> None:
    root = str(checked.root)
    trust = checked.trust
    for entry in checked.series:
        if not entry.isprintable() or not entry.strip():
            checked.problems.append(f"series entry {entry!r} is empty or not printable")
            continue
        before = len(checked.untrusted)
        try:
            real = trust.resolve(os.path.join(root, entry), checked.untrusted)
        except FileNotFoundError:
            real = os.path.realpath(os.path.join(root, entry))  # only to say which
            inside = real == root or real.startswith(root + os.sep)
            del checked.untrusted[before:]
            why = "does not exist" if inside else "leaves the patchset directory"
            checked.problems.append(f"series entry {entry!r} {why}")
            continue
        except (OSError, ValueError) as exc:
            checked.problems.append(f"series entry {entry!r}: {getattr(exc, 'strerror', exc)}")
            continue
        if not (real == root or real.startswith(root + os.sep)):
            del checked.untrusted[before:]  # outside: not read, and not a part of it to fix
            checked.problems.append(f"series entry {entry!r} leaves the patchset directory")
            continue
        if len(checked.untrusted) > before:
            continue  # not read
        try:
            raw = trust.read(real, checked.untrusted)
        except OSError as exc:
            checked.problems.append(f"series entry {entry!r}: {exc.strerror}")
            continue
        except bounded.Refused as exc:
            checked.problems.append(f"series entry {entry!r}: {exc.why}")
            continue
        if raw is None:
            if len(checked.untrusted) == before:
                checked.problems.append(f"series entry {entry!r} does not exist")
            continue
        digest.update(sha256(raw).digest())
        try:
            checked.patches.append(parse_patch(Path(real), raw, eager=deep))
        except CompatkitError as exc:
            checked.problems.append(f"{entry}: does not parse: {exc.message}")
    ids = [p.id for p in checked.patches]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        checked.problems.append(f"duplicate patch id {dup}")


def _first_line(exc: Exception) -> str:
    """packaging's reason without the lines that point at the column (a problem is one line)."""
    return str(exc).splitlines()[0]


def _deep(checked: Checked) -> None:
    """What loading leaves for first use: specifier and requirements parse; series not empty."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    specifier = checked.target.get("specifier")
    if isinstance(specifier, str) and specifier.strip():
        try:
            SpecifierSet(specifier)
        except InvalidSpecifier as exc:
            checked.problems.append(f"bad specifier: {_first_line(exc)}")
    for req in checked.target.get("requires", []) or []:  # type: ignore[attr-defined]
        try:
            Requirement(str(req))
        except InvalidRequirement as exc:
            checked.problems.append(f"bad requirement {req!r}: {_first_line(exc)}")
    for pin, _ in checked.constraints:
        try:
            Requirement(pin)
        except InvalidRequirement as exc:
            checked.problems.append(f"bad constraint {pin!r}: {_first_line(exc)}")
    if not checked.series and not any("series" in p for p in checked.problems):
        checked.problems.append("the series is empty")
    ids = {p.id for p in checked.patches}
    for i, p in enumerate(checked.patches):
        for need in p.smoke_needs:
            if need == p.id or need not in ids:
                checked.problems.append(f"{p.id}: Smoke-Needs names {need!r}, not another patch")
        earlier = {q.id for q in checked.patches[:i]}
        for need in p.needs:
            if need not in earlier:
                what = "a later patch" if need in ids and need != p.id else "not another patch"
                checked.problems.append(
                    f"{p.id}: Needs names {need!r}, {what} (a need comes earlier in the series)"
                )
