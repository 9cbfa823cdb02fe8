"""The patchset model: ``patchset.toml`` plus DEP-3-style patch files (pure parsing).

>>> header, body = split_header("Patch-Id: patch-1\\nTitle: t\\n---\\n--- a/x\\n")
>>> header["patch-id"], body
('patch-1', '--- a/x\\n')
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from compatkit.errors import PatchFormatError
from compatkit.model import answers
from compatkit.model.diff import FileDiff, parse_diff
from compatkit.model.mail import read_mail
from compatkit.model.paths import shown
from compatkit.value import Value

TYPE_CHECKING = False

if TYPE_CHECKING:
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet

    # a requirement as packaging reads it: name, specifier, whether it has a marker, as printed
    Facts = tuple[str, str, bool, str]

REQUIRED_FIELDS = ("patch-id", "title", "symptom", "cause", "fix", "smoke-test")
OPTIONAL_FIELDS = (
    "origin",
    "forwarded",
    "retire-when",
    "last-update",
    "smoke-needs",
    "unidiff-zero",
    "needs",
)
UNIDIFF_ZERO = ("yes", "no")  # the values of Unidiff-Zero (docs/patchset-format.md)
_FIELD = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*):[ \t]?(.*)$")
_DIFF_START = ("diff --git ", "--- ", "Index: ")
_MAIL_FROM = re.compile(r"^From [0-9a-f]{7,64} ")
_ALIASES = {"subject": "title", "from": "author", "date": "last-update", "smoke": "smoke-test"}


class Patch(Value):
    """One patch file. Its diff is parsed on first use of :attr:`files` (start-up time)."""

    __slots__ = ("id", "fields", "path", "diff_text", "_raw", "_files")

    def __init__(
        self,
        id: str,
        fields: dict[str, str],
        path: Path,
        diff_text: str,  # CRLF as LF, for showing it
        raw: tuple[str, int] | None = None,  # the diff as written, and the line it starts at
    ) -> None:
        self.id = id
        self.fields = fields
        self.path = path
        self.diff_text = diff_text
        self._raw = (diff_text, 1) if raw is None else raw
        self._files: tuple[FileDiff, ...] | None = None

    @property
    def files(self) -> tuple[FileDiff, ...]:
        if self._files is None:
            zero = self.fields.get("unidiff-zero", "").strip().lower() == "yes"
            self._files = parse_diff(self._raw[0], shown(self.path.name), self._raw[1], zero)
        return self._files

    def bind_names(self, exists: Callable[[str], bool]) -> None:
        """Each traditional edit whose ``---``/``+++`` names differ on the name that is a
        file of the distribution (``exists``), as :meth:`FileDiff.bound` picks it: what
        every command that reads or writes a patch's files does first."""
        if any(fd.alias is not None for fd in self.files):
            self._files = tuple(fd.bound(exists) for fd in self.files)

    @property
    def title(self) -> str:
        return self.fields.get("title", "")

    @property
    def smoke_needs(self) -> list[str]:
        """``Smoke-Needs: patch-2, patch-3``: the patches its smoke test needs applied to reach
        the code this patch fixes (without them it fails for their reason, not this one's)."""
        return [i for i in self.fields.get("smoke-needs", "").replace(",", " ").split() if i]

    @property
    def needs(self) -> list[str]:
        """``Needs: patch-17``: the earlier patches of the series its code builds on (it uses a
        name they add): applying it without them applies cleanly and breaks the package."""
        return [i for i in self.fields.get("needs", "").replace(",", " ").split() if i]

    def missing_fields(self) -> list[str]:
        return [f for f in REQUIRED_FIELDS if not self.fields.get(f, "").strip()]


class Patchset(Value):
    __slots__ = (
        "name",
        "version",
        "summary",
        "distribution",
        "specifier_text",
        "requires_text",
        "patches",
        "root",
        "digest",
        "series",
        "smoke_root",
        "own_smoke",
        "startup_code",
        "constraints",
        "_specifier",
        "_requires",
    )

    def __init__(
        self,
        name: str,
        version: str,
        summary: str,
        distribution: str,
        specifier_text: str,
        requires_text: tuple[str, ...],
        patches: tuple[Patch, ...],
        root: Path,
        digest: str,
        series: tuple[str, ...] = (),
        smoke_root: Path | None = None,  # whose smoke/ holds the tests (smoke-from)
        own_smoke: bool = False,  # smoke-from, and a smoke/ of its own on top of it
        startup_code: tuple[
            str, ...
        ] = (),  # start-up files it may touch (compatkit.model.startup_code)
        constraints: tuple[tuple[str, str], ...] = (),  # (PEP 508 pin, rationale)
    ) -> None:
        self.name, self.version, self.summary = name, version, summary
        self.distribution = distribution
        self.specifier_text = specifier_text
        self.requires_text = requires_text
        self.patches = patches
        self.root = root
        self.digest = digest
        self.series = series
        self.smoke_root = root if smoke_root is None else smoke_root
        self.own_smoke = own_smoke
        self.startup_code = startup_code
        self.constraints = constraints
        self._specifier: SpecifierSet | None = None
        self._requires: tuple[Requirement, ...] | None = None

    @property
    def specifier(self) -> SpecifierSet:
        """The PEP 440 specifier, parsed on first use (packaging is slow to import)."""
        if self._specifier is None:
            from packaging.specifiers import InvalidSpecifier, SpecifierSet

            try:
                self._specifier = SpecifierSet(self.specifier_text)
            except InvalidSpecifier as exc:
                where = f"{self.root}/patchset.toml"
                raise PatchFormatError(f"{where}: bad specifier: {exc}") from None
        return self._specifier

    def smoke_file(self, patch: Patch) -> Path:
        """Where ``patch``'s smoke test is (its own ``smoke/``, or the smoke-from sibling's)."""
        return resolve_smoke(self.root, self.smoke_root, patch.fields.get("smoke-test", "-"))

    def smoke_dirs(self) -> list[Path]:
        """The ``smoke/`` folders its tests run from, in overlay order (sibling's, then own)."""
        own = [self.root / "smoke"] if self.own_smoke else []
        return [self.smoke_root / "smoke", *own]

    @property
    def target(self) -> str:
        """``distribution`` + specifier as packaging prints it."""
        shown = answers.remember("specifier", self.specifier_text, lambda: str(self.specifier))
        return f"{self.distribution}{shown}"

    def accepts(self, version: str) -> bool:
        """Whether the target's specifier admits ``version`` (pre-releases too)."""
        return answers.remember(
            "specifier-contains",
            f"{self.specifier_text}\0{version}",
            lambda: self.specifier.contains(version, prereleases=True),
        )

    def requirement(self, text: str, what: str = "requirement") -> Facts:
        """A ``requires`` entry or a constraint pin (``what``) as packaging reads it: its name,
        specifier, whether it has a marker, and how it prints. Raises PatchFormatError."""
        return answers.remember("requirement", text, lambda: self._facts(text, what))

    def _facts(self, text: str, what: str) -> Facts:
        from packaging.requirements import InvalidRequirement, Requirement

        try:
            req = Requirement(text)
        except InvalidRequirement as exc:
            where = f"{self.root}/patchset.toml"
            raise PatchFormatError(f"{where}: bad {what} {text!r}: {exc}") from None
        return req.name, str(req.specifier), req.marker is not None, str(req)

    @property
    def shown_requires(self) -> list[str]:
        """Each ``requires`` entry as packaging prints it (through :meth:`requirement`: a
        read-only command takes it from the remembered answers)."""
        return [self.requirement(text)[3] for text in self.requires_text]

    @property
    def requires(self) -> tuple[Requirement, ...]:
        if self._requires is None and not self.requires_text:
            self._requires = ()  # no packaging import for a patchset without requirements
        if self._requires is None:
            from packaging.requirements import InvalidRequirement, Requirement

            out = []
            for text in self.requires_text:
                try:
                    out.append(Requirement(text))
                except InvalidRequirement as exc:
                    where = f"{self.root}/patchset.toml"
                    raise PatchFormatError(f"{where}: bad requirement {text!r}: {exc}") from None
            self._requires = tuple(out)
        return self._requires

    def patch(self, patch_id: str) -> Patch | None:
        return next((p for p in self.patches if p.id == patch_id), None)

    def bind_names(self, exists: Callable[[str], bool]) -> None:
        """Every patch's names bound (:meth:`Patch.bind_names`)."""
        for p in self.patches:
            p.bind_names(exists)

    def needing(self, ids: list[str]) -> list[str]:
        """The patches that need one of ``ids`` (``Needs``), directly or through another one,
        in series order: what must be left out with them.

        >>> ps = Patchset("x", "1", "", "d", "", (), (Patch("p1", {}, Path("a"), ""),
        ...     Patch("p2", {"needs": "p1"}, Path("b"), ""),
        ...     Patch("p3", {"needs": "p2"}, Path("c"), "")), Path("."), "")
        >>> ps.needing(["p1"]), ps.needing(["p3"])
        (['p2', 'p3'], [])
        """
        out: list[str] = []
        for patch in self.patches:  # the series order: a need comes before what needs it
            if patch.id not in ids and any(n in ids or n in out for n in patch.needs):
                out.append(patch.id)
        return out

    @property
    def ids(self) -> list[str]:
        return [p.id for p in self.patches]


def _clean_subject(value: str) -> str:
    return re.sub(r"^\[PATCH[^\]]*\]\s*", "", value).strip()


def split_header(text: str) -> tuple[dict[str, str], str]:
    """Split a patch file into its header fields (lower-case names) and the diff text."""
    fields, body, _ = split_patch(text)
    return fields, body.replace("\r\n", "\n")


def split_patch(text: str) -> tuple[dict[str, str], str, int]:
    """:func:`split_header`, the diff keeping its line endings, and the line it starts at.

    Only the header's lines are looked at: the diff is sliced off whole (explain and status
    read every patch of every patchset, and some diffs are thousands of lines: P1).
    """
    fields: dict[str, str] = {}
    description: list[str] = []
    current: str | None = None
    pos, i, body_at = 0, 0, len(text)
    while True:
        end = text.find("\n", pos)
        line = (
            text[pos:] if end < 0 else text[pos : end - 1 if text[end - 1 : end] == "\r" else end]
        )
        if line == "---" or line.startswith(_DIFF_START):
            if line != "---":
                body_at = pos
            elif end >= 0:
                body_at = end + 1
            i += line == "---"
            break
        i += 1
        if i == 1 and _MAIL_FROM.match(line):
            pass
        elif line[:1] in (" ", "\t") and current is not None:
            cont = line[1:]
            fields[current] += "\n" + ("" if cont.strip() == "." else cont)
        elif match := _FIELD.match(line):
            name = match.group(1).lower()
            current = _ALIASES.get(name, name)
            if current in fields and name in _ALIASES:
                current = name  # an explicit field wins over a mail-header alias
            fields[current] = match.group(2).strip()
        else:
            current = None
            if line.strip():
                description.append(line.strip())
        if end < 0:
            break
        pos = end + 1
    body = text[body_at:]
    if "title" in fields:
        fields["title"] = _clean_subject(fields["title"])
    if description and "description" not in fields:
        fields["description"] = "\n".join(description)
    return {k: v.strip() for k, v in fields.items()}, body, i + 1


def parse_patch(path: Path, raw: bytes, eager: bool = True) -> Patch:
    """Parse one patch file; ``eager=False`` leaves the diff to be parsed on first use."""
    label = shown(path.name)
    text = read_mail(raw, label).decode("utf-8", "surrogateescape")
    if not text.strip():
        raise PatchFormatError(f"{label}: empty patch file")
    fields, body, first_line = split_patch(text)
    try:
        "".join(fields.values()).encode("utf-8")
    except UnicodeEncodeError:
        raise PatchFormatError(f"{label}: the header is not valid UTF-8") from None
    patch_id = fields.get("patch-id") or path.stem
    if not patch_id.isprintable():
        raise PatchFormatError(f"{label}: Patch-Id {shown(patch_id)} has unprintable characters")
    patch = Patch(patch_id, fields, path, body.replace("\r\n", "\n"), (body, first_line))
    if eager:
        _ = patch.files
    return patch


def smoke_root_for(root: Path, meta: dict[str, object], where: str) -> Path:
    """The patchset directory whose ``smoke/`` holds this patchset's shared smoke tests.

    ``smoke-from = "other"`` in ``[patchset]`` names a sibling patchset (same directory) whose
    smoke tests cover these patches too, so they are not copied. A ``smoke/`` of this
    patchset's own may add tests for patches the sibling does not have: the two folders run as
    one (the sibling's ``conftest.py`` applies to both), so a file name may not be in both.
    """
    other = meta.get("smoke-from")
    if other is None:
        return root
    if not isinstance(other, str) or not other.strip():
        raise PatchFormatError(f"{where}: 'smoke-from' must be a patchset name")
    if "/" in other or "\\" in other or other in (".", "..") or not other.isprintable():
        raise PatchFormatError(f"{where}: smoke-from {other!r} must name a sibling patchset")
    sibling = root.parent / other
    if not (sibling / "patchset.toml").is_file() or not (sibling / "smoke").is_dir():
        raise PatchFormatError(
            f"{where}: smoke-from {other!r}: no patchset with a smoke/ folder beside this one"
        )
    return sibling


def resolve_smoke(root: Path, smoke_root: Path, rel: str) -> Path:
    """A Smoke-Test path: in the patchset's own ``smoke/`` if it is there, else in
    ``smoke_root``'s (the smoke-from sibling, or the patchset itself)."""
    own = root / rel
    return own if smoke_root != root and own.is_file() else smoke_root / rel


def smoke_clashes(dirs: list[Path]) -> list[str]:
    """File names (relative to ``smoke/``) found in more than one of the overlaid folders."""
    seen: set[str] = set()
    clashes: list[str] = []
    for d in dirs:
        for rel in sorted(_smoke_files(str(d))):
            if rel in seen:
                clashes.append(rel)
            seen.add(rel)
    return clashes


def _smoke_files(top: str) -> list[str]:
    """The files below ``top`` (a link to one too), relative to it, ``/``-separated; not in
    ``__pycache__``, not ``.pyc``. ``os.walk``: no ``Path`` per entry, and no descent into the
    ``__pycache__`` folders an install compiles (every status and explain loads them: P1)."""
    found = []
    for here, subdirs, files in os.walk(top):  # a link to a folder is not entered
        subdirs[:] = [s for s in subdirs if s != "__pycache__"]
        rel = os.path.relpath(here, top)
        for name in files:
            if os.path.splitext(name)[1] != ".pyc" and os.path.isfile(os.path.join(here, name)):
                found.append(name if rel == "." else f"{rel}/{name}".replace(os.sep, "/"))
    return found


def requirement_admits(text: str, version: str) -> bool:
    """Whether the requirement ``text`` (already read by :meth:`Patchset.requirement`)
    admits ``version`` (pre-releases too)."""
    return answers.remember(
        "requirement-contains", f"{text}\0{version}", lambda: _admits(text, version)
    )


def marker_holds(text: str, markers: dict[str, str]) -> bool:
    """Whether the marker of the requirement ``text`` holds in the environment ``markers``."""
    question = f"{text}\0{sorted(markers.items())!r}"
    return answers.remember("requirement-marker", question, lambda: _holds(text, markers))


def _admits(text: str, version: str) -> bool:
    from packaging.requirements import Requirement

    return Requirement(text).specifier.contains(version, prereleases=True)


def _holds(text: str, markers: dict[str, str]) -> bool:
    from packaging.requirements import Requirement

    marker = Requirement(text).marker
    return marker is None or marker.evaluate(markers)
