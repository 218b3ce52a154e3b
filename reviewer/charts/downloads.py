"""A remote chart from the cache, or else from its repository or registry (never when offline)."""

from __future__ import annotations

from reviewer import jail
from reviewer.charts.cache import ChartCache, check_segment
from reviewer.charts.errors import CHART_NOT_FOUND, CORRUPT_ARCHIVE, NOT_CACHED, ChartError
from reviewer.charts.once import Once
from reviewer.charts.remote import Remote
from reviewer.charts.semver import is_exact
from reviewer.charts.source import ChartSource, ResolvedChart, choose_version, resolved
from reviewer.charts.transport import display_url


class CacheSource:
    """Charts from the cache alone: what `--offline` runs use."""

    def __init__(self, cache: ChartCache) -> None:
        self._cache = cache

    def download(self, remote: Remote, version: str | None) -> ResolvedChart:
        """The best cached version for `version`; `NOT_CACHED` when none fits."""
        cached = self._cache.versions(remote.source, remote.name)
        chosen = choose_version(remote, cached, version)
        found = self._cache.find(remote.source, remote.name, chosen) if chosen else None
        if found is None or chosen is None:
            listed = ", ".join(cached) or "none"
            raise ChartError(
                remote.ref,
                NOT_CACHED,
                f"no cached version of '{remote.name}' from {display_url(remote.source)} "
                f"matches (cached: {listed}) in {self._cache.root}",
                version=version,
                hint="run once without --offline to fill the cache",
            )
        return resolved(remote, chosen, found)


class Downloads:
    """Routes a remote chart: an exact version already cached, else the HTTP or OCI source
    (the cache alone when offline); each chart and version at most once per run."""

    def __init__(
        self, cache: ChartCache, *, http: ChartSource, oci: ChartSource, offline: bool
    ) -> None:
        self._cache = cache
        self._http = http
        self._oci = oci
        self._offline = CacheSource(cache) if offline else None
        self._once: Once[ResolvedChart] = Once()

    def download(self, remote: Remote, version: str | None) -> ResolvedChart:
        """The chart `remote` names at `version`; a failure is remembered for the run too."""
        key = (remote.source, remote.name, version or "")
        return self._once.get(key, lambda: _checked(remote, self._download(remote, version)))

    def _download(self, remote: Remote, version: str | None) -> ResolvedChart:
        check_segment(remote.name, ref=remote.ref, what="chart name", reason=CHART_NOT_FOUND)
        if version and is_exact(version):
            cached = self._cache.find(remote.source, remote.name, version)
            if cached is not None:
                return resolved(remote, version, cached)
        if self._offline is not None:
            return self._offline.download(remote, version)
        if remote.oci:
            return self._oci.download(remote, version)
        return self._http.download(remote, version)


def _checked(remote: Remote, chart: ResolvedChart) -> ResolvedChart:
    """`chart` once its archive holds only files and directories (cached ones too: a cache
    may outlive the version of reviewer that filled it)."""
    problem = jail.archive_problem(chart.path)
    if problem is not None:
        raise ChartError(remote.ref, CORRUPT_ARCHIVE, problem, version=chart.version)
    return chart
