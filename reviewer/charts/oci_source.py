"""OCI registries: `oci://` references resolved through the registry's tag list."""

from __future__ import annotations

import ipaddress
import re
import shutil
import threading
from collections.abc import Callable
from typing import TypeVar

import helm_python

from reviewer.charts.cache import ChartCache
from reviewer.charts.credentials import url_host
from reviewer.charts.errors import (
    BAD_CREDENTIALS,
    CHART_NOT_FOUND,
    CORRUPT_ARCHIVE,
    UNREACHABLE,
    VERSION_NOT_FOUND,
    ChartError,
)
from reviewer.charts.logins import Logins, login_hint
from reviewer.charts.policy import STRICT, NetworkPolicy, Refused
from reviewer.charts.remote import Remote
from reviewer.charts.semver import is_exact
from reviewer.charts.source import ResolvedChart, choose_version, no_version, resolved
from reviewer.charts.workdir import WorkDir

T = TypeVar("T")


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses (with or without a port): plain HTTP."""
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


def oci_reason(text: str) -> str:
    """The `ChartError` reason for a registry client's error message."""
    # Transport first: a URL in the message may contain digits that look like a status.
    if _TRANSPORT.search(text):
        return UNREACHABLE
    if _DENIED.search(text):
        return BAD_CREDENTIALS
    if _MISSING.search(text):
        return CHART_NOT_FOUND
    return UNREACHABLE


class OciSource:
    """Charts from OCI registries, through one client per host and login, closed by `close`."""

    def __init__(
        self,
        cache: ChartCache,
        logins: Logins,
        workdir: WorkDir,
        *,
        policy: NetworkPolicy = STRICT,
    ) -> None:
        self._policy = policy
        self._cache = cache
        self._logins = logins
        self._workdir = workdir
        self._lock = threading.Lock()
        self._clients: dict[tuple[str, str], helm_python.RegistryClient] = {}

    def download(self, remote: Remote, version: str | None) -> ResolvedChart:
        """The chart pulled from its registry, or the cache when a range resolves to it."""
        client = self._registry(remote)
        if version and is_exact(version):
            chosen = version
        else:
            tags = [
                tag.replace("_", "+")
                for tag in self._call(remote, lambda: client.tags(remote.oci_ref), version)
            ]
            picked = choose_version(remote, tags, version)
            if picked is None:
                raise no_version(remote, tags, version)
            chosen = picked
            cached = self._cache.find(remote.source, remote.name, chosen)
            if cached is not None:
                return resolved(remote, chosen, cached)
        return self._pull(client, remote, chosen)

    def close(self) -> None:
        """Close every registry client."""
        with self._lock:
            for client in self._clients.values():
                client.close()
            self._clients.clear()

    def _pull(
        self, client: helm_python.RegistryClient, remote: Remote, version: str
    ) -> ResolvedChart:
        scratch = self._cache.scratch()
        try:
            self._call(
                remote,
                lambda: client.pull(remote.oci_ref, version=version, destination=scratch),
                version,
                pulling=True,
            )
            archive = next(scratch.glob("*.tgz"), None)
            if archive is None:
                raise ChartError(remote.ref, CORRUPT_ARCHIVE, "the registry sent no chart archive")
            stored = self._cache.store_checked(remote, version, archive, None)
            return resolved(remote, version, stored)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _call(
        self, remote: Remote, call: Callable[[], T], version: str | None, *, pulling: bool = False
    ) -> T:
        try:
            return call()
        except helm_python.HelmError as exc:
            detail = self._logins.scrub(" ".join(str(exc).split()))
            reason = oci_reason(detail)
            if reason == CHART_NOT_FOUND and pulling and self._chart_exists(remote):
                reason = VERSION_NOT_FOUND
            hint = login_hint(reason, self._logins.login(remote))
            raise ChartError(remote.ref, reason, detail, version=version, hint=hint) from None

    def _chart_exists(self, remote: Remote) -> bool:
        try:
            return bool(self._registry(remote).tags(remote.oci_ref))
        except helm_python.HelmError:
            return False

    def _check(self, remote: Remote, host: str) -> None:
        # The registry client (Go) connects by itself: the host is checked before it is
        # created. Redirects the registry sends (blob storage) are not checked.
        try:
            self._policy.check_url(f"oci://{host}")
        except Refused as refused:
            raise ChartError(remote.ref, UNREACHABLE, str(refused)) from None

    def _registry(self, remote: Remote) -> helm_python.RegistryClient:
        """A registry client for the remote's host, logged in when a login is configured."""
        host = url_host(remote.source)
        self._check(remote, host)
        login = self._logins.login(remote)
        key = (host, login.username if login else "")
        with self._lock:
            client = self._clients.get(key)
            if client is not None:
                return client
            # A private credentials file: never the user's Helm or Docker configuration.
            store = self._workdir.path() / f"registry-{len(self._clients)}.json"
            plain = is_loopback(host)
            created = helm_python.RegistryClient(plain_http=plain, credentials_file=store)
            if login is not None:
                self._call(
                    remote,
                    lambda: created.login(host, login.username, login.password, plain_http=plain),
                    None,
                )
            self._clients[key] = created
            return created
