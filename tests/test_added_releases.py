"""Added and removed releases are summarised: objects with sizes, and what an added one is like."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from conftest import GitRepo

from reviewer.cli import main
from reviewer.comment import size

BIG_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: big\nversion: 1.0.0\n",
    "values.yaml": "region: eu\n",
    "templates/dashboard.yaml": """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-dashboard
data:
  dashboard.json: |
{{- range $i := until 3000 }}
    line {{ $i }} of the dashboard
{{- end }}
""",
    "templates/many.yaml": """\
{{- range $i := until 29 }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $.Release.Name }}-part-{{ $i }}
data:
  region: {{ $.Values.region }}
{{- end }}
""",
}


@pytest.fixture
def fleet(git_repo: GitRepo) -> GitRepo:
    git_repo.add_chart("charts/big", BIG_CHART)
    git_repo.add_template("app", "releases:\n  - name: app\n    chart: ../../charts/big\n")
    git_repo.write("deployments/apps/web/deployment.yaml", "apps: [{template: app}]\n")
    git_repo.write("deployments/prod/prd-a/apps/.keep", "")
    git_repo.commit("fleet")
    return git_repo


def diff(repo: GitRepo, capsys: pytest.CaptureFixture[str], output: str) -> str:
    with pytest.raises(SystemExit):
        main(["diff", "--repo", str(repo.root), "--base", "main", "--format", output])
    return capsys.readouterr().out


def test_an_added_cluster_is_summarised_and_compared_with_its_sibling(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/prod/prd-b/apps/.keep", "")
    fleet.write("deployments/prod/prd-b/cluster.values.yaml", "region: us\n")
    markdown = diff(fleet, capsys, "markdown")
    assert size(markdown) < 20_000
    assert "line 2999 of the dashboard" not in markdown
    assert "30 object(s)" in markdown
    assert re.search(r"\| `ConfigMap` \| `app-dashboard` \| 300[0-9] \| [0-9]+ \|", markdown)
    assert "Most resembles `prod/prd-a/web/app`" in markdown
    assert 'data.region: "eu" → "us"' in markdown
    report: dict[str, Any] = json.loads(diff(fleet, capsys, "json"))
    added = next(r for r in report["releases"] if r["status"] == "added")
    assert added["resembles"]["release"] == "prod/prd-a/web/app"
    assert any("line 2999" in r["diff"] for r in added["resources"])  # the full content


def test_a_removed_release_lists_its_objects_only(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.remove("deployments/prod/prd-a")
    fleet.write("deployments/prod/prd-c/apps/.keep", "")  # nothing left to resemble
    text = diff(fleet, capsys, "text")
    assert "- prod/prd-a/web/app [removed]" in text
    assert text.count("30 object(s)") == 2 and "line 12 of the dashboard" not in text
    assert "most resembles" not in text
