"""`.Capabilities`: kubeVersion and apiVersions from releases, templates and clusters."""

from __future__ import annotations

import pytest
from conftest import Repo, release

from reviewer.gotmpl import TemplateRenderer
from reviewer.model import Snapshot
from reviewer.side import SideOptions, render_side
from reviewer.tooling import Tooling, open_tooling

# A chart guarded by capabilities, as charts ship ServiceMonitors and version-gated objects.
CAPS_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: caps\nversion: 1.0.0\n",
    "templates/caps.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: caps\ndata:\n"
        "  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n"
        "  minor: {{ .Capabilities.KubeVersion.Minor | quote }}\n"
    ),
    "templates/monitor.yaml": (
        '{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" }}\n'
        "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\n"
        "metadata:\n  name: web\nspec:\n  endpoints: [{port: http}]\n"
        "{{- end }}\n"
    ),
}


@pytest.fixture
def caps(repo: Repo) -> Repo:
    repo.add_chart("charts/caps", CAPS_CHART)
    repo.write("deployments/c/apps/a/deployment.yaml", "apps: [{template: app}]\n")
    return repo


def template(repo: Repo, fields: str = "", top: str = "") -> None:
    repo.write(
        "templates/app/helmfile.yaml.gotmpl",
        f"{top}releases:\n  - name: app\n    chart: ../../charts/caps\n{fields}",
    )


def render_with(repo: Repo, engine: str) -> Snapshot:
    tooling = Tooling(cache_dir=repo.root.parent / "chart-cache", helm_engine=engine)
    with open_tooling(tooling) as tools:
        side = render_side(
            repo.root, options=SideOptions(), tools=tools, renderer=TemplateRenderer()
        )
    return side.snapshot


def observed(snapshot: Snapshot, cluster: str = "c") -> tuple[str, bool]:
    """(Kubernetes version, whether the ServiceMonitor was rendered) of the one release."""
    rendered = release(snapshot, cluster, "a", "app")
    assert rendered.error is None, rendered.error
    kinds = {r.key.kind: r for r in rendered.resources}
    return kinds["ConfigMap"].body["data"]["kube"], "ServiceMonitor" in kinds


@pytest.mark.parametrize("engine", ["embedded", "binary"])
def test_without_declarations_the_default_capabilities(caps: Repo, engine: str) -> None:
    template(caps)
    assert observed(render_with(caps, engine)) == ("v1.36.0", False)


@pytest.mark.parametrize("engine", ["embedded", "binary"])
def test_release_api_versions_and_kube_version_reach_helm(caps: Repo, engine: str) -> None:
    template(caps, "    kubeVersion: v1.29.3\n    apiVersions: [monitoring.coreos.com/v1]\n")
    assert observed(render_with(caps, engine)) == ("v1.29.3", True)


def test_template_top_level_fields_are_defaults_for_its_releases(caps: Repo) -> None:
    template(caps, top="kubeVersion: '1.30'\napiVersions: [monitoring.coreos.com/v1]\n")
    assert observed(caps.render()) == ("v1.30.0", True)
    assert observed(render_with(caps, "binary")) == ("v1.30.0", True)
    # A release's own list replaces the template's, as in helmfile.
    template(
        caps,
        "    apiVersions: [example.com/v1]\n",
        top="apiVersions: [monitoring.coreos.com/v1]\n",
    )
    assert observed(caps.render()) == ("v1.36.0", False)


def test_cluster_capabilities_apply_to_every_release_of_that_cluster(caps: Repo) -> None:
    template(caps)
    caps.write("deployments/c/cluster.values.yaml", "{}\n")
    caps.write(
        "deployments/c/cluster.capabilities.yaml",
        "kubeVersion: v1.31.2\napiVersions: [monitoring.coreos.com/v1]\n",
    )
    caps.write("deployments/d/apps/a/deployment.yaml", "apps: [{template: app}]\n")
    snapshot = caps.render()
    assert observed(snapshot, "c") == ("v1.31.2", True)
    assert observed(snapshot, "d") == ("v1.36.0", False)


def test_release_fields_win_over_the_cluster_file(caps: Repo) -> None:
    template(caps, "    kubeVersion: v1.28.0\n")
    caps.write(
        "deployments/c/cluster.capabilities.yaml",
        "kubeVersion: v1.31.2\napiVersions: [monitoring.coreos.com/v1]\n",
    )
    assert observed(caps.render()) == ("v1.28.0", True)


def test_changing_cluster_capabilities_is_a_new_render(caps: Repo) -> None:
    # The render input digest covers capabilities: nothing is reused from the old render.
    template(caps)
    before = caps.render()
    caps.write("deployments/c/cluster.capabilities.yaml", "kubeVersion: v1.30.1\n")
    after = caps.render()
    assert observed(before) == ("v1.36.0", False)
    assert observed(after) == ("v1.30.1", False)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("kubeVersion: latest\n", "kubeVersion: must be a Kubernetes version"),
        ("apiVersions: monitoring.coreos.com/v1\n", "apiVersions: must be a list"),
        ("apiVersions: ['not a version']\n", "apiVersions[0]: must be an API version"),
        ("kubeVersions: v1.30.0\n", "kubeVersions"),
    ],
)
def test_bad_cluster_file_fails_that_clusters_releases_naming_file_and_field(
    caps: Repo, text: str, field: str
) -> None:
    template(caps)
    caps.write("deployments/c/cluster.capabilities.yaml", text)
    caps.write("deployments/d/apps/a/deployment.yaml", "apps: [{template: app}]\n")
    snapshot = caps.render()
    failed = release(snapshot, "c", "a", "app").error or ""
    assert "deployments/c/cluster.capabilities.yaml" in failed
    assert field in failed
    assert release(snapshot, "d", "a", "app").error is None


def test_the_reproduce_command_carries_the_capabilities(caps: Repo) -> None:
    template(caps, "    apiVersions: [monitoring.coreos.com/v1]\n")
    caps.write("deployments/c/cluster.capabilities.yaml", "kubeVersion: v1.31.2\n")
    command = release(caps.render(), "c", "a", "app").helm_command or ""
    assert "--kube-version v1.31.2 --api-versions monitoring.coreos.com/v1" in command
