"""Logins as the sources use them: looked up per remote, remembered so that every form of a
password can be kept out of messages, and named in hints when a server refuses."""

from __future__ import annotations

import re
import threading

from reviewer.charts.credentials import CREDENTIALS_ENV, Credentials, Login
from reviewer.charts.errors import BAD_CREDENTIALS
from reviewer.charts.remote import Remote


class Logins:
    """The logins of one run, and the secrets they have handed out so far."""

    def __init__(self, credentials: Credentials) -> None:
        self._credentials = credentials
        self._lock = threading.Lock()
        self._secrets: set[str] = set()

    def login(self, remote: Remote) -> Login | None:
        """The login configured for `remote`, if any; its secrets are scrubbed from then on."""
        login = self._credentials.lookup(url=remote.source, repository=remote.repository)
        if login is not None:
            with self._lock:
                self._secrets.update(login.secrets())
        return login

    def scrub(self, text: str) -> str:
        """`text` without any password handed out so far, nor `user:password@` in URLs."""
        with self._lock:
            secrets = sorted(self._secrets, key=len, reverse=True)
        for secret in secrets:
            text = text.replace(secret, "***")
        return re.sub(r"//[^/@\s]+@", "//", text)


def login_hint(reason: str, login: Login | None) -> str | None:
    """What to do about a refused login (None for any other reason)."""
    if reason != BAD_CREDENTIALS:
        return None
    if login is not None:
        return "the configured login was rejected; check its username and password"
    return (
        "set REVIEWER_HELM_REPO_<NAME>_USERNAME/_PASSWORD or "
        f"REVIEWER_HELM_HOST_<HOST>_USERNAME/_PASSWORD, or a file named by ${CREDENTIALS_ENV}"
    )
