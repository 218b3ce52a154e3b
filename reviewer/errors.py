"""Error types and the exit-code contract.

Messages never carry raw documents or values: they name the file, the field
and what is allowed, so an error can be printed in a public comment safely.
"""

from __future__ import annotations

import errno
from enum import IntEnum

# What the system runs out of, by errno: (what reviewer asked for, how to give it more). No file
# or input is to blame: the run stops (reviewer/cli.py) instead of failing one release.
SHORTAGES = {
    errno.EMFILE: ("file descriptors", "raise the limit (`ulimit -n`) or lower --jobs"),
    errno.ENFILE: ("file descriptors", "the whole system has too many files open"),
    errno.ENOMEM: ("memory", "free some, or lower --jobs"),
    errno.ENOSPC: ("disk space", "free some where the caches, temporary files and outputs are"),
    errno.EDQUOT: ("disk space", "the disk quota is reached"),
}


class ExitStatus(IntEnum):
    """The process exit codes (documented in README.md)."""

    OK = 0
    RENDER_FAILED = 1
    CHANGES = 2
    INVALID_REPOSITORY = 3
    USAGE = 64
    BUG = 70
    NO_RESOURCES = 71
    """The system refused memory, threads, file descriptors or disk space (sysexits'
    EX_OSERR): not a bug; the run stopped there."""


class ReviewerError(Exception):
    """An expected failure with a message fit for users (and public comments)."""

    def __init__(self, message: str, *, file: str | None = None, hint: str | None = None) -> None:
        self.message = message
        self.file = file
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        """The full message: `file: message (hint)`."""
        text = f"{self.file}: {self.message}" if self.file else self.message
        return f"{text}\n  hint: {self.hint}" if self.hint else text


class ConfigError(ReviewerError):
    """A repository file is invalid: names the file, the field and what is allowed."""

    def __init__(
        self,
        file: str,
        message: str,
        *,
        field: str | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.field = field
        self.line = line
        location = f"{file}:{line}" if line is not None else file
        text = f"{field}: {message}" if field else message
        super().__init__(text, file=location, hint=hint)


class RepositoryError(ReviewerError):
    """The repository as a whole cannot be understood (layout-level problem)."""


class RenderError(ReviewerError):
    """A single release failed to render; other releases go on."""


class CommandError(ReviewerError):
    """An external command failed; the message shows the command, code and output."""


class UsageProblem(ReviewerError):
    """The command line names something the repository does not have (exit 64, usage)."""
