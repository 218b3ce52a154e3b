"""HTTP(S) downloads: a GET that sends a login only to the URL's own origin."""

from __future__ import annotations

import base64
import functools
import http.client as http_client
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
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


def _guarded(
    factory: type[http_client.HTTPConnection], policy: NetworkPolicy
) -> Callable[..., http_client.HTTPConnection]:
    """A connection class whose every connect checks the address against `policy`."""

    def make(host: str, **kwargs: Any) -> http_client.HTTPConnection:
        connection = factory(host, **kwargs)
        connection._create_connection = functools.partial(connect, policy)  # type: ignore[attr-defined]
        return connection

    return make


class _GuardedHttp(urllib.request.HTTPHandler):
    def __init__(self, policy: NetworkPolicy) -> None:
        super().__init__()
        self._policy = policy

    def http_open(self, req: urllib.request.Request) -> http_client.HTTPResponse:
        return self.do_open(_guarded(http_client.HTTPConnection, self._policy), req)


class _GuardedHttps(urllib.request.HTTPSHandler):
    def __init__(self, policy: NetworkPolicy) -> None:
        super().__init__()
        self._policy = policy

    def https_open(self, req: urllib.request.Request) -> http_client.HTTPResponse:
        return self.do_open(_guarded(http_client.HTTPSConnection, self._policy), req)


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
