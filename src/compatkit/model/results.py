"""The states compatkit reports, one enum per domain.

- :class:`PatchState`: a patch in an environment (``status``, ``verify``, ``explain``);
- :class:`PatchsetState`: a whole patchset there, the summary ``status`` shows;
- :class:`DiffState`: what a patch's diff does to the files there (the textual oracle);
- :class:`UpstreamState`: where a patch stands against a newer release (``upstream``);
- :class:`PortState`: how it ports by three-way merge (``rebase``);
- :class:`SmokeState`: what its smoke test says (``smoke``, ``prove``, ``matrix``);
- :class:`Action`: what an ``apply`` or ``revert`` did (:mod:`compatkit.model.action`).

A result is compared by identity (``is DiffState.CONFLICT``), never by ``startswith`` on a
message, and a value of one domain is never taken for another's (mypy --strict checks it).
Each member's value is the text users see and ``--json`` carries.

>>> UpstreamState.NEEDS_PORT, f"{UpstreamState.NEEDS_PORT}", UpstreamState("needs port")
(<UpstreamState.NEEDS_PORT: 'needs port'>, 'needs port', <UpstreamState.NEEDS_PORT: 'needs port'>)
>>> matrix_state("applied"), PatchState.APPLIED in MATRIX_STATES
(<PatchState.APPLIED: 'applied'>, True)
>>> matrix_state("pass")
Traceback (most recent call last):
ValueError: 'pass' is not a matrix state
"""

from __future__ import annotations

from compatkit.model.action import TextEnum


class PatchState(TextEnum):
    """A patch in an environment."""

    APPLIED = "applied"
    BUILT_IN = "built in"  # applied by the installed wheel itself (compatkit wheel)
    NOT_APPLIED = "not applied"
    DRIFTED = "drifted"
    EXCLUDED = "excluded"
    OUTDATED = "outdated"
    NOT_APPLICABLE = "not applicable"
    RUNTIME = "applied (runtime)"  # served patched by runtime mode's import hook


class PatchsetState(TextEnum):
    """A whole patchset in an environment, from its patches' states (``status``'s summary)."""

    APPLIED = "applied"
    BUILT_IN = "applied (built in)"
    NOT_APPLICABLE = "not applicable"
    DRIFTED = "drifted"
    PARTLY_APPLIED = "partly applied"  # some patches left out with --exclude
    OUTDATED = "outdated"
    PARTLY_PRESENT = "partly applied (without compatkit)"
    PRESENT = "already present"
    NOT_APPLIED = "not applied"


class DiffState(TextEnum):
    """What a patch's diff does to the files it touches."""

    APPLIES = "applies"
    PRESENT = "already present"
    CONFLICT = "conflict"


class UpstreamState(TextEnum):
    """Where a patch stands against a newer release (``upstream``, ``matrix``)."""

    UPSTREAM = "upstream"
    STILL_NEEDED = "still needed"
    NEEDS_PORT = "needs port"
    REMOVED_UPSTREAM = "removed upstream"  # its files are gone from the release: retire it


class PortState(TextEnum):
    """How a patch (or one file of it) ports by three-way merge (``rebase``)."""

    CLEAN = "clean"
    OFFSET = "offset"
    MERGED = "merged"
    UPSTREAM = "upstream"
    CONFLICT = "conflict"


class SmokeState(TextEnum):
    """A smoke test's verdict."""

    PASS = "pass"
    FAIL = "fail"
    NOT_RUN = "not run"  # the release's dependencies cannot be installed: files only


class NodeEnd(TextEnum):
    """Where ``fleet apply`` left a node (its reason beside it: which patchsets, why)."""

    UNCHANGED = "unchanged"  # this run applied nothing there
    APPLIED = "applied"  # every node as asked: each keeps what it applied
    KEPT = "applied, kept (--keep-going)"  # not every node as asked, kept on purpose
    ROLLED_BACK = "rolled back"
    NOT_ROLLED_BACK = "NOT rolled back"  # its revert failed or got no answer
    UNKNOWN = "end state unknown"  # the node gave no answer


MatrixState = PatchState | UpstreamState  # what a matrix cell expects of a patch

MATRIX_STATES: tuple[MatrixState, ...] = (
    PatchState.APPLIED,
    UpstreamState.UPSTREAM,
    UpstreamState.STILL_NEEDED,
    UpstreamState.NEEDS_PORT,
    UpstreamState.REMOVED_UPSTREAM,
    PatchState.NOT_APPLICABLE,
)


def matrix_state(text: str) -> MatrixState:
    """The matrix state whose value is ``text``; ValueError if none."""
    for state in MATRIX_STATES:
        if state.value == text:
            return state
    raise ValueError(f"{text!r} is not a matrix state")
