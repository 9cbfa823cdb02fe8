"""The whole pristine wheel of a release, proven to be the release (reads only).

``compatkit wheel`` copies every byte of its source wheel into a wheel that gets installed, so a
copy found in a folder or a cache is used only when it is proven
(:mod:`compatkit.delivery.wheelcheck`):
by the sha256 the user passes, else by the installed release's RECORD, else by the index's
sha256 for the file. Copies that fail are skipped, each with the reason, and the next is tried.
Files are checked streamed (:meth:`compatkit.delivery.wheeltree.Tree.content`): only their hashes
are kept, so a gigabyte library costs no more memory than a small module.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping

from compatkit import bounded
from compatkit.delivery import wheelcheck
from compatkit.delivery.wheelfile import Content
from compatkit.delivery.wheels import WheelSource
from compatkit.delivery.wheeltree import Corrupt, Tree
from compatkit.errors import CompatkitError
from compatkit.model.progress import Reporter
from compatkit.value import Value


class WholeWheel(Value):
    """Every file of one released wheel, in its RECORD's order, each checked against it:
    metadata as bytes, other files left where they are; ``proof`` says what proved it the
    release ("--sha256", "the installed RECORD", "the index")."""

    __slots__ = ("label", "files", "executable", "proof")

    def __init__(
        self, label: str, files: dict[str, Content], executable: frozenset[str], proof: str
    ) -> None:
        self.label, self.files, self.executable, self.proof = label, files, executable, proof


class Proof(Value):
    """What may prove a copy is the release: the user's sha256 (hex), the installed RECORD
    (path -> hash) when the installed version is that release unpatched; ``installed_note``
    says why there is no installed RECORD to compare with."""

    __slots__ = ("sha256", "installed", "installed_note")

    def __init__(
        self,
        sha256: str | None = None,
        installed: Mapping[str, str] | None = None,
        installed_note: str = "",
    ) -> None:
        self.sha256, self.installed, self.installed_note = sha256, installed, installed_note


def _files(tree: Tree, reporter: Reporter) -> WholeWheel:
    if tree.problems:
        raise Corrupt(f"{tree.label}: {'; '.join(tree.problems[:3])}")
    if not tree.record:
        raise Corrupt(f"{tree.label}: no RECORD")
    files: dict[str, Content | None] = {}
    with reporter.task(f"reading {tree.label}", total=len(tree.record)) as task:
        for p in tree.record:
            files[p] = tree.content(p)
            task.advance()
    missing = [p for p, data in files.items() if data is None and not p.endswith("/RECORD")]
    if missing:
        raise Corrupt(f"{tree.label}: {', '.join(missing[:3])} missing")
    present = {p: d for p, d in files.items() if d is not None}
    executable = frozenset(p for p in present if tree.executable(p))
    return WholeWheel(tree.label, present, executable, "")


def _data_dir(files: Mapping[str, Content]) -> str:
    info = next((p.split("/", 1)[0] for p in files if ".dist-info/" in p), "x.dist-info")
    return info[: -len(".dist-info")] + ".data"


def _archive_sha(tree: Tree) -> str | None:
    if tree.archive is None:
        return None
    digest = hashlib.sha256()
    fd, _ = bounded.open_regular(tree.archive)  # a FIFO swapped in since: Refused
    with os.fdopen(fd, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _by_index(src: WheelSource, tree: Tree, want: str) -> str:
    name, _, version = want.partition(" ")
    try:
        listed = src.index_hashes(name, version)
    except CompatkitError as exc:
        raise Corrupt(f"{tree.label}: cannot check it against the index ({exc})") from None
    if _archive_sha(tree) in listed:
        return "the index's sha256"
    raise Corrupt(f"{tree.label}: its sha256 is not one the index lists for {want}")


def _prove(src: WheelSource, tree: Tree, whole: WholeWheel, proof: Proof, want: str) -> str:
    """What proves ``whole`` is the release; raises Corrupt saying why nothing does."""
    if proof.sha256 is not None:
        sha = _archive_sha(tree)
        if sha is None:
            raise Corrupt(f"{tree.label}: an unpacked copy, so --sha256 cannot be checked")
        if sha != proof.sha256.lower():
            raise Corrupt(f"{tree.label}: sha256 {sha} is not the --sha256 given")
        return "--sha256"
    if proof.installed is not None:
        found = wheelcheck.release_problems(whole.files, _data_dir(whole.files), proof.installed)
        if found:
            raise Corrupt(f"{tree.label}: not the installed release: {'; '.join(found[:3])}")
        return "the installed RECORD"
    if src.index and tree.archive is not None:
        return _by_index(src, tree, want)
    where = proof.installed_note or f"{want} is not installed here"
    how = "an unpacked copy has no archive hash" if src.index else "offline: no index hash"
    raise Corrupt(f"{tree.label}: nothing proves it is the release ({where}; {how}): pass --sha256")


def whole_wheel(
    src: WheelSource, name: str, version: str, proof: Proof | None = None
) -> WholeWheel:
    """All files of ``name==version``'s wheel from the first sane, proven copy; raises
    CompatkitError listing every copy that was tried and why it was refused."""
    proof = proof or Proof()
    problems: list[str] = []
    for tree in src.trees(name, version):
        try:
            whole = _files(tree, src.reporter)
            how = _prove(src, tree, whole, proof, f"{name} {version}")
        except Corrupt as exc:
            problems.append(str(exc))
            continue
        return WholeWheel(whole.label, whole.files, whole.executable, how)
    problems = src.none_left(name, version, problems)
    raise CompatkitError(f"cannot get the pristine wheel of {name} {version}", problems)
