"""``compatkit recover [DIST]... [--discard]``: what an interrupted run left behind.

Every command already rolls back an interrupted run's journal before it reads. This command
does it on its own, for every distribution in the environment (or the ones named), and with
``--discard`` deletes a journal that was refused (see :mod:`compatkit.model.journal`) without
restoring anything: the files stay as they are, and ``verify --pristine`` shows which differ
from RECORD.
"""

from __future__ import annotations

from pathlib import Path

from compatkit.cli.output import Output
from compatkit.env import txn
from compatkit.env.lock import locked
from compatkit.env.target import Dist, Environment


def journaled(env: Environment) -> list[Dist]:
    """The distributions in ``env`` that hold a journal (or its leftovers)."""
    found: dict[Path, Dist] = {}
    for base in env.paths:
        for hit in sorted(Path(base).glob(f"*.dist-info/{txn.JOURNAL}*")):
            dist = Dist.at(hit.parent)
            if dist is not None:
                found.setdefault(hit.parent, dist)
    return list(found.values())


def recover(env: Environment, names: list[str], discard: bool, out: Output | None = None) -> int:
    out = out or Output()
    dists = [env.require(n) for n in names] if names else journaled(env)
    results = []
    for dist in dists:
        with locked(dist):
            done = txn.discard(dist) if discard else txn.recover(dist)
        action = ("discarded" if discard else "rolled back") if done else "none"
        results.append({"distribution": dist.name, "version": dist.version, "action": action})
        if action == "discarded":
            out.line(
                f"{dist.name} {dist.version}: deleted the journal, restored nothing; "
                f"'compatkit verify --pristine {dist.name}' shows which files differ from RECORD"
            )
        elif action == "rolled back":
            out.line(f"{dist.name} {dist.version}: rolled back an interrupted compatkit run")
    if not any(r["action"] != "none" for r in results):
        out.line(f"nothing to recover in {env.describe()}")
    out.doc.update(ok=True, recovered=results)
    return 0
