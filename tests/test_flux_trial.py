"""Regressions found by reviewing a real-world Flux fleet layout (clusters/, apps/base with
overlays patching a HelmRelease, infrastructure/): repositories written here that reproduce
its shapes, the real kustomize and the real CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from chartrepo import ChartRepository
from conftest import GitRepo, git
from flux_repo import (
    app_chart_files,
    chart_spec,
    helm_repository,
    helmrelease,
    objects,
    plan,
    render,
    write_chart_dir,
)
from test_diff_command import run_diff
from test_flux_kustomization_kind import SOURCES, charts, flux_kustomization
from test_secrets import render_out

from reviewer import yamlio
from reviewer.discover import Layout
from reviewer.errors import ExitStatus
from reviewer.sources import registry as source_registry

__all__ = ["charts"]  # the loopback chart repository fixture


def git_repository(name: str) -> str:
    """The GitRepository of the fleet itself (charts kept in the repository)."""
    return yamlio.dump(
        {
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "GitRepository",
            "metadata": {"name": name, "namespace": "apps"},
            "spec": {"url": "https://git.example.invalid/fleet"},
        }
    )


def test_a_kustomization_from_an_external_artifact_is_refused_naming_its_source_ref(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = GitRepo(tmp_path / "fleet")
    repo.write(".reviewer.yaml", SOURCES)
    # `./web` is relative to the artifact an ArtifactGenerator assembles; a directory of
    # that name in the checkout must not be built in its place.
    repo.write(
        "clusters/prod/apps.yaml",
        flux_kustomization(
            "apps", path="./web", sourceRef={"kind": "ExternalArtifact", "name": "apps"}
        ),
    )
    repo.write("web/web.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n")
    code, _ = render_out(repo, tmp_path / "out")
    err = capsys.readouterr().err
    assert code == ExitStatus.RENDER_FAILED
    assert (
        "clusters/prod/apps.yaml: spec.sourceRef.kind: ExternalArtifact flux-system/apps is not "
        "supported: spec.path is relative to that artifact, not to this repository"
    ) in err
    assert "prod/flux-system/apps/kustomization" in err


def test_an_overlay_patch_file_is_not_read_as_a_helmrelease(
    tmp_path: Path, charts: ChartRepository, capsys: pytest.CaptureFixture[str]
) -> None:
    # apps/ is reviewed as files (no Kustomization builds it): its base HelmRelease is a
    # release; the overlay's partial HelmRelease is a kustomize patch, not a second one.
    repo = GitRepo(tmp_path / "fleet")
    repo.write(".reviewer.yaml", "sources:\n  - {name: apps, kind: flux, paths: [apps]}\n")
    repo.write("apps/base/repository.yaml", helm_repository("charts", charts.url))
    repo.write("apps/base/release.yaml", helmrelease("web", chart=chart_spec("app", "charts")))
    repo.write("apps/base/kustomization.yaml", "resources: [repository.yaml, release.yaml]\n")
    repo.write(
        "apps/staging/kustomization.yaml",
        "resources: [../base]\npatches:\n  - path: web-values.yaml\n"
        "    target: {kind: HelmRelease}\npatchesStrategicMerge: [more-values.yaml]\n",
    )
    partial: dict[str, Any] = {
        "chart": {"spec": {"version": ">=1.0.0-alpha"}},
        "values": {"replicas": 3},
    }
    repo.write("apps/staging/web-values.yaml", helmrelease("web", **partial))
    repo.write("apps/staging/more-values.yaml", helmrelease("web", values={"replicas": 4}))
    code, text = render_out(repo, tmp_path / "out", "--allow-loopback-charts")
    err = capsys.readouterr().err
    assert code == ExitStatus.OK, err
    assert "spec.chart" not in err and "also defined" not in err
    assert "kind: Deployment" in text


TEST_HOOK = """\
apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test-{{ randAlphaNum 5 | lower }}
  annotations:
    helm.sh/hook: test-success
spec:
  containers: [{name: curl, image: curl}]
"""


@pytest.mark.parametrize(("test", "shown"), [({}, False), ({"enable": True}, True)])
def test_a_charts_test_hooks_are_rendered_only_when_the_release_runs_its_tests(
    tmp_path: Path, test: dict[str, Any], shown: bool
) -> None:
    repo = GitRepo(tmp_path / "fleet")
    files = {**app_chart_files(), "templates/tests/connection.yaml": TEST_HOOK}
    write_chart_dir(repo.root / "charts" / "app", files)
    repo.write("clusters/git.yaml", git_repository("fleet"))
    spec = chart_spec("./charts/app", "fleet", kind="GitRepository")
    repo.write("clusters/web.yaml", helmrelease("web", chart=spec, test=test))
    rendered = objects(render(repo, plan(repo)))
    assert "Deployment/web" in rendered
    assert any(key.startswith("Pod/web-test-") for key in rendered) is shown


def write_cluster(repo: GitRepo, cluster: str) -> None:
    """clusters/<cluster>/apps.yaml building apps/<cluster>/, as `flux bootstrap` lays it out."""
    repo.write(
        f"clusters/{cluster}/apps.yaml", flux_kustomization("apps", path=f"./apps/{cluster}")
    )
    repo.write(
        f"apps/{cluster}/settings.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n"
        f"data: {{env: {cluster}}}\n",
    )


@pytest.mark.parametrize(("base", "head"), [(2, 3), (3, 2)])
def test_a_cluster_the_change_adds_or_removes_is_reviewed_without_declared_sources(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], base: int, head: int
) -> None:
    clusters = ["production", "staging", "dev"]
    repo = GitRepo(tmp_path / "fleet")
    for cluster in clusters[:base]:
        write_cluster(repo, cluster)
    repo.commit("fleet")
    git(repo.root, "checkout", "--quiet", "-b", "feature")
    for cluster in clusters[head:]:
        git(repo.root, "rm", "-rq", f"clusters/{cluster}", f"apps/{cluster}")
    for cluster in clusters[base:head]:
        write_cluster(repo, cluster)
    code, out, err = run_diff(["--repo", str(repo.root), "--base", "main"], capsys)
    assert code == ExitStatus.OK, err
    assert "flux 'dev': clusters/dev/" in err
    change = "added" if head > base else "removed"
    assert f"dev/flux-system/apps/kustomization [{change}]" in out
    assert "production/flux-system/apps/kustomization [" not in out  # unchanged


def test_a_substitute_from_file_is_in_the_blast_radius_of_what_it_substitutes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = GitRepo(tmp_path / "fleet")
    repo.write(".reviewer.yaml", SOURCES)
    post_build = {"substituteFrom": [{"kind": "ConfigMap", "name": "cluster-vars"}]}
    repo.write(
        "clusters/prod/apps.yaml",
        flux_kustomization("apps", path="./apps", postBuild=post_build),
    )
    variables = (
        "apiVersion: v1\nkind: ConfigMap\n"
        "metadata: {{name: cluster-vars, namespace: flux-system}}\ndata: {{domain: {}}}\n"
    )
    repo.write("clusters/prod/vars.yaml", variables.format("example.com"))
    repo.write(
        "apps/settings.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\ndata: {host: 'web.${domain}'}\n",
    )
    repo.commit("fleet")
    repo.write("clusters/prod/vars.yaml", variables.format("example.org"))
    code, out, err = run_diff(["--repo", str(repo.root), "--base", "HEAD"], capsys)
    assert code == ExitStatus.OK, err
    assert 'data.host: "web.example.com" → "web.example.org"' in out
    assert "clusters/prod/vars.yaml → 1 release(s) in 1 cluster(s), 1 changed" in out


def artifact_generator(*copies: tuple[str, str]) -> str:
    """An ArtifactGenerator of artifact `apps` from the fleet's GitRepository (Flux 2.7)."""
    return yamlio.dump(
        {
            "apiVersion": "source.extensions.fluxcd.io/v1beta1",
            "kind": "ArtifactGenerator",
            "metadata": {"name": "flux-system", "namespace": "flux-system"},
            "spec": {
                "sources": [{"alias": "fleet", "kind": "GitRepository", "name": "flux-system"}],
                "artifacts": [
                    {
                        "name": "apps",
                        "originRevision": "@fleet",
                        "copy": [{"from": origin, "to": to} for origin, to in copies],
                    }
                ],
            },
        }
    )


def write_artifact_fleet(repo: GitRepo, *copies: tuple[str, str]) -> None:
    """clusters/staging builds `./staging` of the artifact `apps`; apps/staging overlays
    apps/base, as the Flux 2.7 layout does."""
    source = {"kind": "ExternalArtifact", "name": "apps"}
    repo.write(
        "clusters/staging/apps.yaml",
        flux_kustomization("apps", path="./staging", sourceRef=source),
    )
    repo.write("clusters/production/apps.yaml", flux_kustomization("apps", path="./apps"))
    repo.write("clusters/staging/artifacts.yaml", artifact_generator(*copies))
    repo.write("apps/base/kustomization.yaml", "resources: [settings.yaml]\n")
    repo.write(
        "apps/base/settings.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {env: base}\n",
    )
    repo.write(
        "apps/staging/kustomization.yaml",
        "resources: [../base]\nnamespace: staging\n",
    )


def test_a_kustomization_from_an_artifact_generator_copy_of_this_repository_is_built(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = GitRepo(tmp_path / "fleet")
    write_artifact_fleet(
        repo,
        ("@fleet/apps/base/**", "@artifact/base/"),
        ("@fleet/apps/staging/**", "@artifact/staging/"),
    )
    # apps/ is built through the artifact: no source of its own.
    assert source_registry.describe(source_registry.detect(repo.root, Layout()), detected=True) == (
        "sources (detected): flux 'production': clusters/production/; "
        "flux 'staging': clusters/staging/"
    )
    code, text = render_out(repo, tmp_path / "out", "--cluster", "staging")
    err = capsys.readouterr().err
    assert code == ExitStatus.OK, err
    assert "namespace: staging" in text and "env: base" in text


@pytest.mark.parametrize(
    ("copy", "field"),
    [
        (("@fleet/apps/base/**", "@artifact/lib/"), "spec.artifacts[0].copy[0]"),
        (("@fleet/apps/*.yaml", "@artifact/"), "spec.artifacts[0].copy[0].from"),
        (("@other/apps/**", "@artifact/"), "spec.artifacts[0].copy[0].from"),
    ],
)
def test_an_artifact_copy_that_changes_the_layout_is_an_error_naming_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], copy: tuple[str, str], field: str
) -> None:
    repo = GitRepo(tmp_path / "fleet")
    write_artifact_fleet(repo, copy)
    code, _ = render_out(repo, tmp_path / "out", "--cluster", "staging")
    err = capsys.readouterr().err
    assert code == ExitStatus.RENDER_FAILED
    assert f"clusters/staging/artifacts.yaml: {field}: " in err


def test_a_kustomization_of_a_pushed_oci_artifact_is_refused_not_built_from_the_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = GitRepo(tmp_path / "fleet")
    repo.write(".reviewer.yaml", SOURCES)
    source = {"kind": "OCIRepository", "name": "policies"}
    repo.write("clusters/prod/policies.yaml", flux_kustomization("policies", sourceRef=source))
    repo.write(".github/workflows/ci.yaml", "on: push\njobs: {}\n")  # not a Kubernetes object
    code, _ = render_out(repo, tmp_path / "out")
    err = capsys.readouterr().err
    assert code == ExitStatus.RENDER_FAILED
    assert (
        "clusters/prod/policies.yaml: spec.sourceRef.kind: OCIRepository flux-system/policies "
        "is not supported: spec.path is relative to that artifact, not to this repository"
    ) in err
    assert "ci.yaml" not in err


def test_a_missing_path_of_another_git_repository_names_that_repository(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = GitRepo(tmp_path / "fleet")
    repo.write(".reviewer.yaml", SOURCES)
    source = {"kind": "GitRepository", "name": "dev-team", "namespace": "apps"}
    repo.write(
        "clusters/prod/tenant.yaml",
        flux_kustomization("dev-team", path="./staging", sourceRef=source),
    )
    code, _ = render_out(repo, tmp_path / "out")
    err = capsys.readouterr().err
    assert code == ExitStatus.RENDER_FAILED
    assert (
        "clusters/prod/tenant.yaml: spec.path: names no directory in the repository "
        "(read from GitRepository apps/dev-team)"
    ) in err
