"""Red team, network: chart hosts are checked, secrets never pick a URL (issue #12 item 4)."""

from __future__ import annotations

import pytest
from conftest import Repo

from reviewer import config
from reviewer.gotmpl import TemplateRenderer
from reviewer.model import Snapshot
from reviewer.side import SideOptions, Tooling, open_tooling, render_side

DEPLOYMENT = "deployments/g/c/apps/d/deployment.yaml"


def _render(repo: Repo, *, allow_loopback: bool = False) -> Snapshot:
    settings = config.load(repo.root)
    with open_tooling(Tooling(allow_loopback=allow_loopback), settings) as tools:
        return render_side(
            repo.root, options=SideOptions(), tools=tools, renderer=TemplateRenderer()
        ).snapshot


def _remote(repo: Repo, url: str) -> Repo:
    repo.write(
        "templates/app/helmfile.yaml.gotmpl",
        f"repositories: [{{name: r, url: '{url}'}}]\nreleases: [{{name: app, chart: r/demo}}]\n",
    )
    return repo.write(DEPLOYMENT, "apps: [{template: app}]\n")


def _errors(snapshot: Snapshot) -> str:
    return "\n".join(r.error or "" for r in snapshot.releases)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://169.254.169.254/latest", "link-local"),
        ("http://127.0.0.1:9/", "loopback"),
        ("http://10.1.2.3/", "private"),
        ("http://[fe80::1]/", "link-local"),
    ],
)
def test_special_addresses_are_refused(repo: Repo, url: str, why: str) -> None:
    assert why in _errors(_render(_remote(repo, url)))


def test_allowed_hosts_from_base_config_are_the_only_hosts(repo: Repo) -> None:
    repo.write(".reviewer.yaml", "charts: {allowedHosts: [charts.example.org]}\n")
    snapshot = _render(_remote(repo, "http://127.0.0.1:9/"), allow_loopback=True)
    assert "not in charts.allowedHosts" in _errors(snapshot)
