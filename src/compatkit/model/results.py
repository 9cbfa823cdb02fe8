"""One vocabulary for every result compatkit reports: the :class:`Status` enum.

A patch in an environment (``status``, ``verify``, ``explain``), what its diff does to the
files there (the textual oracle), where it stands against a newer release (``upstream``,
``matrix``), how it ports by three-way merge (``rebase``) and what its smoke test says
(``smoke``, ``prove``) are all members of one enum, so a result is compared by identity
(``is Status.CONFLICT``), never by ``startswith`` on a message. Each member's value is the
text users see and ``--json`` carries.

>>> Status.NEEDS_PORT, f"{Status.NEEDS_PORT}", Status("needs port") is Status.NEEDS_PORT
(<Status.NEEDS_PORT: 'needs port'>, 'needs port', True)
>>> Status.APPLIED in MATRIX_STATES, Status.PASS in MATRIX_STATES
(True, False)
"""

from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    # a patch in an environment
    APPLIED = "applied"
    BUILT_IN = "built in"  # applied by the installed wheel itself (compatkit wheel)
    NOT_APPLIED = "not applied"
    DRIFTED = "drifted"
    EXCLUDED = "excluded"
    OUTDATED = "outdated"
    NOT_APPLICABLE = "not applicable"
    RUNTIME = "applied (runtime)"  # served patched by runtime mode's import hook
    # what its diff does to the files there
    APPLIES = "applies"
    PRESENT = "already present"
    CONFLICT = "conflict"
    # against a newer release (upstream, matrix)
    UPSTREAM = "upstream"
    STILL_NEEDED = "still needed"
    NEEDS_PORT = "needs port"
    REMOVED_UPSTREAM = "removed upstream"  # its files are gone from the release: retire it
    # a port by three-way merge (rebase; CONFLICT and UPSTREAM too)
    CLEAN = "clean"
    OFFSET = "offset"
    MERGED = "merged"
    # a smoke test
    PASS = "pass"
    FAIL = "fail"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


MATRIX_STATES = (
    Status.APPLIED,
    Status.UPSTREAM,
    Status.STILL_NEEDED,
    Status.NEEDS_PORT,
    Status.REMOVED_UPSTREAM,
    Status.NOT_APPLICABLE,
)
