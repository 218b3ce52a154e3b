"""BOSH deployment manifests: identified by name, compared path by path, never interpolated."""

from __future__ import annotations

from pathlib import Path

from conftest import Repo
from manifests_repo import BOSH

from reviewer.diff import compare
from reviewer.diff.options import DiffOptions
from reviewer.gotmpl import TemplateRenderer
from reviewer.model import Snapshot
from reviewer.side import SideOptions, plan_side
from reviewer.sources.bosh import BOSH_KIND, DOCUMENT_KIND
from reviewer.sources.manifests import Manifests


def snapshot(root: Path) -> Snapshot:
    options = SideOptions(sources=(Manifests("bosh", ("bosh",)),))
    plan = plan_side(root, options=options, renderer=TemplateRenderer())
    return Snapshot(releases=tuple(plan.objects))


def changes(tmp_path: Path, before: str, after: str) -> list[str]:
    base = Repo(tmp_path / "base").write("bosh/cf.yml", before)
    head = Repo(tmp_path / "head").write("bosh/cf.yml", after)
    diff = compare.diff_snapshots(snapshot(base.root), snapshot(head.root), options=DiffOptions())
    return [
        str(change) for release in diff.releases for r in release.resources for change in r.changes
    ]


def test_a_manifest_is_one_object_named_by_its_deployment_name(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo").write("bosh/cf.yml", BOSH.format(instances=2))
    (release,) = snapshot(repo.root).releases
    assert str(release.id) == "bosh/./cf.yml"
    (resource,) = release.resources
    assert (resource.key.kind, resource.key.name, resource.api_version) == (BOSH_KIND, "cf", "")


def test_instances_change_reads_as_the_ops_file_path(tmp_path: Path) -> None:
    found = changes(tmp_path, BOSH.format(instances=2), BOSH.format(instances=3))
    assert found == ["instance_groups[name=web].instances: 2 → 3"]


def test_stemcells_are_keyed_by_alias_jobs_and_networks_by_name(tmp_path: Path) -> None:
    before = BOSH.format(instances=2)
    after = before.replace(
        "- {alias: default, os: ubuntu-jammy, version: latest}",
        "- {alias: default, os: ubuntu-noble, version: latest}",
    ).replace("release: capi", "release: capi-ng")
    assert changes(tmp_path, before, after) == [
        'instance_groups[name=web].jobs[name=nginx].release: "capi" → "capi-ng"',
        'stemcells[alias=default].os: "ubuntu-jammy" → "ubuntu-noble"',
    ]


def test_variables_are_shown_as_written_never_resolved(tmp_path: Path) -> None:
    before = BOSH.format(instances=2)
    after = before.replace("((admin_password))", "((web_admin_password))")
    assert changes(tmp_path, before, after) == [
        "instance_groups[name=web].jobs[name=nginx].properties.admin_password: "
        '"((admin_password))" → "((web_admin_password))"'
    ]


def test_an_added_instance_group_is_named(tmp_path: Path) -> None:
    before = BOSH.format(instances=2)
    after = before + "  - {name: router, instances: 2, azs: [z1], jobs: []}\n"
    after = after.replace("variables:\n  - {name: admin_password, type: password}\n", "")
    after += "variables:\n  - {name: admin_password, type: password}\n"
    found = changes(tmp_path, before, after)
    assert found[0].startswith("instance_groups[name=router]: added")


def test_other_yaml_documents_are_compared_by_position(tmp_path: Path) -> None:
    found = changes(tmp_path, "a: 1\n---\nb: [p, q]\n", "a: 1\n---\nb: [p, r]\n")
    assert found == ['b[1]: "q" → "r"']
    repo = Repo(tmp_path / "other").write("bosh/cf.yml", "a: 1\n---\nb: 2\n")
    (release,) = snapshot(repo.root).releases
    assert [(r.key.kind, r.key.name) for r in release.resources] == [
        (DOCUMENT_KIND, "document-1"),
        (DOCUMENT_KIND, "document-2"),
    ]
