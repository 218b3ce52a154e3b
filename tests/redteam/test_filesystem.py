"""Red team, filesystem: nothing outside the checkout reaches a render (issue #12 item 3)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import Repo

from reviewer.model import Snapshot

DEPLOYMENT = "deployments/g/c/apps/d/deployment.yaml"


def _errors(snapshot: Snapshot) -> str:
    return "\n".join(r.error or "" for r in snapshot.releases)


def _text(snapshot: Snapshot) -> str:
    return repr([r.resources for r in snapshot.releases]) + _errors(snapshot)


def test_chart_file_symlinked_to_proc_environ_is_refused(repo: Repo) -> None:
    repo.write(DEPLOYMENT, "apps: [{template: app}]\n")
    repo.write(
        "charts/dump/templates/env.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: env}\n"
        'data: {env: {{ .Files.Get "files/env" | b64enc | quote }}}\n',
    )
    (repo.root / "charts/dump/files").mkdir()
    os.symlink("/proc/self/environ", repo.root / "charts/dump/files/env")
    snapshot = repo.render()
    assert "charts/dump/files/env" in _errors(snapshot)
    assert "outside the repository" in _errors(snapshot)
    assert all(not r.resources for r in snapshot.releases)


def test_values_file_symlinked_outside_is_refused(repo: Repo, tmp_path: Path) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text("stolen: outside-secret-text\n")
    repo.write(DEPLOYMENT, "apps: [{template: app}]\n")
    os.symlink(outside, repo.root / "deployments/g/c/apps/d/values.yaml")
    snapshot = repo.render()
    assert "deployments/g/c/apps/d/values.yaml" in _errors(snapshot)
    assert "outside-secret-text" not in _text(snapshot)


def test_cluster_directory_symlinked_outside_is_refused(repo: Repo, tmp_path: Path) -> None:
    elsewhere = Repo(tmp_path / "elsewhere")
    elsewhere.write("apps/d/deployment.yaml", "apps: [{template: app}]\n")
    elsewhere.write("cluster.values.yaml", "stolen: cluster-outside-text\n")
    repo.write("deployments/g/keep.values.yaml", "x: 1\n")
    os.symlink(elsewhere.root, repo.root / "deployments/g/c")
    snapshot = repo.render()
    assert "outside the repository" in _errors(snapshot)
    assert "cluster-outside-text" not in _text(snapshot)


def test_templates_directory_symlinked_outside_is_refused(repo: Repo, tmp_path: Path) -> None:
    elsewhere = Repo(tmp_path / "tpl")
    elsewhere.write(
        "app/helmfile.yaml", "releases: [{name: stolen-outside, chart: ../../charts/dump}]\n"
    )
    repo.write(DEPLOYMENT, "apps: [{template: app}]\n")
    for child in (repo.root / "templates").iterdir():
        for file in child.iterdir():
            file.unlink()
        child.rmdir()
    (repo.root / "templates").rmdir()
    os.symlink(elsewhere.root, repo.root / "templates")
    snapshot = repo.render()
    assert "outside the repository" in _errors(snapshot)
    assert "stolen-outside" not in repr([r.id for r in snapshot.releases])


def test_fifo_in_chart_is_refused_without_hanging(repo: Repo) -> None:
    repo.write(DEPLOYMENT, "apps: [{template: app}]\n")
    os.mkfifo(repo.root / "charts/dump/files.pipe")
    snapshot = repo.render()
    assert "charts/dump/files.pipe" in _errors(snapshot)
    assert "not a regular file" in _errors(snapshot)


def test_symlink_inside_the_checkout_is_fine(repo: Repo) -> None:
    repo.write(DEPLOYMENT, "apps: [{template: app}]\n")
    repo.write("common/extra.txt", "hello\n")
    os.symlink("../../common/extra.txt", repo.root / "charts/dump/extra.txt")
    snapshot = repo.render()
    assert _errors(snapshot) == ""


def test_chart_template_symlinked_outside_is_refused(repo: Repo, tmp_path: Path) -> None:
    outside = tmp_path / "stolen.yaml"
    outside.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: template-outside-text}\n")
    repo.write(DEPLOYMENT, "apps: [{template: app}]\n")
    os.symlink(outside, repo.root / "charts/dump/templates/stolen.yaml")
    snapshot = repo.render()
    assert "charts/dump/templates/stolen.yaml" in _errors(snapshot)
    assert "template-outside-text" not in _text(snapshot)


def test_group_values_file_symlinked_outside_is_refused(repo: Repo, tmp_path: Path) -> None:
    outside = tmp_path / "group.yaml"
    outside.write_text("stolen: group-outside-text\n")
    repo.write(DEPLOYMENT, "apps: [{template: app}]\n")
    os.symlink(outside, repo.root / "deployments/g/group.values.yaml")
    snapshot = repo.render()
    assert "deployments/g/group.values.yaml" in _errors(snapshot)
    assert "group-outside-text" not in _text(snapshot)


def _loop(directory: Path, first: str, second: str) -> None:
    os.symlink(second, directory / first)
    os.symlink(first, directory / second)


def test_a_loop_of_links_beside_the_values_drops_nothing(repo: Repo) -> None:
    """Two links pointing at each other in a cluster and a deployment directory once ended
    the run ("this is a bug"), or hid the deployment's own values without a word."""
    repo.write(DEPLOYMENT, "apps: [{template: app}]\n")
    repo.write("deployments/g/c/apps/d/values.yaml", "kept: deployment-value\n")
    _loop(repo.root / "deployments/g/c", "loop-a", "loop-b")
    _loop(repo.root / "deployments/g/c/apps/d", "loop-a", "loop-b")
    snapshot = repo.render()
    assert _errors(snapshot) == ""
    assert "deployment-value" in _text(snapshot)


@pytest.mark.parametrize(
    ("target", "reason"), [("values.yaml", "Too many levels"), ("gone.yaml", "No such file")]
)
def test_a_values_file_that_leads_nowhere_fails_its_deployment_naming_it(
    repo: Repo, target: str, reason: str
) -> None:
    """A values file that is a link to itself or to nothing is not "no values file"."""
    repo.write(DEPLOYMENT, "apps: [{template: app}]\n")
    repo.write("deployments/g/c/apps/other/deployment.yaml", "apps: [{template: app}]\n")
    os.symlink(target, repo.root / "deployments/g/c/apps/d/values.yaml")
    snapshot = repo.render()
    failed = [r for r in snapshot.releases if r.error]
    assert [r.id.deployment for r in failed] == ["d"]
    assert "deployments/g/c/apps/d/values.yaml: cannot be read" in _errors(snapshot)
    assert reason in _errors(snapshot)
    assert any(r.id.deployment == "other" and r.resources for r in snapshot.releases)
