"""Patterns found by reviewing real public charts, each reproduced by a chart written here.

A chart bump relabels every object (`helm.sh/chart: cert-manager-v1.18.0 → v1.18.1` on all
51 objects of cert-manager): the report must stay readable. A release broken on both sides
points to where its error is listed, wherever the summary is.
"""

from __future__ import annotations

import json

import pytest
from conftest import GitRepo, Repo, git
from stages import diff_repos
from test_diff_command import fleet, run_diff

from reviewer import report, report_json, report_markdown, report_text

__all__ = ["fleet"]  # the fixture, used by name

OPERATOR_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: operator\nversion: {version}\n",
    "values.yaml": "replicas: 1\n",
    "templates/_labels.tpl": """\
        {{- define "operator.labels" -}}
        app.kubernetes.io/name: operator
        helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
        {{- end }}
        """,
    "templates/accounts.yaml": """\
        {{- range $name := list "controller" "webhook" "cainjector" "startup" "viewer" }}
        ---
        apiVersion: v1
        kind: ServiceAccount
        metadata:
          name: operator-{{ $name }}
          labels:
            {{- include "operator.labels" $ | nindent 4 }}
        {{- end }}
        """,
    "templates/deployment.yaml": """\
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: operator
          labels:
            {{- include "operator.labels" . | nindent 4 }}
        spec:
          replicas: {{ .Values.replicas }}
          template:
            metadata:
              labels:
                {{- include "operator.labels" . | nindent 8 }}
        """,
}


def operator_fleet(root: Repo, version: str, replicas: int) -> Repo:
    """One cluster running the operator chart at `version` with `replicas`."""
    for name, text in OPERATOR_CHART.items():
        root.write(f"charts/operator/{name}", text.replace("{version}", version))
    root.add_template("operator", "releases: [{name: operator, chart: ../../charts/operator}]\n")
    root.write("deployments/prod/cluster.values.yaml", "region: eu\n")
    return root.write(
        "deployments/prod/apps/ops/deployment.yaml",
        f"apps:\n  - template: operator\n    values:\n      - replicas: {replicas}\n",
    )


def bump_review(tmp_path_factory: pytest.TempPathFactory) -> report.Review:
    base = operator_fleet(Repo(tmp_path_factory.mktemp("base") / "repo"), "1.0.0", 1)
    head = operator_fleet(Repo(tmp_path_factory.mktemp("head") / "repo"), "1.1.0", 2)
    diff = diff_repos(base, head)
    return report.Review(base=report.SideInfo("main"), head=report.SideInfo("pr"), diff=diff)


def test_a_chart_bump_shows_routine_only_objects_as_one_count(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    review = bump_review(tmp_path_factory)
    text = report_text.render_text(review)
    assert "ServiceAccount" not in text  # five accounts changed only their chart label
    assert "  ~ 5 object(s) with routine changes only:\n" in text
    label = 'metadata.labels["helm.sh/chart"]: "operator-1.0.0" → "operator-1.1.0"'
    assert f"      {label}  [labels: helm.sh/chart (default)]  (5 field(s))\n" in text
    # The Deployment's real change is still shown, with its own routine lines.
    assert "~ Deployment.apps operator" in text and "spec.replicas: 1 → 2" in text
    markdown = report_markdown.render_markdown(review)
    assert "ServiceAccount" not in markdown
    assert "**~ 5 object(s) with routine changes only**" in markdown
    assert f"{label}  [labels: helm.sh/chart (default)]  (5 field(s))" in markdown
    assert "spec.replicas: 1 → 2" in markdown


def test_routine_only_objects_stay_listed_one_by_one_in_json(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    review = bump_review(tmp_path_factory)
    (release,) = json.loads(json.dumps(report_json.to_json(review)))["releases"]
    routine = [r["name"] for r in release["resources"] if r["routineOnly"]]
    assert sorted(routine) == [
        f"operator-{name}" for name in ("cainjector", "controller", "startup", "viewer", "webhook")
    ]


def test_a_release_failing_on_both_sides_points_to_the_summary_where_its_error_is(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("templates/app/helmfile.yaml.gotmpl", "releases: [{name: app, chart: ../nope}]\n")
    fleet.commit("broken template on main")
    git(fleet.root, "branch", "--quiet", "-f", "main")
    fleet.write("deployments/prod/group.values.yaml", "tier: platinum\n")
    code, out, _ = run_diff(["--repo", str(fleet.root), "--base", "main"], capsys)
    assert code == 0
    details, _, summary = out.partition("\nreviewer diff: main")
    assert "fails to render on the merge result (error listed in the summary)" in details
    assert "chart '../nope' not found" in summary and "above" not in details


CACHE_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: cache\nversion: 1.0.0\n",
    "templates/secret.yaml": """\
        apiVersion: v1
        kind: Secret
        metadata:
          name: cache
        data:
          password: {{ randAlphaNum 16 | b64enc | quote }}
        """,
    "templates/config.yaml": """\
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: cache
        data:
          maxmemory: 64mb
        {{- range until 60 }}
          setting-{{ . }}: "a static value that every cluster renders alike"
        {{- end }}
        """,
}


def cache_fleet(repo: GitRepo, *clusters: str, password: bool) -> GitRepo:
    """A cache on every cluster, with a generated password (as bitnami's redis has) or not.

    Its configuration is large next to the password, as in real charts, so two renders
    differ by well under `NEAR_TIE` however the random characters fall."""
    chart = {k: v for k, v in CACHE_CHART.items() if password or k != "templates/secret.yaml"}
    repo.add_chart("charts/cache", chart)
    repo.add_template("cache", "releases: [{name: cache, chart: ../../charts/cache}]\n")
    repo.write("deployments/apps/cache/deployment.yaml", "apps: [{template: cache}]\n")
    for cluster in clusters:
        repo.write(f"deployments/{cluster}/apps/.keep", "")
    return repo


@pytest.mark.parametrize("password", [True, False], ids=["near-tie", "exact-tie"])
def test_an_added_cluster_resembles_its_group_sibling_when_others_are_as_alike(
    git_repo: GitRepo, capsys: pytest.CaptureFixture[str], password: bool
) -> None:
    cache_fleet(git_repo, "alpha/a1", "zulu/z1", password=password).commit("fleet")
    git_repo.write("deployments/zulu/z2/apps/.keep", "")
    code, out, _ = run_diff(["--repo", str(git_repo.root), "--base", "main"], capsys)
    assert code == 0
    assert "+ zulu/z2/cache/cache [added]" in out
    assert "most resembles zulu/z1/cache/cache" in out
