"""HTTP(S) chart repositories: `repo/chart` references resolved through `index.yaml`."""

from __future__ import annotations

import shutil
import urllib.parse
from dataclasses import dataclass

import helm_python

from reviewer.charts.cache import ChartCache
from reviewer.charts.errors import BAD_CREDENTIALS, CHART_NOT_FOUND, UNREACHABLE, ChartError
from reviewer.charts.logins import Logins, login_hint
from reviewer.charts.once import Once
from reviewer.charts.policy import STRICT, NetworkPolicy
from reviewer.charts.remote import Remote
from reviewer.charts.source import ResolvedChart, choose_version, no_version, resolved
from reviewer.charts.transport import HttpFailure, display_url, http_get, origin


@dataclass(frozen=True)
class IndexEntry:
    """One published version of a chart in `index.yaml`."""

    digest: str | None  # sha256 hex, without the `sha256:` prefix
    url: str | None  # the first download URL, as listed (relative to the repository)


# Chart name → version → entry; only charts listed with at least one entry.
ChartIndex = dict[str, dict[str, IndexEntry]]


def decode_index(document: object) -> ChartIndex | None:
    """The charts of an `index.yaml` document; None when it is not a repository index."""
    entries = document.get("entries") if isinstance(document, dict) else None
    if not isinstance(entries, dict):
        return None
    charts: ChartIndex = {}
    for name, listed in entries.items():
        if not isinstance(name, str) or not isinstance(listed, list) or not listed:
            continue
        charts[name] = {
            str(item.get("version")): _entry(item) for item in listed if isinstance(item, dict)
        }
    return charts


def _entry(item: dict[str, object]) -> IndexEntry:
    digest = str(item.get("digest") or "").removeprefix("sha256:") or None
    urls = item.get("urls")
    url = urls[0] if isinstance(urls, list) and urls and isinstance(urls[0], str) else None
    return IndexEntry(digest, url)


class HttpSource:
    """Charts from HTTP(S) repositories; each index is read at most once per source object."""

    def __init__(
        self,
        cache: ChartCache,
        logins: Logins,
        *,
        timeout: float,
        policy: NetworkPolicy = STRICT,
    ) -> None:
        self._policy = policy
        self._cache = cache
        self._logins = logins
        self._timeout = timeout
        self._indexes: Once[ChartIndex] = Once()

    def download(self, remote: Remote, version: str | None) -> ResolvedChart:
        """The chart from its repository's index, or the cache when the digest is there."""
        charts = self._indexes.get(remote.source, lambda: self._index(remote))
        by_version = charts.get(remote.name)
        if by_version is None:
            raise ChartError(
                remote.ref,
                CHART_NOT_FOUND,
                f"the repository {display_url(remote.source)} has no chart '{remote.name}'",
                version=version,
            )
        chosen = choose_version(remote, list(by_version), version)
        if chosen is None:
            raise no_version(remote, list(by_version), version)
        entry = by_version[chosen]
        cached = self._cache.find(remote.source, remote.name, chosen, entry.digest)
        if cached is not None:
            return resolved(remote, chosen, cached)
        scratch = self._cache.scratch()
        try:
            archive = scratch / f"{remote.name}-{chosen}.tgz"
            archive.write_bytes(self._archive(remote, chosen, entry))
            stored = self._cache.store_checked(remote, chosen, archive, entry.digest)
            return resolved(remote, chosen, stored)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _index(self, remote: Remote) -> ChartIndex:
        url = f"{remote.source}/index.yaml"
        data = self._get(url, remote, what="repository index", missing=UNREACHABLE)
        try:
            document = helm_python.values_from_yaml(data.decode("utf-8"))
        except (UnicodeDecodeError, helm_python.HelmError):
            document = None
        charts = decode_index(document)
        if charts is None:
            raise ChartError(
                remote.ref, UNREACHABLE, f"{display_url(url)} is not a Helm repository index"
            )
        return charts

    def _archive(self, remote: Remote, version: str, entry: IndexEntry) -> bytes:
        if entry.url is None:
            raise ChartError(
                remote.ref, CHART_NOT_FOUND, "the index lists no download URL", version=version
            )
        url = urllib.parse.urljoin(remote.source + "/", entry.url)
        # Like Helm, send the login only to the repository's own origin, not to a CDN.
        same = origin(url) == origin(remote.source)
        return self._get(
            url, remote if same else None, what="chart archive", missing=CHART_NOT_FOUND
        )

    def _get(self, url: str, remote: Remote | None, *, what: str, missing: str) -> bytes:
        login = self._logins.login(remote) if remote is not None else None
        ref = remote.ref if remote is not None else url
        try:
            return http_get(url, login=login, timeout=self._timeout, policy=self._policy)
        except HttpFailure as failure:
            reason = {401: BAD_CREDENTIALS, 403: BAD_CREDENTIALS, 404: missing}.get(
                failure.status or 0, UNREACHABLE
            )
            detail = f"{what} {display_url(url)}: {self._logins.scrub(failure.detail)}"
            raise ChartError(ref, reason, detail, hint=login_hint(reason, login)) from None
