"""`ChartFetcher`: a release's `ChartRef` + version → a chart on local disk.

Local charts are used in place; remote ones are downloaded (see `downloads`), each at most
once per run, and get their missing dependencies (see `dependencies`).
"""

from __future__ import annotations

from pathlib import Path

from reviewer import jail
from reviewer.charts.cache import ChartCache
from reviewer.charts.credentials import Credentials
from reviewer.charts.dependencies import DependencyBuilder
from reviewer.charts.downloads import Downloads
from reviewer.charts.errors import CHART_NOT_FOUND, ChartError
from reviewer.charts.http_source import HttpSource
from reviewer.charts.logins import Logins
from reviewer.charts.oci_source import OciSource
from reviewer.charts.policy import STRICT, NetworkPolicy
from reviewer.charts.remote import remote_for
from reviewer.charts.source import ResolvedChart
from reviewer.charts.workdir import WorkDir
from reviewer.templates import ChartRef


class ChartFetcher:
    """Resolves `ChartRef`s to charts on disk, through a cache shared by both sides of a diff.

    One fetcher per run: it remembers indexes, downloads and failures, so a chart is fetched
    at most once however many releases (and threads) ask for it. Paths it returns stay valid
    until `close()`. It reads no environment: the caller passes the credentials.
    """

    def __init__(
        self,
        *,
        cache_dir: Path,
        credentials: Credentials,
        offline: bool = False,
        timeout: float = 60.0,
        policy: NetworkPolicy = STRICT,
    ) -> None:
        self.cache = ChartCache(cache_dir)
        self._workdir = WorkDir()
        logins = Logins(credentials)
        self._oci = OciSource(self.cache, logins, self._workdir, policy=policy)
        http = HttpSource(self.cache, logins, timeout=timeout, policy=policy)
        self._downloads = Downloads(self.cache, http=http, oci=self._oci, offline=offline)
        self._dependencies = DependencyBuilder(self._downloads, self._workdir)

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
            resolved = ResolvedChart(path=_jailed(root, chart.local), source="local")
            base: Path | None = root
        else:
            remote = remote_for(chart)
            resolved = self._downloads.download(remote, version or remote.tag)
            base = None
        built = self._dependencies.build(resolved.path, ref=chart.ref, root=base)
        return ResolvedChart(
            built, resolved.source, resolved.name, resolved.version, resolved.digest
        )

    def close(self) -> None:
        """Remove working copies and the private registry login files."""
        self._oci.close()
        self._workdir.close()


def _jailed(root: Path, local: str) -> Path:
    """The local chart at `local`, checked before Helm's loader reads any of it: the
    engine follows symlinks itself and would read whatever they point to, and an archive
    (the chart itself or a packaged subchart) must hold only files and directories."""
    path = root / local
    if path.is_dir():
        jail.check_tree(root, path, archives=True)
    elif jail.resolve_file(root, local).is_file():
        jail.check_archive_file(root, path)
    else:
        # Helm's own message would name the checkout's absolute (temporary) path.
        raise ChartError(local, CHART_NOT_FOUND, "no such directory or archive in the repository")
    return path
