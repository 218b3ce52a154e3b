"""HTTP(S) downloads: a GET that sends a login only to the URL's own origin."""

from __future__ import annotations

import base64
import functools
import http.client as http_client
import ssl
import urllib.error
import urllib.parse
import urllib.request
from http.client import HTTPMessage
from typing import IO, Any

from reviewer.charts.credentials import Login
from reviewer.charts.policy import STRICT, NetworkPolicy, connect


class HttpFailure(Exception):
    """A GET that failed: the HTTP status (None when there was no response) and why."""

    def __init__(self, status: int | None, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def origin(url: str) -> tuple[str, str]:
    """The scheme and `host[:port]` of a URL, without any login."""
    parts = urllib.parse.urlsplit(url)
    return parts.scheme, parts.netloc.rsplit("@", 1)[-1]


def display_url(url: str) -> str:
    """The URL without any `user:password@` part."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]))


class _SameOriginAuth(urllib.request.HTTPRedirectHandler):
    """Follow redirects, but send the login again only to the same scheme, host and port."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        auth = req.unredirected_hdrs.get("Authorization")
        if new is not None and auth and origin(newurl) == origin(req.full_url):
            new.add_unredirected_header("Authorization", auth)
        return new


class _CheckedHttp(http_client.HTTPConnection):
    """Plain HTTP to an address `policy` allowed, resolved and checked when connecting."""

    def __init__(self, host: str, *, policy: NetworkPolicy, timeout: float | None) -> None:
        super().__init__(host, timeout=timeout)
        self.policy = policy

    def connect(self) -> None:
        """Connect to the checked address itself: the name is not resolved a second time."""
        self.sock = connect(self.policy, (self.host, self.port), self.timeout)


class _CheckedHttps(http_client.HTTPSConnection):
    """HTTPS to a checked address; the certificate and SNI are those of the URL's host."""

    def __init__(
        self, host: str, *, policy: NetworkPolicy, tls: ssl.SSLContext, timeout: float | None
    ) -> None:
        super().__init__(host, timeout=timeout, context=tls)
        self.policy = policy
        self.tls = tls

    def connect(self) -> None:
        """Connect to the checked address, then verify TLS against the host name."""
        checked = connect(self.policy, (self.host, self.port), self.timeout)
        try:
            self.sock = self.tls.wrap_socket(checked, server_hostname=self.host)
        except BaseException:
            checked.close()
            raise


def _tls() -> ssl.SSLContext:
    """The system's trust store with hostname checks, as urllib's default HTTPS handler."""
    context = ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])
    return context


class _GuardedHttp(urllib.request.HTTPHandler):
    def __init__(self, policy: NetworkPolicy) -> None:
        super().__init__()
        self._policy = policy

    def http_open(self, req: urllib.request.Request) -> http_client.HTTPResponse:
        def checked(host: str, **options: Any) -> http_client.HTTPConnection:
            return _CheckedHttp(host, policy=self._policy, timeout=options.get("timeout"))

        return self.do_open(checked, req)


class _GuardedHttps(urllib.request.HTTPSHandler):
    def __init__(self, policy: NetworkPolicy) -> None:
        super().__init__()
        self._policy = policy

    def https_open(self, req: urllib.request.Request) -> http_client.HTTPResponse:
        tls = _tls()  # per request: the trust store as it is now

        def checked(host: str, **options: Any) -> http_client.HTTPConnection:
            timeout = options.get("timeout")
            return _CheckedHttps(host, policy=self._policy, tls=tls, timeout=timeout)

        return self.do_open(checked, req)


@functools.lru_cache(maxsize=8)
def _opener(policy: NetworkPolicy) -> urllib.request.OpenerDirector:
    # No proxy from the environment: the policy checks the address actually connected to.
    return urllib.request.build_opener(
        urllib.request.ProxyHandler({}),
        _SameOriginAuth,
        _GuardedHttp(policy),
        _GuardedHttps(policy),
    )


def http_get(
    url: str, *, login: Login | None, timeout: float, policy: NetworkPolicy = STRICT
) -> bytes:
    """The body of a GET, only to hosts `policy` allows (redirects too); raises `HttpFailure`."""
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise HttpFailure(None, "only http:// and https:// repositories are supported")
    request = urllib.request.Request(url, headers={"User-Agent": "reviewer"})
    if login is not None:
        token = base64.b64encode(f"{login.username}:{login.password}".encode()).decode()
        # Unredirected: urllib would otherwise forward it to whatever host a redirect names.
        request.add_unredirected_header("Authorization", f"Basic {token}")
    try:
        with _opener(policy).open(request, timeout=timeout) as response:
            data: bytes = response.read()
            return data
    except urllib.error.HTTPError as exc:
        raise HttpFailure(exc.code, f"HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise HttpFailure(None, str(exc.reason)) from None
    except (OSError, http_client.HTTPException) as exc:
        raise HttpFailure(None, str(exc) or exc.__class__.__name__) from None
