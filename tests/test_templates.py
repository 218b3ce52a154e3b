"""deployment.yaml and app templates: naming, namespaces, labels and every bad-input error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo, received_values, release

from reviewer.cli import main
from reviewer.errors import ExitStatus
from reviewer.model import Snapshot
from reviewer.templates import suggest_release_name


def failure(snapshot: Snapshot) -> str:
    """The one failure of a snapshot."""
    assert len(snapshot.failed) == 1, [r.error for r in snapshot.failed]
    error = snapshot.failed[0].error
    assert error is not None
    return error


def test_release_names_prefix_suffix_and_unchanged(repo: Repo) -> None:
    repo.write(
        "deployments/c/apps/web/deployment.yaml",
        """\
        apps:
          - template: app
          - template: app
            name: blue
          - template: app
            name: green
            nameStyle: suffix
        """,
    )
    names = {r.id.release for r in repo.render().releases}
    assert names == {"app", "blue-app", "app-green"}


def test_namespace_precedence(repo: Repo) -> None:
    repo.write(
        "templates/app/helmfile.yaml.gotmpl",
        "releases: [{name: app, chart: ../../charts/dump, namespace: from-template}]\n",
    )
    repo.write(
        "deployments/c/apps/a/deployment.yaml",
        "settings: {namespace: from-settings}\n"
        "apps: [{template: app, namespace: from-app}, {template: app, name: s}]\n",
    )
    repo.write("deployments/c/apps/b/deployment.yaml", "apps: [{template: app}]\n")
    snapshot = repo.render()
    assert release(snapshot, "c", "a", "app").namespace == "from-app"
    assert release(snapshot, "c", "a", "s-app").namespace == "from-settings"
    assert release(snapshot, "c", "b", "app").namespace == "from-template"
    rendered_ns = release(snapshot, "c", "a", "app").resources[0].key.namespace
    assert rendered_ns == "from-app"


def test_namespace_defaults_to_default(repo: Repo) -> None:
    repo.write("deployments/c/apps/a/deployment.yaml", "apps: [{template: app}]\n")
    assert release(repo.render(), "c", "a", "app").namespace == "default"


def test_labels_standard_common_release_and_app(repo: Repo) -> None:
    repo.write(
        "templates/team/web/helmfile.yaml.gotmpl",
        """\
        commonLabels: {team: payments}
        releases:
          - name: web
            chart: ../../../charts/dump
            labels: {tier: frontend}
        """,
    )
    repo.write(
        "deployments/g/c/apps/shop/deployment.yaml",
        "apps: [{template: team/web, name: blue, labels: {owner: alice}}]\n",
    )
    labels = release(repo.render(), "g/c", "shop", "blue-web").labels
    assert labels == {
        "team": "payments",
        "tier": "frontend",
        "owner": "alice",
        "cluster": "g/c",
        "clusterName": "c",
        "clusterGroup": "g",
        "deploymentName": "shop",
        "template": "team/web",
        "instance": "blue",
        "variant": "default",
    }


def test_condition_and_installed_are_ignored(repo: Repo) -> None:
    repo.write(
        "templates/app/helmfile.yaml.gotmpl",
        "releases: [{name: app, chart: ../../charts/dump, installed: false, condition: x.on}]\n",
    )
    repo.write("deployments/c/apps/a/deployment.yaml", "apps: [{template: app}]\n")
    assert release(repo.render(), "c", "a", "app").error is None


def test_template_sees_hierarchy_and_instance(repo: Repo) -> None:
    repo.write(
        "templates/app/helmfile.yaml.gotmpl",
        """\
        releases:
          - name: {{ .Values.component }}
            chart: ../../charts/dump
            namespace: {{ .Values.atlas.instance.name }}-{{ .Values.atlas.deployment.clusterName }}
        """,
    )
    repo.write("deployments/global.values.yaml", "component: api\n")
    repo.write("deployments/c/apps/a/deployment.yaml", "apps: [{template: app, name: x}]\n")
    assert release(repo.render(), "c", "a", "x-api").namespace == "x-c"


def test_deployment_yaml_is_a_template_over_plain_hierarchy_values(repo: Repo) -> None:
    repo.write("deployments/c/cluster.values.yaml", "instances: [red, blue]\n")
    repo.write(
        "deployments/c/apps/a/deployment.yaml",
        """\
        apps:
        {{- range .Values.instances }}
          - template: app
            name: {{ . }}
        {{- end }}
        """,
    )
    names = {r.id.release for r in repo.render().releases}
    assert names == {"red-app", "blue-app"}


def test_relative_chart_path_resolves_against_template_dir(repo: Repo) -> None:
    repo.add_chart("templates/nested/deep/chart")
    repo.write(
        "templates/nested/deep/helmfile.yaml",
        "releases: [{name: local, chart: ./chart}]\n",
    )
    repo.write("deployments/c/apps/a/deployment.yaml", "apps: [{template: nested/deep}]\n")
    rendered = release(repo.render(), "c", "a", "local")
    assert rendered.error is None and rendered.chart == "dump"


# --- bad input: clear errors naming file and field; other releases go on ---


def test_invalid_name_style(repo: Repo) -> None:
    repo.write(
        "deployments/c/apps/a/deployment.yaml", "apps: [{template: app, nameStyle: middle}]\n"
    )
    repo.write("deployments/c/apps/ok/deployment.yaml", "apps: [{template: app}]\n")
    snapshot = repo.render()
    message = failure(snapshot)
    assert "deployments/c/apps/a/deployment.yaml: apps[0].nameStyle" in message
    assert "'middle' is not allowed; use one of: prefix, suffix" in message
    assert release(snapshot, "c", "ok", "app").error is None


def test_unknown_template_suggests_close_names(repo: Repo) -> None:
    repo.write("deployments/c/apps/a/deployment.yaml", "apps: [{template: ap}]\n")
    message = failure(repo.render())
    assert "apps[0].template: unknown template 'ap'; templates found: app" in message
    assert "did you mean: app?" in message


def test_unknown_field_in_deployment_yaml(repo: Repo) -> None:
    repo.write("deployments/c/apps/a/deployment.yaml", "apps: [{template: app, valuez: []}]\n")
    message = failure(repo.render())
    assert "apps[0].valuez: unknown field; allowed: template, name, nameStyle" in message


def test_missing_explicit_values_file(repo: Repo) -> None:
    repo.write(
        "deployments/c/apps/a/deployment.yaml", "apps: [{template: app, values: [nope.yaml]}]\n"
    )
    message = failure(repo.render())
    assert "deployments/c/apps/a/deployment.yaml: apps[0].values[0]" in message
    assert "file 'deployments/c/apps/a/nope.yaml' does not exist" in message


def test_values_path_cannot_leave_the_repository(repo: Repo) -> None:
    repo.write(
        "deployments/c/apps/a/deployment.yaml",
        "apps: [{template: app, values: [../../../../../../etc/passwd]}]\n",
    )
    message = failure(repo.render())
    assert "apps[0].values[0]: path '../../../../../../etc/passwd' leaves the repository" in message


def test_chart_path_cannot_leave_the_repository(repo: Repo) -> None:
    repo.write("templates/app/helmfile.yaml", "releases: [{name: app, chart: ../../../../x}]\n")
    (repo.root / "templates/app/helmfile.yaml.gotmpl").unlink()
    repo.write("deployments/c/apps/a/deployment.yaml", "apps: [{template: app}]\n")
    assert "releases[0].chart: path '../../../../x' leaves the repository" in failure(repo.render())


def test_post_renderer_is_rejected(repo: Repo) -> None:
    repo.write(
        "templates/app/helmfile.yaml.gotmpl",
        "releases: [{name: app, chart: ../../charts/dump, postRenderer: ./kustomize.sh}]\n",
    )
    repo.write("deployments/c/apps/a/deployment.yaml", "apps: [{template: app}]\n")
    message = failure(repo.render())
    assert (
        "templates/app/helmfile.yaml.gotmpl: releases[0].postRenderer: is not supported" in message
    )


def test_release_name_over_53_characters_suggests_a_valid_one(repo: Repo) -> None:
    long_name = "a-really-long-instance-name-that-goes-on-and-on-and-on"
    repo.write(
        "deployments/c/apps/a/deployment.yaml", f"apps: [{{template: app, name: {long_name}}}]\n"
    )
    message = failure(repo.render())
    full = f"{long_name}-app"
    suggestion = suggest_release_name(full)
    assert (
        f"release name '{full}' is {len(full)} characters long; Helm allows at most 53" in message
    )
    assert f"e.g. '{suggestion}'" in message
    assert len(suggestion) <= 53 and suggestion.startswith("a-really-long")
    # The suggestion itself is accepted.
    assert suggest_release_name(suggestion) == suggestion


def test_template_calling_exec_names_function_and_file(repo: Repo) -> None:
    repo.write(
        "templates/app/helmfile.yaml.gotmpl",
        'releases: [{name: {{ exec "whoami" list }}, chart: ../../charts/dump}]\n',
    )
    repo.write("deployments/c/apps/a/deployment.yaml", "apps: [{template: app}]\n")
    message = failure(repo.render())
    assert (
        "templates/app/helmfile.yaml.gotmpl:1: template function 'exec' is helmfile-only" in message
    )


def test_values_gotmpl_cannot_read_the_environment(repo: Repo) -> None:
    repo.write("deployments/c/cluster.values.yaml.gotmpl", 'home: {{ env "HOME" }}\n')
    repo.write("deployments/c/apps/a/deployment.yaml", "apps: [{template: app}]\n")
    message = failure(repo.render())
    assert "deployments/c/cluster.values.yaml.gotmpl:1: template function 'env'" in message


def test_malformed_yaml_shows_file_and_line(repo: Repo) -> None:
    repo.write("deployments/c/cluster.values.yaml", "a: 1\nb: [unclosed\nc: 3\n")
    repo.write("deployments/c/apps/a/deployment.yaml", "apps: [{template: app}]\n")
    message = failure(repo.render())
    assert message.startswith("deployments/c/cluster.values.yaml:")
    assert "malformed YAML" in message


def test_duplicate_release_in_one_deployment(repo: Repo) -> None:
    repo.write("deployments/c/apps/a/deployment.yaml", "apps: [{template: app}, {template: app}]\n")
    snapshot = repo.render()
    message = failure(snapshot)
    assert "release name 'app' is produced more than once" in message
    assert "(by apps[0], apps[1])" in message
    assert release(snapshot, "c", "a", "app").error is not None
    assert len(snapshot.releases) == 1


def test_values_received_by_first_instance_survive_a_failing_sibling(repo: Repo) -> None:
    repo.write(
        "deployments/c/apps/a/deployment.yaml",
        "apps: [{template: app, name: good}, {template: app, name: bad, values: [missing.yaml]}]\n",
    )
    snapshot = repo.render()
    assert "missing.yaml" in failure(snapshot)
    assert received_values(snapshot, "c", "a", "good-app")["replicas"] == 1


# --- typed decoding: wrong types and quoted booleans are refused, not guessed ---


def render_cli(
    repo: Repo, out: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[object, str, dict[str, dict[str, Any]]]:
    """Run `reviewer render`: exit status, standard error and index entries by deployment."""
    with pytest.raises(SystemExit) as done:
        main(["render", str(repo.root), "--out", str(out)])
    index = json.loads((out / "index.json").read_text(encoding="utf-8"))
    entries = {entry["deployment"]: entry for entry in index["releases"]}
    return done.value.code, capsys.readouterr().err, entries


def test_wrong_type_in_deployment_yaml_fails_that_deployment_only(
    repo: Repo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("deployments/c/apps/bad/deployment.yaml", "apps: [{template: app, name: [x]}]\n")
    repo.write("deployments/c/apps/ok/deployment.yaml", "apps: [{template: app}]\n")
    code, stderr, entries = render_cli(repo, tmp_path / "out", capsys)
    assert code == ExitStatus.RENDER_FAILED
    assert "deployments/c/apps/bad/deployment.yaml: apps[0].name: must be a string" in stderr
    assert entries["ok"]["status"] == "rendered"


@pytest.mark.parametrize(
    ("template", "field"),
    [
        (
            'releases: [{name: app, chart: ../../charts/dump, skipSchemaValidation: "false"}]\n',
            "releases[0].skipSchemaValidation: must be true or false",
        ),
        (
            "repositories: [{name: r, url: charts.example.test, oci: 'false'}]\n"
            "releases: [{name: app, chart: ../../charts/dump}]\n",
            "repositories[0].oci: must be true or false",
        ),
        (
            "releases: [{name: app, chart: ../../charts/dump, labels: {tier: [a]}}]\n",
            "releases[0].labels.tier: must be a string",
        ),
        (
            "releases: [{name: app, chart: ../../charts/dump, set: {a: 1}}]\n",
            "releases[0].set: must be a list",
        ),
        (
            "releases: [{name: app, chart: ../../charts/dump, timeout: soon}]\n",
            "releases[0].timeout: must be a whole number",
        ),
        (
            "releases: [{name: app, chrat: ../../charts/dump}]\n",
            "releases[0].chrat: unknown field; allowed: name, chart, version",
        ),
    ],
)
def test_a_quoted_boolean_or_wrong_type_in_a_template_is_refused(
    repo: Repo, tmp_path: Path, capsys: pytest.CaptureFixture[str], template: str, field: str
) -> None:
    repo.add_template("other")
    repo.write("templates/app/helmfile.yaml.gotmpl", template)
    repo.write("deployments/c/apps/a/deployment.yaml", "apps: [{template: app}]\n")
    repo.write("deployments/c/apps/b/deployment.yaml", "apps: [{template: other}]\n")
    code, stderr, entries = render_cli(repo, tmp_path / "out", capsys)
    assert code == ExitStatus.RENDER_FAILED
    assert f"templates/app/helmfile.yaml.gotmpl: {field}" in stderr
    assert entries["b"]["status"] == "rendered"


def test_release_fields_without_effect_on_rendering_are_accepted(repo: Repo) -> None:
    repo.write(
        "templates/app/helmfile.yaml.gotmpl",
        """\
        releases:
          - name: app
            chart: ../../charts/dump
            createNamespace: true
            wait: true
            waitForJobs: false
            timeout: 600
            atomic: true
            needs: [kube-system/cert-manager]
            historyMax: 10
            cleanupOnFail: true
            recreatePods: false
            force: false
            verify: false
            devel: false
            missingFileHandler: Warn
            installedTemplate: '{{ "{{" }} true {{ "}}" }}'
            skipSchemaValidation: false
        """,
    )
    repo.write("deployments/c/apps/a/deployment.yaml", "apps: [{template: app}]\n")
    assert release(repo.render(), "c", "a", "app").error is None
