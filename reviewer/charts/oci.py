"""OCI registries: `oci://` references resolved through the registry's tag list."""

from __future__ import annotations

import ipaddress
import re
import shutil
from collections.abc import Callable
from typing import Any, TypeVar

import helm_python

from reviewer.charts.base import ResolvedChart, _FetcherBase
from reviewer.charts.credentials import _host
from reviewer.charts.errors import (
    BAD_CREDENTIALS,
    CHART_NOT_FOUND,
    CORRUPT_ARCHIVE,
    UNREACHABLE,
    VERSION_NOT_FOUND,
    ChartError,
)
from reviewer.charts.remote import _Remote
from reviewer.charts.semver import is_exact

T = TypeVar("T")


def _loopback(host: str) -> bool:
    bare = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    bare = bare.strip("[]")
    if bare == "localhost":
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False


_TRANSPORT = re.compile(r"dial tcp|connection refused|no such host|timeout|tls:|EOF", re.I)
_DENIED = re.compile(r"status code 40[13]\b|unauthorized|denied|basic credential", re.I)
_MISSING = re.compile(r"status code 404\b|not found|name unknown|manifest unknown", re.I)


def _oci_reason(text: str) -> str:
    # Transport first: a URL in the message may contain digits that look like a status.
    if _TRANSPORT.search(text):
        return UNREACHABLE
    if _DENIED.search(text):
        return BAD_CREDENTIALS
    if _MISSING.search(text):
        return CHART_NOT_FOUND
    return UNREACHABLE


class _OciRegistries(_FetcherBase):
    """Downloads from OCI registries, for `ChartFetcher`."""

    def _download_oci(self, remote: _Remote, version: str | None) -> ResolvedChart:
        client = self._registry(remote)
        if version and is_exact(version):
            chosen = version
        else:
            tags = [
                tag.replace("_", "+")
                for tag in self._oci_call(remote, lambda: client.tags(remote.oci_ref), version)
            ]
            picked = self._select(remote, tags, version)
            if picked is None:
                raise self._no_version(remote, tags, version)
            chosen = picked
            cached = self.cache.find(remote.source, remote.name, chosen)
            if cached is not None:
                return self._resolved(remote, chosen, cached)
        scratch = self.cache.scratch()
        try:
            self._oci_call(
                remote,
                lambda: client.pull(remote.oci_ref, version=chosen, destination=scratch),
                chosen,
                pulling=True,
            )
            archive = next(scratch.glob("*.tgz"), None)
            if archive is None:
                raise ChartError(remote.ref, CORRUPT_ARCHIVE, "the registry sent no chart archive")
            return self._resolved(remote, chosen, self._store(remote, chosen, archive, None))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _oci_call(
        self, remote: _Remote, call: Callable[[], T], version: str | None, *, pulling: bool = False
    ) -> T:
        try:
            return call()
        except helm_python.HelmError as exc:
            detail = self._scrub(" ".join(str(exc).split()))
            reason = _oci_reason(detail)
            if reason == CHART_NOT_FOUND and pulling and self._chart_exists(remote):
                reason = VERSION_NOT_FOUND
            hint = self._hint(reason, self._login(remote))
            raise ChartError(remote.ref, reason, detail, version=version, hint=hint) from None

    def _chart_exists(self, remote: _Remote) -> bool:
        try:
            return bool(self._registry(remote).tags(remote.oci_ref))
        except helm_python.HelmError:
            return False

    def _registry(self, remote: _Remote) -> Any:
        """A registry client for the remote's host, logged in when a login is configured."""
        host = _host(remote.source)
        login = self._login(remote)
        key = (host, login.username if login else "")
        with self._lock:
            client = self._clients.get(key)
            if client is not None:
                return client
            # A private credentials file: never the user's Helm or Docker configuration.
            store = self._private_dir() / f"registry-{len(self._clients)}.json"
            plain = _loopback(host)
            client = helm_python.RegistryClient(plain_http=plain, credentials_file=store)
            if login is not None:
                self._oci_call(
                    remote,
                    lambda: client.login(host, login.username, login.password, plain_http=plain),
                    None,
                )
            self._clients[key] = client
            return client
