"""Discovery rules of docs/layout.md, checked on what gets rendered."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Repo, received_values

from reviewer.discover import DeploymentDir, HierarchySource, Layout, Level
from reviewer.errors import RepositoryError

APP = "apps: [{template: app}]\n"


def rendered_ids(repo: Repo) -> set[str]:
    return {str(r.id) for r in repo.render().releases}


def test_group_cluster_and_standalone_clusters_each_get_their_deployments(repo: Repo) -> None:
    repo.write("deployments/apps/everywhere/deployment.yaml", APP)
    repo.write("deployments/prod/apps/shop/deployment.yaml", APP)
    repo.write("deployments/prod/eu/apps/local/deployment.yaml", APP)
    repo.write("deployments/prod/us/apps/.keep", "")
    repo.write("deployments/sandbox/apps/.keep", "")
    repo.write("deployments/docs/README.md", "not a cluster: no apps/ below\n")

    assert rendered_ids(repo) == {
        "prod/eu/everywhere/app",
        "prod/eu/shop/app",
        "prod/eu/local/app",
        "prod/us/everywhere/app",
        "prod/us/shop/app",
        "sandbox/everywhere/app",
    }


def test_atlas_names_cluster_group_and_standalone(repo: Repo) -> None:
    repo.write("deployments/apps/d/deployment.yaml", APP)
    repo.write("deployments/region/prod/eu-1/apps/.keep", "")
    repo.write("deployments/solo/apps/.keep", "")
    snapshot = repo.render()

    nested = received_values(snapshot, "region/prod/eu-1", "d", "app")["atlas"]["deployment"]
    assert nested == {
        "cluster": "region/prod/eu-1",
        "clusterName": "eu-1",
        "clusterGroup": "region/prod",
        "deploymentName": "d",
        "deploymentPath": "/repo/deployments/apps/d/deployment.yaml",
    }
    solo = received_values(snapshot, "solo", "d", "app")["atlas"]["deployment"]
    assert "clusterGroup" not in solo
    assert solo["clusterName"] == "solo"


def test_most_specific_definition_wins(repo: Repo) -> None:
    repo.write("deployments/apps/web/deployment.yaml", "apps: [{template: app, name: glob}]\n")
    repo.write("deployments/prod/apps/web/deployment.yaml", "apps: [{template: app, name: grp}]\n")
    repo.write(
        "deployments/prod/eu/apps/web/deployment.yaml", "apps: [{template: app, name: own}]\n"
    )
    repo.write("deployments/prod/us/apps/.keep", "")
    repo.write("deployments/dev/apps/.keep", "")

    assert rendered_ids(repo) == {"prod/eu/web/own-app", "prod/us/web/grp-app", "dev/web/glob-app"}


def test_group_level_with_apps_is_still_a_group(repo: Repo) -> None:
    # prod has apps/ itself but clusters below: it is a group, not a cluster.
    repo.write("deployments/prod/apps/shop/deployment.yaml", APP)
    repo.write("deployments/prod/eu/apps/.keep", "")
    assert rendered_ids(repo) == {"prod/eu/shop/app"}


def test_duplicate_leaf_names_are_an_error_listing_every_path(repo: Repo) -> None:
    repo.write("deployments/prod/eu/apps/x/deployment.yaml", APP)
    repo.write("deployments/staging/eu/apps/x/deployment.yaml", APP)
    with pytest.raises(RepositoryError) as raised:
        repo.render()
    assert "'eu' at prod/eu, staging/eu" in str(raised.value)


def test_global_only_repository_is_an_error(repo: Repo) -> None:
    repo.write("deployments/apps/x/deployment.yaml", APP)
    with pytest.raises(RepositoryError) as raised:
        repo.render()
    assert "no cluster found" in str(raised.value)


def test_missing_definitions_root_is_an_error(repo: Repo) -> None:
    with pytest.raises(RepositoryError) as raised:
        repo.render()
    assert "'deployments/' not found" in str(raised.value)


def test_deployment_directory_without_deployment_yaml_fails_only_itself(repo: Repo) -> None:
    repo.write("deployments/c/apps/broken/values.yaml", "a: 1\n")
    repo.write("deployments/c/apps/fine/deployment.yaml", APP)
    snapshot = repo.render()
    failed = {str(r.id): r.error for r in snapshot.failed}
    assert list(failed) == ["c/broken/*"]
    assert "deployments/c/apps/broken/deployment.yaml: missing" in str(failed["c/broken/*"])
    assert received_values(snapshot, "c", "fine", "app")["replicas"] == 1


# --- the stage alone: what `HierarchySource.discover` returns ----------------------------------


def test_discover_returns_each_cluster_with_its_levels_outermost_first(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    repo.write("deployments/apps/base/deployment.yaml", APP)
    repo.write("deployments/eu/prod/fra/apps/web/deployment.yaml", APP)
    repo.write("deployments/solo/apps/.keep", "")
    repo.write("deployments/.hidden/c9/apps/x/deployment.yaml", APP)
    fleet = HierarchySource().discover(tmp_path)
    assert fleet.root == tmp_path and fleet.layout == Layout()
    assert [cluster.path for cluster in fleet.clusters] == ["eu/prod/fra", "solo"]
    fra, solo = fleet.clusters
    assert fra.levels == (
        Level("global", "deployments", "global"),
        Level("group", "deployments/eu", "group eu"),
        Level("group", "deployments/eu/prod", "group eu/prod"),
        Level("cluster", "deployments/eu/prod/fra", "cluster eu/prod/fra"),
    )
    assert (fra.name, fra.group, solo.name, solo.group) == ("fra", "eu/prod", "solo", None)
    assert [d.name for d in fra.deployments] == ["base", "web"]
    assert [d.name for d in solo.deployments] == ["base"]


def test_a_deployment_is_taken_from_the_most_specific_level(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    repo.write("deployments/apps/web/deployment.yaml", APP)
    repo.write("deployments/grp/apps/web/deployment.yaml", APP)
    repo.write("deployments/grp/c1/apps/.keep", "")
    (cluster,) = HierarchySource().discover(tmp_path).clusters
    web = cluster.deployment("web")
    assert web == DeploymentDir(
        "web", "deployments/grp/apps/web", Level("group", "deployments/grp", "group grp")
    )
    assert cluster.deployment("api") is None


def test_discover_follows_the_layout(tmp_path: Path) -> None:
    Repo(tmp_path).write("fleet/defs/c1/apps/web/deployment.yaml", APP)
    layout = Layout(definitions="fleet/defs", templates="tpl")
    fleet = HierarchySource(layout).discover(tmp_path)
    assert fleet.layout == layout
    (cluster,) = fleet.clusters
    assert cluster.levels[0] == Level("global", "fleet/defs", "global")
    assert cluster.deployments[0].path == "fleet/defs/c1/apps/web"
    with pytest.raises(RepositoryError, match="'deployments/' not found"):
        HierarchySource().discover(tmp_path)


def test_discover_refuses_two_clusters_of_one_name(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    repo.write("deployments/a/edge/apps/.keep", "")
    repo.write("deployments/b/edge/apps/.keep", "")
    with pytest.raises(RepositoryError, match="'edge' at a/edge, b/edge"):
        HierarchySource().discover(tmp_path)


def test_directories_without_apps_are_listed_wherever_the_levels_reach(tmp_path: Path) -> None:
    """Not-clusters are found at any depth of the levels, never inside `apps/` or hidden
    directories, and not through a symlinked directory (as a recursive glob has it)."""
    root = tmp_path / "deployments"
    for directory in ("g/c1/apps/x", "g/c2", "g/.hidden/c3", "g/apps/c4", "h/c5/sub", "real/c6"):
        (root / directory).mkdir(parents=True)
    for file in (
        "g/c1/cluster.values.yaml",
        "g/c1/apps/x/cluster.values.yaml",
        "g/c2/cluster.values.yaml",
        "g/.hidden/c3/cluster.values.yaml",
        "g/apps/c4/cluster.values.yaml",
        "h/c5/sub/cluster.values.yaml.gotmpl",
        "real/c6/cluster.values.yaml",
    ):
        (root / file).write_text("a: 1\n")
    (root / "g" / "link").symlink_to(root / "real")

    fleet = HierarchySource(Layout()).discover(tmp_path)

    assert [cluster.path for cluster in fleet.clusters] == ["g/c1"]
    assert fleet.not_clusters == (
        "deployments/g/c2",
        "deployments/h/c5/sub",
        "deployments/real/c6",
    )
