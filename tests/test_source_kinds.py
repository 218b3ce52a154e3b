"""`.reviewer.yaml` sources and their detection; several kinds in one repository."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Repo, release
from manifests_repo import DEPLOYMENT

from reviewer import config
from reviewer.discover import Layout
from reviewer.errors import ConfigError, RepositoryError
from reviewer.side import SideOptions
from reviewer.sources import registry
from reviewer.sources.generated import Generated
from reviewer.sources.hierarchy import Hierarchy
from reviewer.sources.manifests import Manifests

APP = "apps: [{template: app}]\n"


def settings(repo: Repo, text: str) -> config.RepoConfig:
    repo.write(".reviewer.yaml", text)
    return config.load(repo.root)


def test_sources_are_decoded_with_their_kind_paths_and_options(repo: Repo) -> None:
    found = settings(
        repo,
        """\
        sources:
          - {name: fleet, kind: hierarchy, paths: [clusters], templates: apps}
          - {kind: manifests, paths: [infra/base, infra/extra]}
          - name: compositions
            kind: generated
            paths: [bundles]
            command: [convert, --out, /out]
            output: rendered
            timeoutSeconds: 30
        """,
    ).sources
    assert found == (
        Hierarchy("fleet", Layout(definitions="clusters", templates="apps")),
        Manifests("base", ("infra/base", "infra/extra")),
        Generated(
            "compositions",
            "bundles",
            ("convert", "--out", "/out"),
            output="rendered",
            timeout_seconds=30,
        ),
    )


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ("sources: []", "sources", "must list at least one source"),
        (
            "sources: [{kind: flux2}]",
            "sources[0].kind",
            "must be one of: flux, generated, hierarchy",
        ),
        ("sources: [{paths: [a]}]", "sources[0].kind", "is required"),
        (
            "sources: [{kind: manifests, paths: [../up]}]",
            "sources[0].paths[0]",
            "relative directory inside the repository",
        ),
        (
            "sources: [{kind: manifests, paths: [a], command: [x]}]",
            "sources[0].command",
            "unknown field; allowed: name, kind, paths",
        ),
        (
            "sources: [{kind: manifests, paths: [a]}, {kind: manifests, paths: [b/a]}]",
            "sources[1].name",
            "source name 'a' is used twice",
        ),
        ("sources: [{kind: generated}]", "sources[0].command", "is required"),
        ("sources: [{kind: generated, command: []}]", "sources[0].command", "non-empty list"),
        (
            "sources: [{kind: hierarchy, paths: [a, b]}]",
            "sources[0].paths",
            "exactly one path",
        ),
        ("sources: [{kind: manifests, name: a/b, paths: [x]}]", "sources[0].name", "without '/'"),
    ],
)
def test_a_bad_source_names_file_and_field(repo: Repo, text: str, field: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        settings(repo, text + "\n")
    assert caught.value.file == ".reviewer.yaml"
    assert caught.value.field == field
    assert message in caught.value.message


def test_detection_prefers_the_hierarchy_as_before(repo: Repo) -> None:
    repo.write("deployments/c/apps/d/deployment.yaml", APP)
    repo.write("extra/deployment.yaml", DEPLOYMENT.format(replicas=1))
    (found,) = registry.detect(repo.root, Layout())
    assert found == Hierarchy(layout=Layout())
    assert registry.describe((found,), detected=True) == (
        "sources (detected): hierarchy 'hierarchy': definitions deployments/, templates templates/"
    )


def test_detection_finds_one_manifests_source_per_top_directory(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.write("web/deployment.yaml", DEPLOYMENT.format(replicas=1))
    repo.write("bosh/cf.yml", "name: cf\ninstance_groups: []\n")
    repo.write("charts/app/Chart.yaml", "apiVersion: v2\nname: app\nversion: 1.0.0\n")
    repo.write("charts/app/templates/x.yaml", "apiVersion: v1\nkind: ConfigMap\n")
    repo.write("docs/mkdocs.yml", "site_name: docs\n")
    repo.write(".github/workflows/ci.yaml", "on: push\n")
    assert registry.detect(repo.root, Layout()) == (
        Manifests("bosh", ("bosh",)),
        Manifests("web", ("web",)),
    )


def test_nothing_detected_falls_back_to_the_hierarchy_and_its_error(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo").write("README.md", "nothing here\n")
    (found,) = registry.detect(repo.root, Layout())
    assert found == Hierarchy(layout=Layout())
    with pytest.raises(RepositoryError, match="definitions root 'deployments/' not found"):
        repo.render()


def test_a_hierarchy_and_plain_manifests_in_one_repository(repo: Repo) -> None:
    repo.write("clusters/c/apps/d/deployment.yaml", APP)
    repo.write("infra/namespace.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n")
    sources = settings(
        repo,
        """\
        sources:
          - {name: fleet, kind: hierarchy, paths: [clusters]}
          - {name: infra, kind: manifests, paths: [infra]}
        """,
    ).sources
    snapshot = repo.render(SideOptions(sources=sources))
    assert [str(r.id) for r in snapshot.releases] == ["c/d/app", "infra/./namespace.yaml"]
    assert release(snapshot, "c", "d", "app").error is None
    (namespace,) = release(snapshot, "infra", ".", "namespace.yaml").resources
    assert str(namespace.key) == "Namespace shop"


def test_a_layout_set_explicitly_is_the_hierarchy_even_when_missing(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo").write("web/deployment.yaml", DEPLOYMENT.format(replicas=1))
    layout = Layout(definitions="clusters")
    assert registry.detect(repo.root, layout) == (Hierarchy(layout=layout),)
