"""The plan stage alone: releases resolved from a repository, before any chart is rendered."""

from __future__ import annotations

from conftest import Repo
from stages import ReleaseId, plan_repo, plans_by_id

APP = "apps: [{template: app}]\n"


def test_every_cluster_gets_a_release_per_deployment_with_identity_and_labels(
    repo: Repo,
) -> None:
    repo.write("deployments/prod/eu/apps/web/deployment.yaml", APP)
    repo.write("deployments/solo/apps/web/deployment.yaml", APP)
    plans = plans_by_id(repo.root)
    assert sorted(plans) == [ReleaseId("prod/eu", "web", "app"), ReleaseId("solo", "web", "app")]
    grouped = plans[ReleaseId("prod/eu", "web", "app")]
    assert grouped.labels == {
        "cluster": "prod/eu",
        "clusterName": "eu",
        "clusterGroup": "prod",
        "deploymentName": "web",
        "template": "app",
        "instance": "app",
        "variant": "default",
    }
    assert "clusterGroup" not in plans[ReleaseId("solo", "web", "app")].labels
    assert grouped.namespace == "default"
    assert grouped.chart.local == "charts/dump"
    assert grouped.template_file == "templates/app/helmfile.yaml.gotmpl"


def test_final_values_merge_hierarchy_over_release_layers_and_carry_the_atlas(
    repo: Repo,
) -> None:
    repo.write("deployments/global.values.yaml", "tier: bronze\nregion: none\n")
    repo.write("deployments/prod/group.values.yaml", "tier: gold\n")
    repo.write(
        "deployments/prod/eu/apps/web/deployment.yaml",
        "apps: [{template: app, values: [{tier: instance, size: 3}]}]\n",
    )
    (plan,) = plans_by_id(repo.root).values()
    assert plan.values["tier"] == "gold", "the hierarchy beats instance values"
    assert plan.values["size"] == 3
    assert plan.values["region"] == "none"
    assert plan.values["atlas"]["deployment"] == {
        "cluster": "prod/eu",
        "clusterName": "eu",
        "deploymentName": "web",
        "deploymentPath": "/repo/deployments/prod/eu/apps/web/deployment.yaml",
        "clusterGroup": "prod",
    }
    assert plan.values["atlas"]["instance"] == {
        "template": "app",
        "name": "app",
        "namespace": None,
    }


def test_layers_are_listed_lowest_priority_first_with_their_levels(repo: Repo) -> None:
    repo.write("deployments/global.values.yaml", "a: 1\n")
    repo.write("deployments/prod/eu/cluster.values.yaml", "a: 2\n")
    repo.write(
        "deployments/prod/eu/apps/web/deployment.yaml",
        "apps: [{template: app, values: [extra.yaml]}]\n",
    )
    repo.write("deployments/prod/eu/apps/web/extra.yaml", "a: 0\n")
    repo.write("deployments/prod/eu/apps/web/values.yaml", "a: 3\n")
    (plan,) = plans_by_id(repo.root).values()
    assert [(layer.source, layer.level) for layer in plan.layers] == [
        ("deployments/prod/eu/apps/web/extra.yaml", "instance values"),
        ("deployments/global.values.yaml", "global"),
        ("deployments/prod/eu/cluster.values.yaml", "cluster prod/eu"),
        ("deployments/prod/eu/apps/web/values.yaml", "deployment web"),
    ]
    assert plan.values["a"] == 3


def test_inputs_name_every_file_the_release_is_built_from(repo: Repo) -> None:
    repo.write("deployments/global.values.yaml", "a: 1\n")
    repo.write("deployments/other.txt", "not read\n")
    repo.write("deployments/c1/apps/web/deployment.yaml", APP)
    (plan,) = plans_by_id(repo.root).values()
    assert plan.inputs == {
        "deployments/c1/apps/web/deployment.yaml",
        "templates/app/helmfile.yaml.gotmpl",
        "deployments/global.values.yaml",
        "charts/dump",
    }


def test_deployment_yaml_is_rendered_over_plain_hierarchy_values(repo: Repo) -> None:
    repo.write("deployments/global.values.yaml", "team: payments\n")
    repo.write(
        "deployments/c1/apps/web/deployment.yaml",
        "apps: [{template: app,"
        " namespace: '{{ .Values.team }}-{{ .Values.atlas.deployment.clusterName }}'}]\n",
    )
    (plan,) = plans_by_id(repo.root).values()
    assert plan.namespace == "payments-c1"


def test_a_broken_deployment_fails_alone_and_the_rest_is_planned(repo: Repo) -> None:
    repo.write("deployments/c1/apps/good/deployment.yaml", APP)
    repo.write("deployments/c1/apps/bad/deployment.yaml", "apps: [{template: nope}]\n")
    plan = plan_repo(repo.root)
    assert [release.id for release in plan.releases] == [ReleaseId("c1", "good", "app")]
    (error,) = plan.errors
    assert (error.cluster, error.deployment, error.release) == ("c1", "bad", None)
    assert "deployments/c1/apps/bad/deployment.yaml" in error.message
    assert "apps[0].template" in error.message
    assert "--deployment bad" in error.reproduce


def test_two_instances_producing_one_release_name_plan_neither(repo: Repo) -> None:
    repo.write(
        "deployments/c1/apps/web/deployment.yaml",
        "apps: [{template: app}, {template: app}, {template: app, name: api}]\n",
    )
    plan = plan_repo(repo.root)
    assert [release.id.release for release in plan.releases] == ["api-app"]
    (error,) = plan.errors
    assert error.release == "app"
    assert "apps[0]" in error.message and "apps[1]" in error.message


def test_reproduction_commands_render_just_that_deployment(repo: Repo) -> None:
    repo.write("deployments/c1/apps/web/deployment.yaml", APP)
    (plan,) = plans_by_id(repo.root).values()
    assert plan.reproduce == (
        'out=$(mktemp -d) && reviewer render . --cluster c1 --deployment web --out "$out"'
    )
    assert plan.helm_command is not None
    start, values, helm = plan.helm_command.split(" && ")
    assert start == "values=$(mktemp)"
    values = values.removesuffix(' > "$values"')
    assert values == ("reviewer values . --cluster c1 --deployment web --release app --no-redact")
    assert helm == ('helm template app ./charts/dump --namespace default -f "$values"')
