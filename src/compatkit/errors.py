"""The exceptions compatkit turns into exit codes (docs/reference/exit-codes.md)."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130
EXIT_PIPE_CLOSED = 141  # 128 + SIGPIPE: stdout closed while the command was still running


class CompatkitError(Exception):
    """An expected failure: a mismatch, a conflict, a failed verify. Exit code 1.

    ``problems`` holds every problem found, so a command reports all of them at once.
    """

    exit_code = EXIT_FAILED

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.problems = problems or []


class UsageError(CompatkitError):
    """Bad input from the user: an unknown patchset or id, a bad option. Exit code 2."""

    exit_code = EXIT_USAGE


class PatchFormatError(CompatkitError):
    """A patch or patchset file that does not parse. Exit code 1."""
