"""Why a chart could not be resolved or fetched: `ChartError` and its reasons."""

from __future__ import annotations

from reviewer.errors import ReviewerError

# Why a chart could not be fetched: the `reason` of a `ChartError`.
UNREACHABLE = "repository unreachable"
CHART_NOT_FOUND = "chart not found"
VERSION_NOT_FOUND = "version not found"
BAD_CREDENTIALS = "bad credentials"
CORRUPT_ARCHIVE = "corrupt archive"
DEPENDENCY_MISSING = "dependency missing"
NOT_CACHED = "not in the cache (offline)"


class ChartError(ReviewerError):
    """A chart could not be resolved or fetched: names the reference, the reason and the cause."""

    def __init__(
        self,
        ref: str,
        reason: str,
        detail: str,
        *,
        version: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.ref = ref
        self.reason = reason
        self.version = version
        wanted = f" version '{version}'" if version else ""
        super().__init__(f"chart '{ref}'{wanted}: {reason}: {detail}", hint=hint)
