"""Logins for private repositories and registries.

Credentials never come from the repository under review: see `Credentials`.
"""

from __future__ import annotations

import base64
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from reviewer import yamlio
from reviewer.errors import ConfigError

CREDENTIALS_ENV = "REVIEWER_HELM_CREDENTIALS"


def default_credentials_file(environ: Mapping[str, str]) -> Path:
    """`$XDG_CONFIG_HOME/reviewer/credentials.yaml`, else under `~/.config`."""
    base = environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "reviewer" / "credentials.yaml"


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


def bare_url(url: str) -> str:
    """`scheme://host/path/` → `host/path`, the form credentials are matched on."""
    return re.sub(r"^[a-z][a-z0-9+.-]*://", "", url.strip()).rstrip("/")


def url_host(url: str) -> str:
    """The `host[:port]` of a URL, without scheme, login or path."""
    return bare_url(url).split("/", 1)[0].rsplit("@", 1)[-1]


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
    def from_environment(cls, environ: Mapping[str, str]) -> Credentials:
        """Read the given environment variables and the credentials file (if it exists)."""
        env = dict(environ)
        path = Path(env[CREDENTIALS_ENV]) if env.get(CREDENTIALS_ENV) else None
        if path is None:
            default = default_credentials_file(env)
            path = default if default.is_file() else None
        return cls(env, _read_credentials_file(path) if path else [])

    def lookup(self, *, url: str, repository: str | None = None) -> Login | None:
        """The login for a repository URL (and `repositories:` name), if any."""
        if repository:
            found = self._from_env(f"REVIEWER_HELM_REPO_{_env_key(repository)}")
            if found:
                return found
        found = self._from_env(f"REVIEWER_HELM_HOST_{_env_key(url_host(url))}")
        if found:
            return found
        target = bare_url(url) + "/"
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
        entries.append((bare_url(item["url"]) + "/", Login(item["username"], item["password"])))
    return entries
