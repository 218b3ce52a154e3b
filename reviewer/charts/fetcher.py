"""`ChartFetcher`: a release's `ChartRef` + version → a chart on local disk.

Local charts are used in place; remote ones are downloaded (see `downloads`), each at most
once per run, and get their missing dependencies (see `dependencies`).
"""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path
from typing import Any

from reviewer.charts.base import ResolvedChart
from reviewer.charts.cache import _Cache, default_cache_dir
from reviewer.charts.credentials import Credentials
from reviewer.charts.dependencies import _Dependencies
from reviewer.charts.once import _Once
from reviewer.charts.remote import _remote
from reviewer.templates import ChartRef


class ChartFetcher(_Dependencies):
    """Resolves `ChartRef`s to charts on disk, through a cache shared by both sides of a diff.

    One fetcher per run: it remembers indexes, downloads and failures, so a chart is fetched
    at most once however many releases (and threads) ask for it. Paths it returns stay valid
    until `close()`. Credentials default to `Credentials.from_environment()`.
    """

    def __init__(
        self,
        *,
        cache_dir: Path | None = None,
        offline: bool = False,
        credentials: Credentials | None = None,
        timeout: float = 60.0,
    ) -> None:
        self.cache = _Cache(cache_dir if cache_dir is not None else default_cache_dir())
        self.offline = offline
        self.timeout = timeout
        self._credentials = (
            credentials if credentials is not None else Credentials.from_environment()
        )
        self._once: _Once[Any] = _Once()
        # Re-entrant: a registry login made under the lock records its secrets under it too.
        self._lock = threading.RLock()
        self._secrets: set[str] = set()
        self._clients: dict[tuple[str, str], Any] = {}
        self._private: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> ChartFetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def fetch(self, chart: ChartRef, version: str | None, *, root: Path) -> Path:
        """The path (directory or .tgz) to render for `chart`; raises `ChartError`."""
        return self.resolve(chart, version, root=root).path

    def resolve(self, chart: ChartRef, version: str | None, *, root: Path) -> ResolvedChart:
        """Like `fetch`, with what was resolved (source, name, version, digest)."""
        if chart.local is not None:
            resolved = ResolvedChart(path=root / chart.local, source="local")
            base: Path | None = root
        else:
            remote = _remote(chart)
            wanted = version or remote.tag
            key = ("chart", remote.source, remote.name, wanted or "")
            resolved = self._once.get(key, lambda: self._download(remote, wanted))
            base = None
        built = self._once.get(
            ("dependencies", resolved.path),
            lambda: self._with_dependencies(resolved.path, ref=chart.ref, root=base),
        )
        return ResolvedChart(
            built, resolved.source, resolved.name, resolved.version, resolved.digest
        )

    def close(self) -> None:
        """Remove working copies and the private registry login files."""
        for client in self._clients.values():
            client.close()
        self._clients.clear()
        if self._private is not None:
            self._private.cleanup()
            self._private = None
