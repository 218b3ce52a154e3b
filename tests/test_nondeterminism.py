"""Fields a chart regenerates on every render are listed, never reported as changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from commandargs import diff_json
from conftest import GitRepo
from test_engines import chart_dir, engines

from reviewer.cli import main
from reviewer.engine import BinaryEngine, EmbeddedEngine, RenderRequest
from reviewer.semantic import format_path, semantic_diff
from reviewer.workers import manifests

__all__ = ["engines"]  # the engines fixture, shared with test_engines

# Random passwords, a generated CA and a UUID in Secrets; a Deployment whose pod
# template carries a checksum of one of them (so it is regenerated too).
RANDOM_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: random\nversion: 1.0.0\n",
    "values.yaml": "replicas: 1\nuser: admin\n",
    "templates/secret.yaml": """\
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-auth
data:
  password: {{ randAlphaNum 16 | b64enc | quote }}
  token: {{ uuidv4 | b64enc | quote }}
stringData:
  connection: |
    user={{ .Values.user }}
    password={{ randAlphaNum 12 }}
""",
    "templates/ca.yaml": """\
{{- $ca := genCA "reviewer-test" 365 }}
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-ca
type: kubernetes.io/tls
data:
  tls.crt: {{ $ca.Cert | b64enc | quote }}
  tls.key: {{ $ca.Key | b64enc | quote }}
""",
    "templates/deployment.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  template:
    metadata:
      annotations:
        checksum/auth: {{ include (print $.Template.BasePath "/secret.yaml") . | sha256sum }}
    spec:
      containers: [{name: app, image: "app:1"}]
""",
}


@pytest.fixture
def fleet(git_repo: GitRepo) -> GitRepo:
    """One cluster running the random chart; replicas set by the cluster."""
    git_repo.add_chart("charts/random", RANDOM_CHART)
    git_repo.add_template("app", "releases:\n  - name: app\n    chart: ../../charts/random\n")
    git_repo.write("deployments/apps/web/deployment.yaml", "apps: [{template: app}]\n")
    git_repo.write("deployments/prod/prd-a/apps/.keep", "")
    git_repo.write("deployments/prod/prd-a/cluster.values.yaml", "replicas: 1\n")
    git_repo.commit("fleet")
    return git_repo


def regenerated(report: dict[str, Any]) -> set[tuple[str, str, bool]]:
    return {(item["name"], item["path"], item["comparable"]) for item in report["regenerated"]}


def test_only_the_replicas_change_and_regenerated_fields_are_listed(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/prod/prd-a/cluster.values.yaml", "replicas: 3\n")
    report = diff_json(fleet, capsys)
    (release,) = report["releases"]
    assert release["status"] == "changed"
    (deployment,) = release["resources"]
    assert (deployment["kind"], deployment["changes"]) == ("Deployment", ["spec.replicas: 1 → 3"])
    assert "checksum" not in deployment["diff"]
    assert deployment["regenerated"] == ["spec.template.metadata.annotations.checksum/auth"]
    assert regenerated(report) == {
        ("app", "spec.template.metadata.annotations.checksum/auth", True),
        ("app-auth", "data.password", True),
        ("app-auth", "data.token", True),
        ("app-auth", "stringData.connection", True),
        ("app-ca", 'data["tls.crt"]', True),
        ("app-ca", 'data["tls.key"]', True),
    }
    assert report["summary"]["regenerated"] == 6
    assert [v["path"] for v in release["values"]] == ["replicas"]

    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["diff", "--repo", str(fleet.root), "--base", "main", "--format", "markdown"])
    markdown = capsys.readouterr().out
    assert "6 field(s) regenerated on every render" in markdown
    assert '`data["tls.key"]`' in markdown and "tls.key" not in markdown.split("</details>", 1)[1]


def test_a_change_that_only_regenerates_values_leaves_the_release_unchanged(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    # An input change the chart ignores: the digest differs, so both sides render anew.
    fleet.write("deployments/prod/prd-a/cluster.values.yaml", "replicas: 1\nunused: 1\n")
    report = diff_json(fleet, capsys)
    (release,) = report["releases"]
    assert (release["status"], release["resources"], release["values"]) == ("unchanged", [], [])
    assert report["summary"]["releases"]["changed"] == 0
    assert len(report["regenerated"]) == 6
    assert all(item["comparable"] for item in report["regenerated"])


def test_a_real_change_in_a_regenerated_field_cannot_be_compared_and_says_so(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/prod/prd-a/cluster.values.yaml", "replicas: 1\nuser: root\n")
    report = diff_json(fleet, capsys)
    (release,) = report["releases"]
    assert release["status"] == "changed"
    (secret,) = release["resources"]
    assert secret["name"] == "app-auth"
    assert ("app-auth", "stringData.connection", False) in regenerated(report)
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["diff", "--repo", str(fleet.root), "--base", "main"])
    text = capsys.readouterr().out
    assert "stringData.connection: regenerated on every render" in text
    assert "cannot be compared" in text
    assert "password=" not in text  # the secret stays redacted


def test_identical_inputs_render_once_and_need_no_second_render(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    report = diff_json(fleet, capsys)
    assert report["regenerated"] == [] and report["summary"]["releases"]["unchanged"] == 1


def test_engines_agree_on_the_random_chart_apart_from_its_random_fields(
    tmp_path: Path, engines: tuple[EmbeddedEngine, BinaryEngine]
) -> None:
    chart = chart_dir(tmp_path, "random", RANDOM_CHART)
    request = RenderRequest(chart, {"replicas": 2}, "rel", "ns")
    embedded, binary = (manifests(engine.render(request)) for engine in engines)
    assert [r.key for r in embedded] == [r.key for r in binary]
    differing = {
        (one.key.name, format_path(change.path))
        for one, other in zip(embedded, binary, strict=True)
        for change in semantic_diff(one.body, other.body)
    }
    assert differing == RANDOM_FIELDS
    for one, other in zip(embedded, binary, strict=True):
        assert one.body.keys() == other.body.keys()


RANDOM_FIELDS = {
    ("rel", "spec.template.metadata.annotations.checksum/auth"),
    ("rel-auth", "data.password"),
    ("rel-auth", "data.token"),
    ("rel-auth", "stringData.connection"),
    ("rel-ca", 'data["tls.crt"]'),
    ("rel-ca", 'data["tls.key"]'),
}
