"""`Credentials` and `Logins` on their own: lookups from explicit mappings, and scrubbing."""

from __future__ import annotations

import base64
from pathlib import Path

from reviewer.charts import BAD_CREDENTIALS, CHART_NOT_FOUND, CREDENTIALS_ENV, Credentials
from reviewer.charts.logins import Logins, login_hint
from reviewer.charts.remote import Remote

SECRET = "pw-Zq81x!sensitive"
REMOTE = Remote("team/app", False, "https://charts.example.com/team", "app", "team")


def test_credentials_come_only_from_the_mapping_given(tmp_path: Path) -> None:
    environ = {"XDG_CONFIG_HOME": str(tmp_path / "none"), "REVIEWER_HELM_REPO_TEAM_USERNAME": "u"}
    found = Credentials.from_environment(environ).lookup(url=REMOTE.source, repository="team")
    assert found is not None and found.username == "u"
    nothing = {CREDENTIALS_ENV: "", "XDG_CONFIG_HOME": str(tmp_path / "none")}
    assert Credentials.from_environment(nothing).lookup(url=REMOTE.source) is None


def test_logins_scrub_every_form_of_a_password_handed_out() -> None:
    environ = {
        "REVIEWER_HELM_REPO_TEAM_USERNAME": "bot",
        "REVIEWER_HELM_REPO_TEAM_PASSWORD": SECRET,
    }
    logins = Logins(Credentials(environ, []))
    encoded = base64.b64encode(f"bot:{SECRET}".encode()).decode()
    text = f"failed {SECRET} {encoded} https://bot:x@host/path"
    assert logins.scrub(text) == f"failed {SECRET} {encoded} https://host/path"
    login = logins.login(REMOTE)
    assert login is not None and login.password == SECRET
    assert logins.scrub(text) == "failed *** *** https://host/path"


def test_hints_only_for_refused_logins() -> None:
    assert login_hint(CHART_NOT_FOUND, None) is None
    assert "REVIEWER_HELM_REPO_" in (login_hint(BAD_CREDENTIALS, None) or "")
    logins = Logins(Credentials({"REVIEWER_HELM_REPO_TEAM_USERNAME": "u"}, []))
    assert "rejected" in (login_hint(BAD_CREDENTIALS, logins.login(REMOTE)) or "")
