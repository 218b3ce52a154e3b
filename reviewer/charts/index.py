"""HTTP(S) chart repositories: `repo/chart` references resolved through `index.yaml`."""

from __future__ import annotations

import shutil
import urllib.parse
from typing import Any

import helm_python

from reviewer.charts.base import ResolvedChart, _FetcherBase
from reviewer.charts.errors import BAD_CREDENTIALS, CHART_NOT_FOUND, UNREACHABLE, ChartError
from reviewer.charts.remote import _Remote
from reviewer.charts.transport import _http_get, _HttpFailure, _origin, display_url


class _HttpRepositories(_FetcherBase):
    """Downloads from HTTP(S) repositories, for `ChartFetcher`."""

    def _download_http(self, remote: _Remote, version: str | None) -> ResolvedChart:
        entries = self._once.get(("index", remote.source), lambda: self._index(remote))
        listed = entries.get(remote.name)
        if not isinstance(listed, list) or not listed:
            raise ChartError(
                remote.ref,
                CHART_NOT_FOUND,
                f"the repository {display_url(remote.source)} has no chart '{remote.name}'",
                version=version,
            )
        by_version = {str(e.get("version")): e for e in listed if isinstance(e, dict)}
        chosen = self._select(remote, list(by_version), version)
        if chosen is None:
            raise self._no_version(remote, list(by_version), version)
        entry = by_version[chosen]
        digest = str(entry.get("digest") or "").removeprefix("sha256:") or None
        cached = self.cache.find(remote.source, remote.name, chosen, digest)
        if cached is not None:
            return self._resolved(remote, chosen, cached)
        scratch = self.cache.scratch()
        try:
            archive = scratch / f"{remote.name}-{chosen}.tgz"
            archive.write_bytes(self._download_archive(remote, chosen, entry))
            return self._resolved(remote, chosen, self._store(remote, chosen, archive, digest))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _index(self, remote: _Remote) -> dict[str, Any]:
        url = f"{remote.source}/index.yaml"
        data = self._get(url, remote, what="repository index", missing=UNREACHABLE)
        try:
            document = helm_python.values_from_yaml(data.decode("utf-8"))
        except (UnicodeDecodeError, helm_python.HelmError):
            document = None
        entries = document.get("entries") if isinstance(document, dict) else None
        if not isinstance(entries, dict):
            raise ChartError(
                remote.ref,
                UNREACHABLE,
                f"{display_url(url)} is not a Helm repository index",
            )
        return entries

    def _download_archive(self, remote: _Remote, version: str, entry: dict[str, Any]) -> bytes:
        urls = entry.get("urls")
        if not isinstance(urls, list) or not urls or not isinstance(urls[0], str):
            raise ChartError(
                remote.ref, CHART_NOT_FOUND, "the index lists no download URL", version=version
            )
        url = urllib.parse.urljoin(remote.source + "/", urls[0])
        # Like Helm, send the login only to the repository's own origin, not to a CDN.
        same = _origin(url) == _origin(remote.source)
        data = self._get(
            url, remote if same else None, what="chart archive", missing=CHART_NOT_FOUND
        )
        return data

    def _get(self, url: str, remote: _Remote | None, *, what: str, missing: str) -> bytes:
        login = self._login(remote) if remote is not None else None
        ref = remote.ref if remote is not None else url
        try:
            return _http_get(url, login=login, timeout=self.timeout)
        except _HttpFailure as failure:
            reason = {401: BAD_CREDENTIALS, 403: BAD_CREDENTIALS, 404: missing}.get(
                failure.status or 0, UNREACHABLE
            )
            detail = f"{what} {display_url(url)}: {self._scrub(failure.detail)}"
            raise ChartError(ref, reason, detail, hint=self._hint(reason, login)) from None
