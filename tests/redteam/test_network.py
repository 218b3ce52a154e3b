"""Red team, network: chart hosts are checked, secrets never pick a URL (issue #12 item 4)."""

from __future__ import annotations

from pathlib import Path

import pytest
from chartrepo import ChartRepository
from conftest import Repo
from redteam_support import fleet, isolate_sops_key

from reviewer import config
from reviewer.cli import main
from reviewer.errors import ExitStatus
from reviewer.gotmpl import TemplateRenderer
from reviewer.model import Snapshot
from reviewer.side import SideOptions, render_side
from reviewer.tooling import Tooling, open_tooling

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


SECRET = "Hunter2-Sup3r-Zeta9x"


def _run(args: list[str]) -> int:
    with pytest.raises(SystemExit) as done:
        main(args)
    return int(done.value.code or 0)


@pytest.mark.parametrize("release", ["app", "{{ .Values.db.password | lower }}"])
def test_a_secret_in_a_repository_url_is_never_requested(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, release: str
) -> None:
    identity = isolate_sops_key(monkeypatch, tmp_path)
    with ChartRepository(tmp_path / "served") as served:
        template = (
            f'repositories: [{{name: r, url: "{served.url}/{{{{ .Values.db.password }}}}"}}]\n'
            f"releases: [{{name: '{release}', chart: r/app}}]\n"
        )
        secrets = {"db": {"user": "app-user-7", "password": SECRET}}
        attack = {"templates/svc/helmfile.yaml.gotmpl": template}
        repo = fleet(tmp_path / "repo", identity, secrets, attack)
        outputs = []
        for form in ("markdown", "json"):
            out = tmp_path / f"report.{form}"
            args = ["diff", "--repo", str(repo.root), "--base", "main", "--format", form]
            code = _run([*args, "--allow-loopback-charts", "--output", str(out)])
            outputs.append(out.read_text(encoding="utf-8"))
            assert code == ExitStatus.RENDER_FAILED
        out = tmp_path / "render"
        code = _run(["render", str(repo.root), "--allow-loopback-charts", "--out", str(out)])
        assert code == ExitStatus.RENDER_FAILED
        outputs += [f.read_text(encoding="utf-8") for f in out.rglob("*") if f.is_file()]
        assert served.requests == []
    text = "\n".join(outputs)
    assert "depends on a SOPS secret" in text
    assert "helmfile.yaml.gotmpl" in text
    for form in (SECRET, SECRET.lower()):
        assert form not in text
