"""Where chart downloads may go: http(s) and oci hosts on public addresses, by default.

A pull request chooses chart repository URLs, and the index it points to chooses download
URLs; left alone it could make the review job request cloud metadata endpoints
(169.254.169.254), services on the runner's loopback or hosts of the private network. Every
connection's host name is resolved and every address checked; redirects are checked the
same way because each connection is. The base side's `.reviewer.yaml` (`charts:`) can name
the only hosts allowed and allow private addresses; `--allow-loopback-charts` allows
loopback for local use and tests.
"""

from __future__ import annotations

import ipaddress
import socket
import urllib.parse
from dataclasses import dataclass

from reviewer.errors import ConfigError

SCHEMES = ("http", "https", "oci")

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class Refused(OSError):
    """A connection the policy does not allow (an OSError so urllib passes it through)."""


@dataclass(frozen=True)
class NetworkPolicy:
    """Which chart hosts may be contacted."""

    allowed_hosts: tuple[str, ...] = ()
    """When not empty, the only hosts contacted (`*.example.com` matches subdomains);
    these may resolve to any address."""
    allow_private: bool = False
    """Private (RFC 1918, unique-local, shared) addresses allowed for every host."""
    allow_loopback: bool = False
    """Loopback addresses allowed (command line only)."""

    def check_url(self, url: str) -> None:
        """Refuse a URL whose scheme or host the policy does not allow."""
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in SCHEMES:
            raise Refused(f"scheme '{parts.scheme}' is not allowed (only {', '.join(SCHEMES)})")
        if not parts.hostname:
            raise Refused("the URL names no host")
        self.addresses(parts.hostname, parts.port or 443)

    def addresses(self, host: str, port: int) -> list[str]:
        """Every address `host` resolves to, each allowed; `Refused` otherwise."""
        named = self._named(host)
        if self.allowed_hosts and not named:
            raise Refused(f"host '{host}' is not in charts.allowedHosts of .reviewer.yaml")
        try:
            found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise Refused(f"cannot resolve host '{host}': {exc}") from None
        addresses = [str(info[4][0]) for info in found]
        if not named:
            for address in addresses:
                self._check_address(host, ipaddress.ip_address(address.split("%", 1)[0]))
        return addresses

    def _named(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        for allowed in self.allowed_hosts:
            if allowed.startswith("*.") and host.endswith(allowed[1:]):
                return True
            if host == allowed:
                return True
        return False

    def _check_address(self, host: str, address: IpAddress) -> None:
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if address.is_loopback:
            if self.allow_loopback:
                return
            raise Refused(f"host '{host}' resolves to a loopback address ({address})")
        if address.is_link_local or address.is_multicast or address.is_unspecified:
            raise Refused(f"host '{host}' resolves to a link-local or special address ({address})")
        if address.is_private or address in _SHARED or address.is_reserved:
            if self.allow_private:
                return
            raise Refused(
                f"host '{host}' resolves to a private address ({address}); "
                "set charts.allowPrivate or charts.allowedHosts in .reviewer.yaml"
            )


STRICT = NetworkPolicy()
"""Public addresses of any http(s)/oci host: the default."""

_SHARED = ipaddress.ip_network("100.64.0.0/10")


def connect(
    policy: NetworkPolicy,
    address: tuple[str, int],
    timeout: float | None = None,
    source_address: object = None,
) -> socket.socket:
    """`socket.create_connection` to the first allowed address of the host (checked now,
    so a host name that resolves differently later cannot slip past)."""
    host, port = address
    last: OSError | None = None
    for resolved in policy.addresses(host, port):
        try:
            return socket.create_connection((resolved, port), timeout)
        except OSError as exc:
            last = exc
    raise last or Refused(f"host '{host}' has no address")


def from_mapping(data: object, *, source: str, allow_loopback: bool) -> NetworkPolicy:
    """The `charts:` map of `.reviewer.yaml` (`allowedHosts`, `allowPrivate`)."""
    if data is None:
        return NetworkPolicy(allow_loopback=allow_loopback)
    if not isinstance(data, dict):
        raise ConfigError(source, "must be a map", field="charts")
    for key in data:
        if key not in ("allowedHosts", "allowPrivate"):
            raise ConfigError(
                source, "unknown key; allowed: allowedHosts, allowPrivate", field=f"charts.{key}"
            )
    hosts = data.get("allowedHosts") or []
    if not isinstance(hosts, list) or not all(isinstance(h, str) and h for h in hosts):
        raise ConfigError(source, "must be a list of host names", field="charts.allowedHosts")
    private = data.get("allowPrivate", False)
    if not isinstance(private, bool):
        raise ConfigError(source, "must be true or false", field="charts.allowPrivate")
    return NetworkPolicy(
        allowed_hosts=tuple(h.lower().rstrip(".") for h in hosts),
        allow_private=private,
        allow_loopback=allow_loopback,
    )
