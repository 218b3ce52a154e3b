"""Small Flux repositories for tests: a chart with a Deployment, a values dump and a CRD,
HelmRelease documents, and rendering them through the real render stage."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from conftest import Repo

from reviewer import yamlio
from reviewer.helmreleases.planner import FluxInputs, plan_helmreleases
from reviewer.model import Resource, Snapshot
from reviewer.plan import Plan
from reviewer.render import render_plan
from reviewer.sops import SopsDecoder
from reviewer.tooling import Tooling, open_tooling
from reviewer.values import NoSecrets, SecretsLoader

APP_CHART = {
    "values.yaml": "image: nginx:1.0\nreplicas: 1\nchartDefault: from-chart\n",
    "values-prod.yaml": "replicas: 4\nprod: true\n",
    "templates/deployment.yaml": """\
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: {{ .Release.Name }}
          namespace: {{ .Release.Namespace }}
          labels:
            app: {{ .Release.Name }}
        spec:
          replicas: {{ .Values.replicas }}
          template:
            spec:
              containers:
                - name: app
                  image: {{ .Values.image }}
        """,
    "templates/values.yaml": """\
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: {{ .Release.Name }}-values
          namespace: {{ .Release.Namespace }}
        data:
          values: |
        {{ toYaml .Values | indent 4 }}
        """,
    "crds/widgets.yaml": """\
        apiVersion: apiextensions.k8s.io/v1
        kind: CustomResourceDefinition
        metadata:
          name: widgets.example.com
        spec:
          group: example.com
          names: {kind: Widget, plural: widgets}
          scope: Namespaced
          versions: [{name: v1, served: true, storage: true}]
        """,
}


def app_chart_files(name: str = "app", version: str = "1.0.0") -> dict[str, str]:
    """The app chart's files (Chart.yaml included)."""
    return {"Chart.yaml": f"apiVersion: v2\nname: {name}\nversion: {version}\n", **APP_CHART}


def helmrelease(name: str, namespace: str = "apps", **spec: Any) -> str:
    """A HelmRelease document."""
    document = {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    return yamlio.dump(document)


def helm_repository(name: str, url: str, namespace: str = "apps", oci: bool = False) -> str:
    """A HelmRepository document."""
    spec: dict[str, Any] = {"url": url, "interval": "10m"}
    if oci:
        spec["type"] = "oci"
    return yamlio.dump(
        {
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "HelmRepository",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        }
    )


def config_map(name: str, data: dict[str, str], namespace: str = "apps") -> str:
    """A ConfigMap document."""
    return yamlio.dump(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace},
            "data": data,
        }
    )


def chart_spec(chart: str, source: str, kind: str = "HelmRepository", **extra: Any) -> Any:
    """`spec.chart` of a HelmRelease."""
    return {"spec": {"chart": chart, "sourceRef": {"kind": kind, "name": source}, **extra}}


def plan(
    repo: Repo,
    *,
    paths: tuple[str, ...] = ("clusters",),
    secrets: SecretsLoader | None = None,
    decoder: SopsDecoder | None = None,
    twin: bool = False,
) -> Plan:
    """Plan the HelmReleases below `paths` as source `flux`."""
    return plan_helmreleases(
        FluxInputs(
            root=repo.root,
            source="flux",
            paths=paths,
            secrets=secrets or NoSecrets(),
            decoder=decoder,
            twin=twin,
        )
    )


def render(repo: Repo, planned: Plan) -> Snapshot:
    """Render a plan with the embedded engine (loopback chart servers allowed)."""
    tooling = Tooling(cache_dir=repo.root.parent / "chart-cache", allow_loopback=True)
    with open_tooling(tooling) as tools:
        return render_plan(planned, root=repo.root, fetcher=tools.fetcher, pool=tools.pool)


def objects(snapshot: Snapshot) -> dict[str, Resource]:
    """Every rendered object by `Kind/name`; fails on a failed release."""
    errors = [r.error for r in snapshot.releases if r.error]
    assert errors == [], errors
    return {
        f"{resource.key.kind}/{resource.key.name}": resource
        for release in snapshot.releases
        for resource in release.resources
    }


def dumped_values(resource: Resource) -> Any:
    """The `.Values` the app chart's values ConfigMap shows."""
    return yamlio.load_mapping(resource.body["data"]["values"], source="rendered")


def dedent(text: str) -> str:
    """Dedented text."""
    return textwrap.dedent(text)


def write_chart_dir(directory: Path, files: dict[str, str]) -> Path:
    """Write chart files into `directory`."""
    for name, text in files.items():
        target = directory / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text), encoding="utf-8")
    return directory
