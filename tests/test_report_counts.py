"""What `reviewer diff` reports about whole releases added or removed: counted apart from
changed ones, compared with a sibling without the fields a chart regenerates, and, between
two saved render outputs, a clear word that regenerated fields cannot be told apart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import GitRepo
from test_nondeterminism import RANDOM_CHART

from reviewer.cli import main
from reviewer.errors import ExitStatus

# The random chart's password ends up in the Deployment's checksum annotation, so siblings
# on two clusters differ in the Secrets and in that checksum on every render.


@pytest.fixture
def fleet(git_repo: GitRepo) -> GitRepo:
    """Two clusters running the random chart; each sets its own replicas."""
    git_repo.add_chart("charts/random", RANDOM_CHART)
    git_repo.add_template("app", "releases:\n  - name: app\n    chart: ../../charts/random\n")
    git_repo.write("deployments/apps/web/deployment.yaml", "apps: [{template: app}]\n")
    for cluster, replicas in (("prd-a", 1), ("prd-b", 2)):
        git_repo.write(f"deployments/prod/{cluster}/apps/.keep", "")
        git_repo.write(f"deployments/prod/{cluster}/cluster.values.yaml", f"replicas: {replicas}\n")
    git_repo.commit("fleet")
    return git_repo


def diff(repo: GitRepo, capsys: pytest.CaptureFixture[str], output: str) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        main(["diff", "--repo", str(repo.root), "--base", "main", "--format", output])
    said = capsys.readouterr()
    assert done.value.code == ExitStatus.OK, said.err
    return said.out


def test_a_removed_cluster_counts_as_removed_in_the_blast_radius_not_changed(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.remove("deployments/prod/prd-b")
    text = diff(fleet, capsys, "text")
    assert "0 changed, 0 added, 1 removed, 0 failed, 1 unchanged release(s)" in text
    line = "deployments/prod/prd-b/cluster.values.yaml → 1 release(s) in 1 cluster(s), "
    assert line + "0 changed, 1 removed\n" in text
    markdown = diff(fleet, capsys, "markdown")
    assert "`deployments/prod/prd-b/cluster.values.yaml` → " in markdown
    assert "1 release(s) in 1 cluster(s), 0 changed, 1 removed\n" in markdown
    report: dict[str, Any] = json.loads(diff(fleet, capsys, "json"))
    radius = {impact["file"]: impact for impact in report["summary"]["blastRadius"]}
    counts = radius["deployments/prod/prd-b/cluster.values.yaml"]
    assert (counts["changed"], counts["added"], counts["removed"], counts["failed"]) == (
        0,
        0,
        1,
        0,
    )


def test_a_file_shared_by_changed_added_and_removed_releases_counts_each_apart(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.remove("deployments/prod/prd-b")
    fleet.write("deployments/prod/prd-c/apps/.keep", "")
    fleet.write("deployments/prod/prd-c/cluster.values.yaml", "replicas: 3\n")
    fleet.write("deployments/prod/prd-a/cluster.values.yaml", "replicas: 4\n")
    fleet.write("charts/random/values.yaml", "replicas: 1\nuser: operator\n")
    text = diff(fleet, capsys, "text")
    assert "1 changed, 1 added, 1 removed, 0 failed, 0 unchanged release(s)" in text
    assert (
        "charts/random/values.yaml → 3 release(s) in 3 cluster(s), 1 changed, 1 added, 1 removed\n"
        in text
    )
    report: dict[str, Any] = json.loads(diff(fleet, capsys, "json"))
    (chart,) = [i for i in report["summary"]["blastRadius"] if i["file"].startswith("charts/")]
    assert chart == {
        "file": "charts/random/values.yaml",
        "changed": 1,
        "added": 1,
        "removed": 1,
        "failed": 0,
    }


def test_an_added_cluster_differs_from_its_sibling_without_its_random_fields(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/prod/prd-c/apps/.keep", "")
    fleet.write("deployments/prod/prd-c/cluster.values.yaml", "replicas: 1\nuser: root\n")
    text = diff(fleet, capsys, "text")
    assert "most resembles prod/prd-" in text
    assert "field(s) regenerated on every render left out" in text
    differences = text.split("differences:", 1)[1].split("regenerated on every render left", 1)[0]
    assert "checksum" not in differences and "data.password" not in differences
    assert "token" not in differences and "tls." not in differences
    # Another user in the generated connection string is a real difference: named, not shown.
    assert (
        "~ Secret app-auth\n"
        "          stringData.connection: regenerated on every render, and lines both renders "
        "share differ too\n"
    ) in differences
    assert "password=" not in text and "root" not in text  # the secret stays redacted
    markdown = diff(fleet, capsys, "markdown")
    assert "field(s) regenerated on every render left out" in markdown
    resembles = markdown.split("Most resembles `prod/prd-", 1)[1].split("<sub>", 1)[0]
    assert "checksum" not in resembles and "data.password" not in resembles
    assert "stringData.connection: regenerated on every render" in resembles
    report: dict[str, Any] = json.loads(diff(fleet, capsys, "json"))
    (added,) = [r for r in report["releases"] if r["status"] == "added"]
    found = added["resembles"]
    assert not any("checksum" in line or "password" in line for line in found["differences"])
    assert found["regenerated"] >= 5
    # Only changed releases' regenerated fields are listed at the top; nothing changed here.
    assert report["regenerated"] == []


def test_an_added_cluster_still_shows_its_real_differences_from_its_sibling(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/prod/prd-c/apps/.keep", "")
    fleet.write("deployments/prod/prd-c/cluster.values.yaml", "replicas: 7\n")
    report: dict[str, Any] = json.loads(diff(fleet, capsys, "json"))
    (added,) = [r for r in report["releases"] if r["status"] == "added"]
    differences = added["resembles"]["differences"]
    assert "    spec.replicas: 2 → 7" in differences or "    spec.replicas: 1 → 7" in differences
    assert not any("checksum" in line for line in differences)


def test_two_render_outputs_say_regenerated_fields_cannot_be_told_apart(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    outputs = [tmp_path / "before", tmp_path / "after"]
    for out, replicas in zip(outputs, (2, 3), strict=True):
        # Another input renders anew (the render cache would repeat the same random values).
        fleet.write("deployments/prod/prd-b/cluster.values.yaml", f"replicas: {replicas}\n")
        with pytest.raises(SystemExit) as done:
            main(["render", str(fleet.root), "--out", str(out)])
        assert done.value.code == ExitStatus.OK, capsys.readouterr().err
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        main(["diff", *map(str, outputs), "--format", "text"])
    assert done.value.code == ExitStatus.OK
    text = capsys.readouterr().out
    assert "cannot be told apart from real changes" in text
    assert "spec.replicas: 2 → 3" in text
    assert "checksum/auth" in text  # still shown as a change: the warning explains why
    with pytest.raises(SystemExit):
        main(["diff", *map(str, outputs), "--format", "markdown"])
    assert "cannot be told apart from real changes" in capsys.readouterr().out
