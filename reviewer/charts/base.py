"""What every download path shares: the fetcher's state, the choice of a version, storing a
verified archive in the cache, logins, and keeping passwords out of messages."""

from __future__ import annotations

import re
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reviewer.charts.archive import _check_archive, _sha256_file
from reviewer.charts.cache import _Cache, _check_segment
from reviewer.charts.credentials import CREDENTIALS_ENV, Credentials, Login
from reviewer.charts.errors import BAD_CREDENTIALS, CORRUPT_ARCHIVE, VERSION_NOT_FOUND, ChartError
from reviewer.charts.once import _Once
from reviewer.charts.remote import _Remote
from reviewer.charts.semver import select_version
from reviewer.charts.transport import display_url


@dataclass(frozen=True)
class ResolvedChart:
    """A chart ready to render: its path and, for downloads, what was resolved."""

    path: Path
    source: str  # "local", or the repository / registry it came from
    name: str = ""
    version: str = ""
    digest: str = ""  # sha256 of the archive, for downloaded charts


class _FetcherBase:
    """The state `ChartFetcher.__init__` sets up, and the helpers every download path uses."""

    cache: _Cache
    offline: bool
    timeout: float
    _credentials: Credentials
    _once: _Once[Any]
    _lock: threading.RLock
    _secrets: set[str]
    _clients: dict[tuple[str, str], Any]
    _private: tempfile.TemporaryDirectory[str] | None

    def _private_dir(self) -> Path:
        """A 0700 directory for working copies and registry logins, removed by `close`."""
        with self._lock:
            if self._private is None:
                self._private = tempfile.TemporaryDirectory(prefix="reviewer-charts-")
            return Path(self._private.name)

    def _resolved(self, remote: _Remote, version: str, path: Path) -> ResolvedChart:
        return ResolvedChart(path, remote.source, remote.name, version, path.stem)

    def _select(self, remote: _Remote, available: list[str], version: str | None) -> str | None:
        try:
            chosen = select_version(available, version)
        except ValueError:
            raise ChartError(
                remote.ref, VERSION_NOT_FOUND, "not a valid version or range", version=version
            ) from None
        if chosen is not None:
            _check_segment(chosen, ref=remote.ref, what="version", reason=CORRUPT_ARCHIVE)
        return chosen

    def _no_version(self, remote: _Remote, available: list[str], version: str | None) -> ChartError:
        newest = select_version(available, ">=0.0.0-0") or "none"
        return ChartError(
            remote.ref,
            VERSION_NOT_FOUND,
            f"no version of '{remote.name}' in {display_url(remote.source)} matches "
            f"(newest: {newest}, {len(available)} version(s) published)",
            version=version,
        )

    def _store(self, remote: _Remote, version: str, archive: Path, digest: str | None) -> Path:
        if digest and _sha256_file(archive) != digest:
            raise ChartError(
                remote.ref,
                CORRUPT_ARCHIVE,
                "the downloaded archive does not match the digest in the repository index",
                version=version,
            )
        _check_archive(archive, name=remote.name, ref=remote.ref, version=version)
        path, _ = self.cache.store(remote.source, remote.name, version, archive)
        return path

    def _login(self, remote: _Remote) -> Login | None:
        login = self._credentials.lookup(url=remote.source, repository=remote.repository)
        if login is not None:
            with self._lock:
                self._secrets.update(login.secrets())
        return login

    def _hint(self, reason: str, login: Login | None) -> str | None:
        if reason != BAD_CREDENTIALS:
            return None
        if login is not None:
            return "the configured login was rejected; check its username and password"
        return (
            "set REVIEWER_HELM_REPO_<NAME>_USERNAME/_PASSWORD or "
            f"REVIEWER_HELM_HOST_<HOST>_USERNAME/_PASSWORD, or a file named by ${CREDENTIALS_ENV}"
        )

    def _scrub(self, text: str) -> str:
        with self._lock:
            secrets = sorted(self._secrets, key=len, reverse=True)
        for secret in secrets:
            text = text.replace(secret, "***")
        return re.sub(r"//[^/@\s]+@", "//", text)  # user:password@ in URLs
