"""`reviewer diff DIR_A DIR_B` on two `reviewer render` outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from commandargs import run_cli as run
from conftest import Repo

from reviewer.errors import ExitStatus

SECRET_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: secret\nversion: 1.0.0\n",
    "values.yaml": "token: static-token-value\n",
    "templates/secret.yaml": (
        "apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: default}\n"
        "stringData: {token: {{ .Values.token | quote }}}\n"
    ),
}


@pytest.fixture
def fleet(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> Repo:
    """Two clusters; each runs the values-dump chart and a chart with a literal Secret."""
    for name in ("CI", "GITHUB_ACTIONS", "SOPS_AGE_KEY", "SOPS_AGE_KEY_FILE", "PAGER"):
        monkeypatch.delenv(name, raising=False)
    repo.add_chart("charts/secret", SECRET_CHART)
    repo.add_template("creds", "releases: [{name: creds, chart: ../../charts/secret}]\n")
    for cluster in ("eu", "us"):
        repo.write(f"deployments/{cluster}/apps/web/deployment.yaml", "apps: [{template: app}]\n")
        repo.write(
            f"deployments/{cluster}/apps/auth/deployment.yaml", "apps: [{template: creds}]\n"
        )
    return repo


def render(repo: Repo, out: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    code, _, err = run(["render", str(repo.root), "-o", str(out)], capsys)
    assert code == ExitStatus.OK, err
    return out


def compare(a: Path, b: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code, out, err = run(["diff", str(a), str(b), "--format", "json", "--exit-code"], capsys)
    assert code in (ExitStatus.OK, ExitStatus.CHANGES), err
    report: dict[str, Any] = json.loads(out)
    return code, report


def test_two_renders_of_one_tree_compare_equal_secret_markers_included(
    fleet: Repo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = render(fleet, tmp_path / "first", capsys)
    second = render(fleet, tmp_path / "second", capsys)
    marker = (first / "us/auth/creds").rglob("*.yaml")
    assert "static-token-value" not in "".join(p.read_text() for p in marker)
    code, report = compare(first, second, capsys)
    assert code == ExitStatus.OK
    assert report["summary"]["releases"]["unchanged"] == 4
    assert (report["base"]["ref"], report["head"]["ref"]) == (str(first), str(second))


def test_a_change_between_two_renders_is_reported(
    fleet: Repo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = render(fleet, tmp_path / "before", capsys)
    fleet.write("deployments/us/cluster.values.yaml", "replicas: 5\n")
    fleet.write("deployments/eu/apps/auth/values.yaml", "token: rotated-token-value\n")
    after = render(fleet, tmp_path / "after", capsys)
    code, report = compare(before, after, capsys)
    assert code == ExitStatus.CHANGES
    changed = {
        f"{r['cluster']}/{r['deployment']}/{r['release']}"
        for r in report["releases"]
        if r["status"] == "changed"
    }
    assert changed == {"us/web/app", "eu/auth/creds"}
    code, out, _ = run(["diff", str(before), str(after)], capsys)
    assert "rotated-token-value" not in out and "  us  1 changed" in out


def test_a_render_output_and_a_repository_are_not_compared(
    fleet: Repo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rendered = render(fleet, tmp_path / "rendered", capsys)
    code, out, err = run(["diff", str(rendered), str(fleet.root)], capsys)
    assert code == ExitStatus.INVALID_REPOSITORY and out == ""
    assert "is a `reviewer render` output (index.json) but" in err
    assert "compare two render outputs, or two repository checkouts" in err
