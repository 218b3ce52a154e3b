"""Clusters that appear or vanish between the sides are explained, in every report format."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import GitRepo, git
from test_diff_command import APP, fleet, run_diff

from reviewer.discover import Layout, discovery_warnings
from reviewer.errors import ExitStatus
from reviewer.markdown import plain

__all__ = ["fleet"]  # the fixture, used by name

GONE = (
    "cluster dev/a (deployments/dev/a/) exists on the target branch only: on the merge "
    "result its apps/ directory is gone"
)


def own_deployment_on_main(fleet: GitRepo) -> None:
    """dev/a has one deployment of its own (besides the global one) on the target branch."""
    fleet.remove("deployments/dev/a/apps/.keep")
    fleet.write("deployments/dev/a/apps/own/deployment.yaml", APP)
    fleet.commit("own deployment")
    git(fleet.root, "branch", "--quiet", "-f", "main")


def test_a_cluster_losing_its_last_own_deployment_is_explained_in_every_format(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    own_deployment_on_main(fleet)
    fleet.remove("deployments/dev/a/apps/own")
    fleet.commit("drop the last own deployment")
    args = ["--repo", str(fleet.root), "--base", "main", "--head", "feature"]
    code, text, _ = run_diff(args, capsys)
    assert code == ExitStatus.OK
    assert f"warning: {GONE}" in text
    assert "all its releases, global and group ones included, show as removed" in text
    _, markdown, _ = run_diff([*args, "--format", "markdown"], capsys)
    assert f"> [!WARNING]\n> {plain(GONE)}" in markdown
    _, out, _ = run_diff([*args, "--format", "json"], capsys)
    report = json.loads(out)
    assert any(warning.startswith(GONE) for warning in report["warnings"])
    removed = {r["deployment"] for r in report["releases"] if r["status"] == "removed"}
    assert removed == {"base", "own"}


def test_a_directory_with_cluster_values_but_no_apps_is_not_a_cluster(fleet: GitRepo) -> None:
    fleet.write("deployments/dev/c/cluster.values.yaml", "where: nowhere\n")
    warnings = discovery_warnings(fleet.root, fleet.root, Layout())
    assert warnings == (
        "deployments/dev/c/ has cluster.values.* but no apps/ directory, so it is not a "
        "cluster and nothing is rendered for it (git keeps no empty directories: a cluster "
        "with no deployment of its own keeps apps/ with a file such as apps/.keep)",
    )


def test_clusters_on_one_side_only_are_named_with_their_directory(
    fleet: GitRepo, tmp_path_factory: pytest.TempPathFactory
) -> None:
    head = tmp_path_factory.mktemp("head") / "tree"
    shutil.copytree(fleet.root, head, ignore=shutil.ignore_patterns(".git"))
    (head / "deployments/dev/new/apps").mkdir(parents=True)
    (head / "deployments/dev/new/apps/.keep").write_text("")
    shutil.rmtree(head / "deployments/prod/us")
    warnings = discovery_warnings(fleet.root, head, Layout())
    assert warnings == (
        "cluster prod/us (deployments/prod/us/) exists on the target branch only: its "
        "directory was removed; all its releases, global and group ones included, show as "
        "removed",
        "cluster dev/new (deployments/dev/new/) exists on the merge result only: a new "
        "cluster, all its releases show as added",
    )


def test_no_warning_when_the_clusters_are_the_same(fleet: GitRepo) -> None:
    assert discovery_warnings(fleet.root, fleet.root, Layout()) == ()


def test_an_apps_that_is_a_file_is_named_not_taken_for_a_missing_directory(
    fleet: GitRepo,
) -> None:
    """A group's `apps` made a file dropped its deployments from every cluster without a
    word, and a cluster's was explained as a directory git had dropped."""
    fleet.write("deployments/prod/apps/shop/deployment.yaml", APP)
    fleet.commit("a group deployment")
    git(fleet.root, "branch", "--quiet", "-f", "main")
    base = fleet.root.parent / "base"
    shutil.copytree(fleet.root, base)
    for directory in ("deployments/prod/apps", "deployments/dev/a/apps"):
        shutil.rmtree(fleet.root / directory)
        (fleet.root / directory).write_text("x\n")
    warnings = discovery_warnings(base, fleet.root, Layout())
    assert warnings == (
        "cluster dev/a (deployments/dev/a/) exists on the target branch only: on the merge "
        "result its apps is not a directory; all its releases, global and group ones "
        "included, show as removed",
        "deployments/prod/apps is not a directory, so no deployment is read from it: every "
        "release it would define is missing on the merge result",
    )
    # Already so on the target branch: nothing the change did.
    assert discovery_warnings(fleet.root, fleet.root, Layout())[1:] == ()
