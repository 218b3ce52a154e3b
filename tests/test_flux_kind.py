"""The `flux` kind end to end: HelmReleases in a git repository, the real CLI, real sops."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agekeys import AgeIdentity, encrypt
from chartrepo import ChartRepository
from conftest import GitRepo, git
from flux_repo import app_chart_files, chart_spec, helm_repository, helmrelease, write_chart_dir
from test_diff_command import json_diff
from test_secrets import render_out

from reviewer.errors import ExitStatus

PASSWORD = "s3cr3t-Pa55word-4711"
NEW_PASSWORD = "n3w-Pa55word-0815"


@pytest.fixture
def charts(tmp_path: Path) -> Iterator[ChartRepository]:
    with ChartRepository(tmp_path / "served") as server:
        server.publish(write_chart_dir(tmp_path / "src" / "app", app_chart_files()), "1.0.0")
        yield server


def write_fleet(
    repo: GitRepo, identity: AgeIdentity, url: str, *, replicas: int, password: str
) -> GitRepo:
    """A Flux repository: a HelmRepository, a HelmRelease, a SOPS Secret with its password."""
    directory = repo.root / "clusters" / "prod"
    directory.mkdir(parents=True, exist_ok=True)
    secret: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db-credentials", "namespace": "apps"},
        "stringData": {"password": password},
    }
    encrypt(directory, secret, identity, "--encrypted-regex", "^(data|stringData)$", name="db.yaml")
    repo.write("clusters/prod/repo.yaml", helm_repository("charts", url))
    repo.write(
        "clusters/prod/app.yaml",
        helmrelease(
            "web",
            chart=chart_spec("app", "charts"),
            valuesFrom=[
                {
                    "kind": "Secret",
                    "name": "db-credentials",
                    "valuesKey": "password",
                    "targetPath": "db.pass",
                }
            ],
            values={"replicas": replicas},
        ),
    )
    return repo


def test_render_plans_helmreleases_and_never_shows_a_sops_value(
    tmp_path: Path,
    charts: ChartRepository,
    age_key: AgeIdentity,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo = write_fleet(
        GitRepo(tmp_path / "fleet"), age_key, charts.url, replicas=2, password=PASSWORD
    )
    code, text = render_out(repo, tmp_path / "out", "--allow-loopback-charts")
    err = capsys.readouterr().err
    assert code == ExitStatus.OK, err
    assert "sources (detected): flux 'clusters': clusters/" in err
    assert "helm.toolkit.fluxcd.io/name: web" in text
    assert "replicas: 2" in text
    assert PASSWORD not in text and PASSWORD not in err
    assert "REDACTED" in text


def test_diff_shows_the_changed_release_and_a_redacted_secret_change(
    tmp_path: Path,
    charts: ChartRepository,
    age_key: AgeIdentity,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo = write_fleet(
        GitRepo(tmp_path / "fleet"), age_key, charts.url, replicas=2, password=PASSWORD
    )
    repo.write(".reviewer.yaml", "sources:\n  - {name: prod, kind: flux, paths: [clusters]}\n")
    repo.commit("fleet")
    git(repo.root, "checkout", "--quiet", "-b", "feature")
    write_fleet(repo, age_key, charts.url, replicas=3, password=NEW_PASSWORD)
    repo.commit("scale and rotate")
    report = json_diff(repo, capsys, "--base", "main", "--allow-loopback-charts")
    text = str(report)
    assert {
        r["cluster"] + "/" + r["deployment"] + "/" + r["release"]: r["status"]
        for r in report["releases"]
    } == {"prod/apps/web": "changed"}
    assert PASSWORD not in text and NEW_PASSWORD not in text
    [release] = report["releases"]
    changes = {entry["path"]: entry for entry in release["values"]}
    assert changes["replicas"]["change"] == "replicas: 2 → 3"
    assert changes["db.pass"]["head"] == {
        "source": "clusters/prod/db.yaml",
        "level": "valuesFrom Secret db-credentials",
    }
    assert "REDACTED" in changes["db.pass"]["change"]
