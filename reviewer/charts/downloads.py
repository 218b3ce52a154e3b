"""A remote chart from the cache, or else from its repository or registry (never when offline)."""

from __future__ import annotations

from reviewer.charts.base import ResolvedChart
from reviewer.charts.cache import _check_segment
from reviewer.charts.errors import CHART_NOT_FOUND, NOT_CACHED, ChartError
from reviewer.charts.index import _HttpRepositories
from reviewer.charts.oci import _OciRegistries
from reviewer.charts.remote import _Remote
from reviewer.charts.semver import is_exact
from reviewer.charts.transport import display_url


class _Downloads(_HttpRepositories, _OciRegistries):
    """Remote charts, for `ChartFetcher`."""

    def _download(self, remote: _Remote, version: str | None) -> ResolvedChart:
        _check_segment(remote.name, ref=remote.ref, what="chart name", reason=CHART_NOT_FOUND)
        if version and is_exact(version):
            cached = self.cache.find(remote.source, remote.name, version)
            if cached is not None:
                return self._resolved(remote, version, cached)
        if self.offline:
            return self._from_cache(remote, version)
        if remote.oci:
            return self._download_oci(remote, version)
        return self._download_http(remote, version)

    def _from_cache(self, remote: _Remote, version: str | None) -> ResolvedChart:
        cached = self.cache.versions(remote.source, remote.name)
        chosen = self._select(remote, cached, version)
        found = self.cache.find(remote.source, remote.name, chosen) if chosen else None
        if found is None or chosen is None:
            listed = ", ".join(cached) or "none"
            raise ChartError(
                remote.ref,
                NOT_CACHED,
                f"no cached version of '{remote.name}' from {display_url(remote.source)} "
                f"matches (cached: {listed}) in {self.cache.root}",
                version=version,
                hint="run once without --offline to fill the cache",
            )
        return self._resolved(remote, chosen, found)
