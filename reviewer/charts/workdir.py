"""A private working directory for one run: dependency builds and registry logins."""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path


class WorkDir:
    """A 0700 directory, created on first use and removed by `close`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._directory: tempfile.TemporaryDirectory[str] | None = None

    def path(self) -> Path:
        """The directory, created now if need be."""
        with self._lock:
            if self._directory is None:
                self._directory = tempfile.TemporaryDirectory(prefix="reviewer-charts-")
            return Path(self._directory.name)

    def close(self) -> None:
        """Remove the directory and everything in it."""
        with self._lock:
            if self._directory is not None:
                self._directory.cleanup()
                self._directory = None
