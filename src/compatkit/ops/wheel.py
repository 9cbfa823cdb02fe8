"""Build a patched wheel: the exact pristine wheel with a patchset applied (``compatkit wheel``).

The pristine wheel comes from :func:`compatkit.delivery.wheels.whole_wheel` (the same copies
``diff`` and ``lint`` use, every file checked against its RECORD). The series is planned with
:func:`compatkit.env.plan.plan_apply` on an in-memory view of the wheel, so containment, start-up
code and hunk matching are the checks ``apply`` makes, and the state it writes is the one
``status``, ``verify`` and ``explain`` read, marked ``built_in``.

The bytes depend only on the pristine wheel, the patchset's content, ``SOURCE_DATE_EPOCH`` and
:data:`WHEEL_FORMAT`; never on compatkit's version or on which optional libraries are installed.
The version's local label ``ck.<16 hex>`` hashes the format number with the patchset's digest,
so a format change (made only on purpose, and documented in docs/delivery.md) also changes the
file name, and a lockfile never sees two different wheels under one name.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from pathlib import Path

from compatkit import atomic, bounded
from compatkit.delivery import wheelfile
from compatkit.delivery.wheelfile import Content
from compatkit.delivery.wheelrelease import Proof, WholeWheel, whole_wheel
from compatkit.delivery.wheels import WheelSource
from compatkit.env.plan import Overlay, plan_apply
from compatkit.env.state import states_of
from compatkit.env.target import Dist, Environment, _headers
from compatkit.errors import CompatkitError, UsageError
from compatkit.load.registry import Registry
from compatkit.model.patchset import Patchset
from compatkit.model.paths import check_relpath
from compatkit.model.records import hash_bytes
from compatkit.value import Value

# 1: the SBOM carried compatkit's version (cyclonedx-python-lib); 2: compatkit's own JSON,
# the format number instead of the version, the label hashing the format with the digest
WHEEL_FORMAT = 2
LABEL_PREFIX = "ck."
_OUR_LABEL = re.compile(r"[+.]ck\.[0-9a-f]+$")
_SIGNATURES = ("RECORD.jws", "RECORD.p7s")  # they sign the pristine RECORD: no longer true
SBOM_NAME = "compatkit.cdx.json"


class WheelResult(Value):
    __slots__ = (
        "patchset",
        "path",
        "name",
        "version",
        "base_version",
        "sha256",
        "applied",
        "files",
        "source",
        "sbom",
        "unchanged",
        "proof",
        "notes",
    )

    def __init__(
        self,
        patchset: str,
        path: Path,
        name: str,
        version: str,
        base_version: str,
        sha256: str,
        applied: list[str],
        files: list[str],
        source: str,
        sbom: str,  # the SBOM's path inside the wheel
        unchanged: bool,  # the same bytes were already there
        proof: str,  # what proved the source wheel the release
        notes: list[str],  # where the pristine wheel came from (downloaded, skipped copies)
    ) -> None:
        self.patchset, self.notes = patchset, notes
        self.path, self.name, self.version, self.base_version = path, name, version, base_version
        self.sha256, self.applied, self.files, self.source = sha256, applied, files, source
        self.sbom, self.unchanged, self.proof = sbom, unchanged, proof

    def to_json(self) -> dict[str, object]:
        return {
            "ok": True,
            "patchset": self.patchset,
            "wheel": str(self.path),
            "distribution": self.name,
            "version": self.version,
            "base_version": self.base_version,
            "sha256": self.sha256,
            "applied": self.applied,
            "files": self.files,
            "source": self.source,
            "proof": self.proof,
            "sbom": self.sbom,
            "unchanged": self.unchanged,
            "notes": self.notes,
        }


class MemoryFiles:
    """The read side of a wheel held in a dict (``compatkit.env.plan.Files``): a file left in
    the source wheel (:class:`compatkit.delivery.wheelfile.Stored`) is read when asked for (a
    file a patch edits: small)."""

    def __init__(self, files: dict[str, Content], executable: set[str] | None = None) -> None:
        self.files = files
        self.executable = executable or set()
        self._dirs = {p.rsplit("/", i)[0] for p in files for i in range(1, p.count("/") + 1)}

    def read(self, relpath: str) -> bytes | None:
        content = self.files.get(relpath)
        return None if content is None else wheelfile.data_of(content)

    def is_file(self, relpath: str) -> bool:
        return relpath in self.files

    def lexists(self, relpath: str) -> bool:
        return relpath in self.files or relpath in self._dirs

    def listdir(self, relpath: str) -> list[str]:
        prefix = relpath.rstrip("/") + "/"
        names = {p[len(prefix) :].split("/", 1)[0] for p in self.files if p.startswith(prefix)}
        return sorted(names)

    def mtime_ns(self, relpath: str) -> int:
        return 0

    def size(self, relpath: str) -> int:
        content = self.files.get(relpath, b"")
        return content.size if isinstance(content, wheelfile.Stored) else len(content)

    def hash(self, relpath: str) -> str | None:
        """Its RECORD hash: a stored file's was taken as it was streamed, never read again."""
        content = self.files.get(relpath)
        if isinstance(content, wheelfile.Stored):
            return content.hash
        return None if content is None else hash_bytes(content)

    def mode(self, relpath: str) -> int:
        return 0o755 if relpath in self.executable else 0o644

    def check_inside(self, relpath: str, dirs_ok: set[str]) -> None:
        check_relpath(relpath)
        parts = relpath.split("/")
        for i in range(1, len(parts)):
            if "/".join(parts[:i]) in self.files:
                raise CompatkitError(f"refused path {relpath!r}: {parts[i - 1]} is a file")


def base_version(ps: Patchset, env: Environment) -> str:
    """The release to patch: the installed target's (less a label of ours), else the pin."""
    dist = env.find(ps.distribution)
    if dist is not None:
        version = _OUR_LABEL.sub("", dist.version)
    elif ps.specifier_text.strip().startswith("==") and "," not in ps.specifier_text:
        version = ps.specifier_text.strip()[2:].strip()
    else:
        raise CompatkitError(
            f"{ps.distribution} is not installed in {env.describe()} and {ps.name} targets "
            f"{ps.target}, not one version: install it there or pass --python"
        )
    if "*" in version or not ps.specifier.contains(version, prereleases=True):
        raise CompatkitError(f"{ps.name} targets {ps.target}, not {ps.distribution} {version}")
    return version


def _dist_info(whole: WholeWheel) -> str:
    infos = {p.split("/", 1)[0] for p in whole.files if p.split("/", 1)[0].endswith(".dist-info")}
    if len(infos) != 1:
        raise CompatkitError(f"{whole.label}: not one .dist-info folder ({sorted(infos)})")
    return infos.pop()


class _Renamed(Value):
    __slots__ = ("name", "info", "files", "executable")

    def __init__(
        self, name: str, info: str, files: dict[str, Content], executable: set[str]
    ) -> None:
        self.name, self.info, self.files, self.executable = name, info, files, executable


def _renamed(whole: WholeWheel, version: str) -> _Renamed:
    """The wheel's files with the folders renamed for ``version`` and METADATA's Version set."""
    old_info = _dist_info(whole)
    metadata = wheelfile.data_of(whole.files[f"{old_info}/METADATA"])
    name = _headers(metadata.decode("utf-8")).get("name", "")
    stem = f"{wheelfile.escaped_name(name)}-{version}"

    def new(path: str) -> str:
        return wheelfile.rename_metadata(path, old_info[: -len(".dist-info")], stem)

    files = {
        new(p): data
        for p, data in whole.files.items()
        if not (p.startswith(f"{old_info}/") and p.rsplit("/", 1)[1] in _SIGNATURES)
    }
    info = f"{stem}.dist-info"
    files[f"{info}/METADATA"] = wheelfile.set_version(metadata, version)
    return _Renamed(name, info, files, {new(p) for p in whole.executable})


def _apply(ps: Patchset, version: str, w: _Renamed) -> list[str]:
    """Apply ``ps`` to the wheel's files in place, as ``compatkit apply`` would, the modes it
    sets kept in ``w.executable`` (a wheel's one permission bit); the paths it changed."""
    files, info = w.files, w.info
    order = list(files)
    files[f"{info}/RECORD"] = wheelfile.regenerate_record(files, f"{info}/RECORD", order)
    ov = Overlay(Dist(w.name, version, Path(info), Path(".")), MemoryFiles(files, w.executable))
    plan = plan_apply(ov, ps, [], force=False, built_in=True)
    for rel, data in ov.data.items():
        if data is None:
            files.pop(rel, None)
            w.executable.discard(rel)
        else:
            files[rel] = data
    for rel, mode in ov.modes.items():
        if mode & 0o100:
            w.executable.add(rel)
        else:
            w.executable.discard(rel)
    return [f.path for f in plan.state.files]


def date_epoch() -> int:
    raw = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not raw:
        return wheelfile.ZIP_EPOCH
    if not raw.isdigit():
        raise UsageError(f"SOURCE_DATE_EPOCH={raw!r}: not a number of seconds")
    return max(int(raw), wheelfile.ZIP_EPOCH)


def label(ps: Patchset) -> str:
    """``ck.`` and 16 hex digits of the wheel format and the patchset's content."""
    text = f"compatkit-wheel-format-{WHEEL_FORMAT}\n{ps.digest}\n"
    return LABEL_PREFIX + hashlib.sha256(text.encode()).hexdigest()[:16]


def _add_sbom(ps: Patchset, w: _Renamed, base: str, version: str, epoch: int) -> str:
    """PEP 770: the wheel's own CycloneDX document under ``.dist-info/sboms/``."""
    from compatkit.ops import sbom

    path = f"{w.info}/sboms/{SBOM_NAME}"
    doc = sbom.wheel_document(ps, w.name, base, version, epoch, WHEEL_FORMAT)
    w.files[path] = doc.encode()
    return path


def proof_for(env: Environment, distribution: str, base: str, sha256: str | None) -> Proof:
    """What may prove a source wheel the release: ``sha256`` (the user's), else the installed
    RECORD when ``base`` is installed here and compatkit has not patched it."""
    if sha256 is not None:
        if not re.fullmatch(r"[0-9a-fA-F]{64}", sha256):
            raise UsageError(f"--sha256 {sha256!r}: not 64 hex digits")
        return Proof(sha256=sha256)
    dist = env.find(distribution)
    if dist is None or dist.version != base:
        return Proof(installed_note=f"{distribution} {base} is not installed here")
    if states_of(dist):
        note = f"{distribution} {base} here is patched by compatkit"
        return Proof(installed_note=note)
    rows = dist.read_record().rows
    return Proof(installed={r.path: r.hash for r in rows if r.path})


def _sha_of(path: Path) -> str | None:
    """The hex sha256 of the file at ``path``, streamed (None: there is none)."""
    try:
        return bounded.sha256(path).hex()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CompatkitError(f"cannot read {path} ({exc.strerror})") from None


def _write(path: Path, w: _Renamed, epoch: int, overwrite: bool) -> tuple[bool, str]:
    """Write the wheel through a temp file beside ``path`` (streamed: a file of the source
    wheel is copied in pieces); (True if the same bytes were already there, its sha256).
    Other bytes under the same name are replaced only with ``overwrite`` (a lockfile may pin the
    old ones). On any failure nothing is left: no temp file, no folder made for it."""
    made = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = None
    try:
        tmp, fd = atomic.temp_file(path)
        with os.fdopen(fd, "wb") as f:
            wheelfile.write_zip(f, w.files, w.executable, epoch)
        sha = bounded.sha256(tmp).hex()
        there = _sha_of(path)
        if there == sha:
            os.unlink(tmp)
            return True, sha
        if there is not None and not overwrite:
            raise CompatkitError(
                f"{path} exists with other bytes: pass --overwrite to replace it "
                "(a lockfile that pins its hash will then refuse the new one)"
            )
        os.replace(tmp, path)
        return False, sha
    except BaseException:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        for folder in made:  # the innermost first
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise


def build_wheel(
    registry: Registry,
    env: Environment,
    name: str,
    out_dir: Path,
    src: WheelSource,
    sha256: str | None = None,
    overwrite: bool = False,
) -> WheelResult:
    ps = registry.get(name)
    epoch = date_epoch()  # bad input is refused before anything is fetched or written
    base = base_version(ps, env)
    proof = proof_for(env, ps.distribution, base, sha256)
    whole = whole_wheel(src, ps.distribution, base, proof)
    version = wheelfile.local_version(base, label(ps))
    w = _renamed(whole, version)
    changed = _apply(ps, version, w)
    sbom_path = _add_sbom(ps, w, base, version, epoch)
    record = f"{w.info}/RECORD"
    w.files[record] = wheelfile.regenerate_record(w.files, record, list(w.files))
    wheel_meta = wheelfile.data_of(w.files[f"{w.info}/WHEEL"])
    path = out_dir / wheelfile.wheel_name(w.name, version, wheel_meta)
    unchanged, sha = _write(path, w, epoch, overwrite)
    return WheelResult(
        ps.name,
        path,
        w.name,
        version,
        base,
        sha,
        ps.ids,
        changed,
        whole.label,
        sbom_path,
        unchanged,
        whole.proof,
        list(src.notes),
    )
