"""Chart sources: a release's `ChartRef` + version → a chart on local disk.

Local charts are used in place. `repo/chart` references are resolved through
the repository's `index.yaml`, `oci://` references through the registry's tag
list, both the way Helm resolves versions (highest match, prereleases only when
the constraint names one). Downloads land in a cache shared by both sides of a
diff and across runs, keyed by source, name, version and sha256 digest; within
a run each chart is fetched at most once. Charts whose `Chart.yaml` declares
dependencies missing from `charts/` get them like `helm dependency build`.

Credentials never come from the repository under review: see `Credentials`.
"""

from __future__ import annotations

import base64
import hashlib
import http.client as http_client
import ipaddress
import json
import os
import re
import shutil
import tarfile
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from http.client import HTTPMessage
from pathlib import Path
from typing import IO, Any, Generic, TypeVar

import helm_python

from reviewer import yamlio
from reviewer.errors import ConfigError, ReviewerError
from reviewer.templates import ChartRef

T = TypeVar("T")

# Why a chart could not be fetched: the `reason` of a `ChartError`.
UNREACHABLE = "repository unreachable"
CHART_NOT_FOUND = "chart not found"
VERSION_NOT_FOUND = "version not found"
BAD_CREDENTIALS = "bad credentials"
CORRUPT_ARCHIVE = "corrupt archive"
DEPENDENCY_MISSING = "dependency missing"
NOT_CACHED = "not in the cache (offline)"

CREDENTIALS_ENV = "REVIEWER_HELM_CREDENTIALS"
_SAFE_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


class ChartError(ReviewerError):
    """A chart could not be resolved or fetched: names the reference, the reason and the cause."""

    def __init__(
        self,
        ref: str,
        reason: str,
        detail: str,
        *,
        version: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.ref = ref
        self.reason = reason
        self.version = version
        wanted = f" version '{version}'" if version else ""
        super().__init__(f"chart '{ref}'{wanted}: {reason}: {detail}", hint=hint)


@dataclass(frozen=True)
class ResolvedChart:
    """A chart ready to render: its path and, for downloads, what was resolved."""

    path: Path
    source: str  # "local", or the repository / registry it came from
    name: str = ""
    version: str = ""
    digest: str = ""  # sha256 of the archive, for downloaded charts


def default_cache_dir() -> Path:
    """`$XDG_CACHE_HOME/reviewer/charts`, else `~/.cache/reviewer/charts`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "reviewer" / "charts"


def default_credentials_file() -> Path:
    """`$XDG_CONFIG_HOME/reviewer/credentials.yaml`, else under `~/.config`."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "reviewer" / "credentials.yaml"


# --- versions: Masterminds/semver v3 semantics, as Helm uses them ------------------------

_VERSION = re.compile(
    r"^v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?"
    r"(-([0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*))?"
    r"(\+([0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*))?$"
)
_EXACT = re.compile(r"^v?[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
_CV = (
    r"v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?"
    r"(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
    r"(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
)
_OPS = r"=||!=|>|<|>=|=>|<=|=<|~|~>|\^"
_CONSTRAINT = re.compile(rf"^\s*({_OPS})\s*({_CV})\s*$")
_RANGE = re.compile(rf"\s*({_CV})\s+-\s+({_CV})\s*")
_FIND = re.compile(rf"({_OPS})\s*({_CV})")
_VALID = re.compile(rf"^(\s*({_OPS})\s*({_CV})\s*)((?:\s+|,\s*)({_OPS})\s*({_CV})\s*)*$")


@dataclass(frozen=True)
class Version:
    """A semantic version; build metadata is ignored when comparing."""

    major: int
    minor: int
    patch: int
    pre: str = ""

    @classmethod
    def parse(cls, text: str) -> Version | None:
        """Parse like Masterminds' NewVersion (`v` prefix, missing parts are 0); None if invalid."""
        found = _VERSION.match(text.strip())
        if found is None:
            return None
        minor, patch = found.group(2), found.group(3)
        return cls(
            int(found.group(1)),
            int(minor[1:]) if minor else 0,
            int(patch[1:]) if patch else 0,
            found.group(5) or "",
        )

    def compare(self, other: Version) -> int:
        """-1, 0 or 1, like semver precedence."""
        mine, theirs = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if mine != theirs:
            return -1 if mine < theirs else 1
        return _compare_pre(self.pre, other.pre)


def _compare_pre(a: str, b: str) -> int:
    if a == b:
        return 0
    if not a or not b:
        return -1 if b == "" else 1  # a release sorts after its prereleases
    left, right = a.split("."), b.split(".")
    for x, y in zip(left, right, strict=False):
        if x == y:
            continue
        if x.isdigit() and y.isdigit():
            return -1 if int(x) < int(y) else 1
        if x.isdigit() != y.isdigit():
            return -1 if x.isdigit() else 1
        return -1 if x < y else 1
    return -1 if len(left) < len(right) else (1 if len(left) > len(right) else 0)


@dataclass(frozen=True)
class _Term:
    op: str
    con: Version
    dirty: bool
    minor_dirty: bool
    patch_dirty: bool

    def check(self, v: Version) -> bool:
        # Prereleases only match terms that name a prerelease themselves (an exact `!=`
        # excepted, as in Masterminds/semver).
        if v.pre and not self.con.pre and (self.op != "!=" or self.dirty):
            return False
        return _CHECKS[self.op](self, v)


def _tilde(t: _Term, v: Version) -> bool:
    if v.compare(t.con) < 0:
        return False
    if (t.con.major, t.con.minor, t.con.patch) == (0, 0, 0) and not (
        t.minor_dirty or t.patch_dirty
    ):
        return True
    return v.major == t.con.major and (v.minor == t.con.minor or t.minor_dirty)


def _caret(t: _Term, v: Version) -> bool:
    if v.compare(t.con) < 0:
        return False
    if t.con.major > 0 or t.minor_dirty:
        return v.major == t.con.major
    if v.major > 0:
        return False
    if t.con.minor > 0 or t.patch_dirty:
        return v.minor == t.con.minor
    return v.minor == 0 and v.patch == t.con.patch


def _greater(t: _Term, v: Version) -> bool:
    if not t.dirty:
        return v.compare(t.con) > 0
    if v.major != t.con.major:
        return v.major > t.con.major
    if t.minor_dirty:
        return False  # `>1` wants 2.0.0 or later, not 1.1.0
    if t.patch_dirty:
        return v.minor > t.con.minor
    return v.compare(t.con) > 0


def _less_equal(t: _Term, v: Version) -> bool:
    if not t.dirty:
        return v.compare(t.con) <= 0
    if v.major > t.con.major:
        return False
    return not (v.major == t.con.major and v.minor > t.con.minor and not t.minor_dirty)


def _not_equal(t: _Term, v: Version) -> bool:
    if t.dirty:
        if t.con.major != v.major:
            return True
        if t.minor_dirty:
            return False
        if t.con.minor != v.minor:
            return True
        if t.patch_dirty:
            return bool(v.pre or t.con.pre) and _compare_pre(v.pre, t.con.pre) != 0
    return v.compare(t.con) != 0


_CHECKS: dict[str, Callable[[_Term, Version], bool]] = {
    "": lambda t, v: _tilde(t, v) if t.dirty else v.compare(t.con) == 0,
    "=": lambda t, v: _tilde(t, v) if t.dirty else v.compare(t.con) == 0,
    "!=": _not_equal,
    ">": _greater,
    "<": lambda t, v: v.compare(t.con) < 0,
    ">=": lambda t, v: v.compare(t.con) >= 0,
    "=>": lambda t, v: v.compare(t.con) >= 0,
    "<=": _less_equal,
    "=<": _less_equal,
    "~": _tilde,
    "~>": _tilde,
    "^": _caret,
}


def _is_x(part: str) -> bool:
    return part in ("x", "X", "*")


def _term(text: str) -> _Term:
    found = _CONSTRAINT.match(text)
    if found is None:
        raise ValueError(f"improper constraint: {text}")
    op, major, minor, patch, pre = (found.group(i) or "" for i in (1, 3, 4, 5, 6))
    dirty = minor_dirty = patch_dirty = False
    if _is_x(major) or not major:
        version, dirty = f"0.0.0{pre}", True
    elif _is_x(minor[1:]) or not minor:
        version, dirty, minor_dirty = f"{major}.0.0{pre}", True, True
    elif _is_x(patch[1:]) or not patch:
        version, dirty, patch_dirty = f"{major}{minor}.0{pre}", True, True
    else:
        version = found.group(2)
    parsed = Version.parse(version)
    if parsed is None:
        raise ValueError(f"improper constraint: {text}")
    return _Term(op, parsed, dirty, minor_dirty, patch_dirty)


@dataclass(frozen=True)
class Constraint:
    """A Helm version constraint: `||`-separated groups of terms that must all hold."""

    groups: tuple[tuple[_Term, ...], ...]

    @classmethod
    def parse(cls, text: str) -> Constraint:
        """Parse like Masterminds' NewConstraint; raises ValueError when malformed."""
        for found in _RANGE.finditer(text):
            text = text.replace(found.group(0), f">= {found.group(1)}, <= {found.group(11)}", 1)
        groups: list[tuple[_Term, ...]] = []
        for part in text.split("||"):
            if not _VALID.match(part):
                raise ValueError(f"improper constraint: {part.strip()}")
            terms = [m.group(0) for m in _FIND.finditer(part)] or [part]
            groups.append(tuple(_term(term) for term in terms))
        return cls(tuple(groups))

    def allows(self, version: Version) -> bool:
        """True when some group's terms all hold for `version`."""
        return any(all(term.check(version) for term in group) for group in self.groups)


def select_version(available: list[str], wanted: str | None) -> str | None:
    """Helm's choice among `available` for `wanted`: an exact string match, else the highest
    version the constraint allows (no constraint: the highest release). None when nothing fits."""
    if wanted and wanted in available:
        return wanted
    constraint = Constraint.parse(wanted or "*")
    parsed = [(v, Version.parse(v)) for v in available]
    ordered = sorted(
        ((text, version) for text, version in parsed if version is not None),
        key=lambda item: _SortKey(item[1]),
        reverse=True,
    )
    return next((text for text, version in ordered if constraint.allows(version)), None)


@dataclass(frozen=True)
class _SortKey:
    version: Version

    def __lt__(self, other: _SortKey) -> bool:
        return self.version.compare(other.version) < 0


def is_exact(version: str | None) -> bool:
    """True when `version` names one version rather than a range."""
    return bool(version) and _EXACT.match(version or "") is not None


# --- credentials ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Login:
    """A username and password for one repository or registry."""

    username: str
    password: str = field(repr=False)

    def secrets(self) -> list[str]:
        """Every form of the password an error message could carry."""
        pair = f"{self.username}:{self.password}".encode()
        forms = [self.password, base64.b64encode(pair).decode(), urllib.parse.quote(self.password)]
        return [form for form in forms if form]


def _env_key(text: str) -> str:
    return re.sub(r"[^A-Z0-9]", "_", text.upper())


def _bare(url: str) -> str:
    """`scheme://host/path/` → `host/path`, the form credentials are matched on."""
    return re.sub(r"^[a-z][a-z0-9+.-]*://", "", url.strip()).rstrip("/")


def _host(url: str) -> str:
    return _bare(url).split("/", 1)[0].rsplit("@", 1)[-1]


class Credentials:
    """Logins for private repositories, from the environment and a user-level file.

    In order of precedence:
      - `REVIEWER_HELM_REPO_<NAME>_USERNAME` / `_PASSWORD`, NAME a `repositories:` entry's name
        (upper case, every other character `_`);
      - `REVIEWER_HELM_HOST_<HOST>_USERNAME` / `_PASSWORD`, HOST the repository's `host[:port]`
        (e.g. `GHCR_IO`, `CHARTS_EXAMPLE_COM`);
      - the YAML file named by `REVIEWER_HELM_CREDENTIALS` (default
        `$XDG_CONFIG_HOME/reviewer/credentials.yaml`): `credentials: [{url, username, password}]`,
        the longest `url` prefix (scheme ignored) wins.
    """

    def __init__(self, environ: Mapping[str, str], entries: list[tuple[str, Login]]) -> None:
        self._environ = dict(environ)
        self._entries = sorted(entries, key=lambda item: len(item[0]), reverse=True)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Credentials:
        """Read the environment variables and the credentials file (if it exists)."""
        env = dict(os.environ if environ is None else environ)
        path = Path(env[CREDENTIALS_ENV]) if env.get(CREDENTIALS_ENV) else None
        if path is None:
            default = default_credentials_file()
            path = default if default.is_file() else None
        return cls(env, _read_credentials_file(path) if path else [])

    def lookup(self, *, url: str, repository: str | None = None) -> Login | None:
        """The login for a repository URL (and `repositories:` name), if any."""
        if repository:
            found = self._from_env(f"REVIEWER_HELM_REPO_{_env_key(repository)}")
            if found:
                return found
        found = self._from_env(f"REVIEWER_HELM_HOST_{_env_key(_host(url))}")
        if found:
            return found
        target = _bare(url) + "/"
        return next((login for prefix, login in self._entries if target.startswith(prefix)), None)

    def _from_env(self, prefix: str) -> Login | None:
        username = self._environ.get(f"{prefix}_USERNAME")
        password = self._environ.get(f"{prefix}_PASSWORD")
        if username is None and password is None:
            return None
        return Login(username or "", password or "")


def _read_credentials_file(path: Path) -> list[tuple[str, Login]]:
    source = str(path)
    document = yamlio.read_mapping(path, source=source) if path.is_file() else None
    if document is None:
        raise ConfigError(source, "credentials file not found", hint=f"check ${CREDENTIALS_ENV}")
    items = document.get("credentials") or []
    if not isinstance(items, list):
        raise ConfigError(
            source, "must be a list of {url, username, password}", field="credentials"
        )
    entries: list[tuple[str, Login]] = []
    for index, item in enumerate(items):
        where = f"credentials[{index}]"
        if not isinstance(item, dict) or not all(
            isinstance(item.get(key), str) for key in ("url", "username", "password")
        ):
            raise ConfigError(source, "needs string 'url', 'username' and 'password'", field=where)
        entries.append((_bare(item["url"]) + "/", Login(item["username"], item["password"])))
    return entries


# --- the on-disk cache -----------------------------------------------------------------------


def _check_segment(text: str, *, ref: str, what: str, reason: str) -> str:
    # Names and versions become cache paths: never let one form a path of its own.
    if not _SAFE_SEGMENT.match(text) or ".." in text:
        raise ChartError(ref, reason, f"refusing unsafe {what} {json.dumps(text)}")
    return text


class _Cache:
    """`<root>/<source>/<name>/<version>/<sha256>.tgz`, written atomically."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _dir(self, source: str, name: str, version: str | None = None) -> Path:
        slug = re.sub(r"[^A-Za-z0-9.-]+", "_", _bare(source))[:80]
        key = hashlib.sha256(source.encode()).hexdigest()[:12]
        base = self.root / f"{slug}-{key}" / name
        return base / version if version is not None else base

    def versions(self, source: str, name: str) -> list[str]:
        base = self._dir(source, name)
        if not base.is_dir():
            return []
        return sorted(p.name for p in base.iterdir() if any(p.glob("*.tgz")))

    def find(self, source: str, name: str, version: str, digest: str | None = None) -> Path | None:
        directory = self._dir(source, name, version)
        if digest:
            exact = directory / f"{digest}.tgz"
            return exact if exact.is_file() else None
        candidates = sorted(directory.glob("*.tgz"), key=lambda p: p.stat().st_mtime)
        return candidates[-1] if candidates else None

    def scratch(self) -> Path:
        (self.root / ".tmp").mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(dir=self.root / ".tmp"))

    def store(self, source: str, name: str, version: str, archive: Path) -> tuple[Path, str]:
        digest = _sha256_file(archive)
        target = self._dir(source, name, version) / f"{digest}.tgz"
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(archive, target)
        return target, digest


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _archive_chart_yaml(path: Path) -> str:
    """The text of `<dir>/Chart.yaml` inside a chart archive ("" when absent)."""
    with tarfile.open(path, "r:gz") as archive:
        for member in archive:
            if (
                member.isfile()
                and member.name.count("/") == 1
                and member.name.endswith("/Chart.yaml")
            ):
                stream = archive.extractfile(member)
                return stream.read().decode("utf-8") if stream else ""
    return ""


def _chart_yaml(chart: Path, *, ref: str) -> dict[str, Any]:
    try:
        text = (
            (chart / "Chart.yaml").read_text(encoding="utf-8")
            if chart.is_dir()
            else _archive_chart_yaml(chart)
        )
        return yamlio.load_mapping(text, source="Chart.yaml")
    except (OSError, tarfile.TarError, EOFError, UnicodeDecodeError, ReviewerError):
        raise ChartError(ref, CORRUPT_ARCHIVE, "cannot read its Chart.yaml") from None


def _check_archive(path: Path, *, name: str, ref: str, version: str) -> None:
    """A readable gzip tar holding `<dir>/Chart.yaml` of the expected chart."""
    try:
        text = _archive_chart_yaml(path)
    except (OSError, tarfile.TarError, EOFError, UnicodeDecodeError) as exc:
        detail = f"not a gzip-compressed chart archive ({exc.__class__.__name__})"
        raise ChartError(ref, CORRUPT_ARCHIVE, detail, version=version) from None
    if not text:
        raise ChartError(ref, CORRUPT_ARCHIVE, "the archive holds no Chart.yaml", version=version)
    found = _chart_yaml(path, ref=ref).get("name")
    if found != name:
        detail = f"the archive holds chart '{found}', not '{name}'"
        raise ChartError(ref, CORRUPT_ARCHIVE, detail, version=version)


# --- once per run ----------------------------------------------------------------------------


class _Once(Generic[T]):
    """Compute each key at most once, even from several threads; failures are remembered too."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._locks: dict[Hashable, threading.Lock] = {}
        self._done: dict[Hashable, T | ChartError] = {}

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._done:
                try:
                    self._done[key] = compute()
                except ChartError as error:
                    self._done[key] = error
            found = self._done[key]
        if isinstance(found, ChartError):
            raise found.with_traceback(None)
        return found


# --- HTTP(S) chart repositories ------------------------------------------------------------


class _HttpFailure(Exception):
    def __init__(self, status: int | None, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def _origin(url: str) -> tuple[str, str]:
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
        if new is not None and auth and _origin(newurl) == _origin(req.full_url):
            new.add_unredirected_header("Authorization", auth)
        return new


_OPENER = urllib.request.build_opener(_SameOriginAuth)


def _http_get(url: str, *, login: Login | None, timeout: float) -> bytes:
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise _HttpFailure(None, "only http:// and https:// repositories are supported")
    request = urllib.request.Request(url, headers={"User-Agent": "reviewer"})
    if login is not None:
        token = base64.b64encode(f"{login.username}:{login.password}".encode()).decode()
        # Unredirected: urllib would otherwise forward it to whatever host a redirect names.
        request.add_unredirected_header("Authorization", f"Basic {token}")
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            data: bytes = response.read()
            return data
    except urllib.error.HTTPError as exc:
        raise _HttpFailure(exc.code, f"HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise _HttpFailure(None, str(exc.reason)) from None
    except (OSError, http_client.HTTPException) as exc:
        raise _HttpFailure(None, str(exc) or exc.__class__.__name__) from None


# --- where a remote chart lives ------------------------------------------------------------


@dataclass(frozen=True)
class _Remote:
    ref: str  # as written, for messages
    oci: bool
    source: str  # repository URL, or `oci://host/path` without the chart name
    name: str
    repository: str | None = None  # `repositories:` name, for credentials
    tag: str | None = None  # version written into an oci:// reference

    @property
    def oci_ref(self) -> str:
        return f"{self.source}/{self.name}"


def _remote(chart: ChartRef) -> _Remote:
    url = chart.repository or ""
    if chart.ref.startswith("oci://"):
        path, _, last = chart.ref[len("oci://") :].rstrip("/").rpartition("/")
        name, _, tag = last.partition(":")
        return _Remote(chart.ref, True, f"oci://{path}", name, tag=tag or None)
    repository, _, name = chart.ref.partition("/")
    if url.startswith(("http://", "https://")):
        return _Remote(chart.ref, False, url.rstrip("/"), name, repository)
    # helmfile writes `oci: true` repositories without a scheme.
    source = url.rstrip("/") if url.startswith("oci://") else f"oci://{url.rstrip('/')}"
    return _Remote(chart.ref, True, source, name, repository)


def _dependency_remote(ref: str, repository: str, name: str) -> _Remote:
    if repository.startswith("oci://"):
        return _Remote(ref, True, repository.rstrip("/"), name)
    return _Remote(ref, False, repository.rstrip("/"), name)


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


# --- the fetcher ---------------------------------------------------------------------------


class ChartFetcher:
    """Resolves `ChartRef`s to charts on disk, through a cache shared by both sides of a diff.

    One fetcher per run: it remembers indexes, downloads and failures, so a chart is fetched
    at most once however many releases (and threads) ask for it. Paths it returns stay valid
    until `close()`. Credentials default to `Credentials.from_environment()`.
    """

    def __init__(
        self,
        *,
        cache_dir: Path | None = None,
        offline: bool = False,
        credentials: Credentials | None = None,
        timeout: float = 60.0,
    ) -> None:
        self.cache = _Cache(cache_dir if cache_dir is not None else default_cache_dir())
        self.offline = offline
        self.timeout = timeout
        self._credentials = (
            credentials if credentials is not None else Credentials.from_environment()
        )
        self._once: _Once[Any] = _Once()
        # Re-entrant: a registry login made under the lock records its secrets under it too.
        self._lock = threading.RLock()
        self._secrets: set[str] = set()
        self._clients: dict[tuple[str, str], Any] = {}
        self._private: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> ChartFetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def fetch(self, chart: ChartRef, version: str | None, *, root: Path) -> Path:
        """The path (directory or .tgz) to render for `chart`; raises `ChartError`."""
        return self.resolve(chart, version, root=root).path

    def resolve(self, chart: ChartRef, version: str | None, *, root: Path) -> ResolvedChart:
        """Like `fetch`, with what was resolved (source, name, version, digest)."""
        if chart.local is not None:
            resolved = ResolvedChart(path=root / chart.local, source="local")
            base: Path | None = root
        else:
            remote = _remote(chart)
            wanted = version or remote.tag
            key = ("chart", remote.source, remote.name, wanted or "")
            resolved = self._once.get(key, lambda: self._download(remote, wanted))
            base = None
        built = self._once.get(
            ("dependencies", resolved.path),
            lambda: self._with_dependencies(resolved.path, ref=chart.ref, root=base),
        )
        return ResolvedChart(
            built, resolved.source, resolved.name, resolved.version, resolved.digest
        )

    def close(self) -> None:
        """Remove working copies and the private registry login files."""
        for client in self._clients.values():
            client.close()
        self._clients.clear()
        if self._private is not None:
            self._private.cleanup()
            self._private = None

    def _private_dir(self) -> Path:
        """A 0700 directory for working copies and registry logins, removed by `close`."""
        with self._lock:
            if self._private is None:
                self._private = tempfile.TemporaryDirectory(prefix="reviewer-charts-")
            return Path(self._private.name)

    # -- downloads ---------------------------------------------------------------------------

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

    def _resolved(self, remote: _Remote, version: str, path: Path) -> ResolvedChart:
        return ResolvedChart(path, remote.source, remote.name, version, path.stem)

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

    # -- HTTP(S) repositories ----------------------------------------------------------------

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

    # -- OCI registries ----------------------------------------------------------------------

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

    # -- dependencies ------------------------------------------------------------------------

    def _with_dependencies(self, chart: Path, *, ref: str, root: Path | None) -> Path:
        """`chart` itself, or a working copy whose `charts/` holds the missing dependencies."""
        try:
            declared = _chart_yaml(chart, ref=ref).get("dependencies") or []
        except ChartError:
            return chart  # the engine reports why the chart does not load
        if not isinstance(declared, list) or not declared:
            return chart
        present = _loaded_subcharts(chart)
        if present is None:
            return chart  # the engine reports why the chart does not load
        missing = [d for d in declared if isinstance(d, dict) and d.get("name") not in present]
        if not missing:
            return chart
        work = self._working_copy(chart, ref=ref)
        locked = _locked(work, ref=ref)
        for dependency in missing:
            self._add_dependency(work, dependency, locked, ref=ref, origin=chart, root=root)
        return work

    def _working_copy(self, chart: Path, *, ref: str) -> Path:
        target = Path(tempfile.mkdtemp(dir=self._private_dir()))
        try:
            if chart.is_dir():
                shutil.copytree(chart, target / chart.name)
            else:
                helm_python.expand(target, chart)
            return next(p for p in target.iterdir() if p.is_dir())
        except (OSError, helm_python.HelmError, StopIteration):
            raise ChartError(ref, CORRUPT_ARCHIVE, "cannot unpack the chart") from None

    def _add_dependency(
        self,
        work: Path,
        dependency: dict[str, Any],
        locked: dict[str, dict[str, Any]] | None,
        *,
        ref: str,
        origin: Path,
        root: Path | None,
    ) -> None:
        name = str(dependency.get("name"))
        entry = dependency if locked is None else locked.get(name)
        if entry is None:
            raise ChartError(
                ref,
                DEPENDENCY_MISSING,
                f"'{name}' is declared in Chart.yaml but not in Chart.lock",
                hint="run `helm dependency update` and commit Chart.lock",
            )
        repository = str(entry.get("repository") or "")
        wanted = str(entry.get("version") or "") or None
        target = work / "charts"
        target.mkdir(exist_ok=True)
        if repository.startswith("file://"):
            self._copy_local_dependency(target, name, repository, ref=ref, origin=origin, root=root)
            return
        if not repository.startswith(("http://", "https://", "oci://")):
            detail = (
                f"'{name}' is not in charts/ and has no repository URL"
                if not repository
                else f"'{name}' names repository '{repository}'; only http(s)://, oci:// "
                "and file:// repositories can be fetched"
            )
            raise ChartError(ref, DEPENDENCY_MISSING, detail)
        remote = _dependency_remote(f"{repository.rstrip('/')}/{name}", repository, name)
        try:
            key = ("chart", remote.source, remote.name, wanted or "")
            fetched: ResolvedChart = self._once.get(key, lambda: self._download(remote, wanted))
        except ChartError as error:
            raise ChartError(
                ref, DEPENDENCY_MISSING, f"'{name}' ({wanted or 'any version'}): {error.message}"
            ) from None
        shutil.copyfile(fetched.path, target / f"{name}-{fetched.version}.tgz")

    def _copy_local_dependency(
        self, target: Path, name: str, repository: str, *, ref: str, origin: Path, root: Path | None
    ) -> None:
        relative = repository[len("file://") :]
        source = (origin / relative).resolve() if origin.is_dir() else None
        if source is None or root is None or not source.is_relative_to(root.resolve()):
            raise ChartError(
                ref,
                DEPENDENCY_MISSING,
                f"'{name}' from {repository}: file:// dependencies must stay inside the "
                "repository under review",
            )
        if not (source / "Chart.yaml").is_file():
            raise ChartError(ref, DEPENDENCY_MISSING, f"'{name}': no chart at {repository}")
        shutil.copytree(source, target / name)


def _loaded_subcharts(chart: Path) -> set[str] | None:
    """Names of the subcharts Helm finds in `charts/`; None when the chart does not load."""
    try:
        with helm_python.Chart.load(chart) as loaded:
            return {str(dep.get("name")) for dep in loaded.dependencies}
    except helm_python.HelmError:
        return None


def _locked(chart: Path, *, ref: str) -> dict[str, dict[str, Any]] | None:
    """Chart.lock's dependencies by name; None when the chart has no lock (resolve ranges)."""
    lock = chart / "Chart.lock"
    if not lock.is_file():
        return None
    try:
        document = yamlio.read_mapping(lock, source="Chart.lock")
    except ReviewerError:
        raise ChartError(ref, DEPENDENCY_MISSING, "Chart.lock is not valid YAML") from None
    entries = document.get("dependencies") or []
    if not isinstance(entries, list):
        raise ChartError(ref, DEPENDENCY_MISSING, "Chart.lock: 'dependencies' must be a list")
    return {str(e.get("name")): e for e in entries if isinstance(e, dict)}
