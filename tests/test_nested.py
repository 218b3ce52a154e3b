"""Nested releases: a bootstrap chart whose output deploys further HelmReleases.

Charts are served by the loopback HTTP repository or live in the repository; every
level is rendered by the real Helm engine.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from chartrepo import ChartRepository, package, write_chart
from registry import Registry

from reviewer import yamlio
from reviewer.charts.credentials import Credentials
from reviewer.charts.fetcher import ChartFetcher
from reviewer.charts.policy import NetworkPolicy
from reviewer.engine import EmbeddedEngine, RenderRequest
from reviewer.errors import RenderError
from reviewer.sources import nested
from reviewer.templates import ChartRef

SEP = nested.SEPARATOR

HELM_REPOSITORY = """\
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: inner-charts
spec:
  url: {{ .Values.url }}
"""

BOOTSTRAP = """\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: middle
spec:
  chart:
    spec:
      chart: middle
      version: 1.0.0
      sourceRef: {kind: HelmRepository, name: inner-charts}
  values:
    greeting: {{ .Values.greeting }}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: unresolved
spec:
  chart:
    spec:
      chart: other
      sourceRef: {kind: HelmRepository, name: nowhere}
"""

MIDDLE = """\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: leaf
  namespace: leaves
spec:
  chart:
    spec:
      chart: ./charts/leaf
      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
  values:
    greeting: {{ .Values.greeting }}
"""

LEAF = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-greeting
data:
  greeting: {{ .Values.greeting }}
"""

LOOP = """\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: {{ .Release.Name }}-again
spec:
  chart:
    spec:
      chart: loop
      sourceRef: {kind: HelmRepository, name: inner-charts}
  values:
    url: {{ .Values.url }}
"""

OCI_BOOTSTRAP = """\
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: middle
spec:
  url: {{ .Values.oci }}/charts/middle
  ref: {tag: 1.0.0}
  layerSelector: {mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: middle
spec:
  chartRef: {kind: OCIRepository, name: middle}
  values:
    greeting: {{ .Values.greeting }}
"""

GIT_REPOSITORY = {
    "apiVersion": "source.toolkit.fluxcd.io/v1",
    "kind": "GitRepository",
    "metadata": {"name": "flux-system", "namespace": "flux-system"},
}


@pytest.fixture(scope="module")
def charts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChartRepository]:
    work = tmp_path_factory.mktemp("nested")
    with ChartRepository(work / "repo") as server:
        for name, templates in (
            ("bootstrap", {"templates/repo.yaml": HELM_REPOSITORY, "templates/hr.yaml": BOOTSTRAP}),
            ("middle", {"templates/repo.yaml": HELM_REPOSITORY, "templates/hr.yaml": MIDDLE}),
            ("loop", {"templates/repo.yaml": HELM_REPOSITORY, "templates/hr.yaml": LOOP}),
        ):
            server.publish(write_chart(work / "src", name, "1.0.0", templates))
        yield server


def repository_lookup(kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
    wanted = (kind, namespace, name)
    found = (GIT_REPOSITORY["kind"], "flux-system", "flux-system")
    return GIT_REPOSITORY if wanted == found else None


class Renderer:
    """Renders an inner HelmRelease with the real engine; a stand-in for the flux kind's planner."""

    def __init__(self, root: Path, cache: Path) -> None:
        self.root = root
        self.engine = EmbeddedEngine()
        self.fetcher = ChartFetcher(
            cache_dir=cache,
            credentials=Credentials({}, []),
            policy=NetworkPolicy(allow_loopback=True),
        )
        self.rendered: list[str] = []

    def chart(self, release: Mapping[str, Any], output: Sequence[Mapping[str, Any]]) -> Path:
        if "chartRef" in release["spec"]:
            name = release["spec"]["chartRef"]["name"]
            source = next(d for d in output if d["metadata"]["name"] == name)
            url = source["spec"]["url"]
            ref = ChartRef(ref=url, repository=url)
            return self.fetcher.fetch(ref, source["spec"]["ref"]["tag"], root=self.root)
        spec = release["spec"]["chart"]["spec"]
        reference = spec["sourceRef"]
        if reference["kind"] == "GitRepository":
            local = spec["chart"].removeprefix("./")
            return self.fetcher.fetch(ChartRef(ref=local, local=local), None, root=self.root)
        source = next(d for d in output if d["metadata"]["name"] == reference["name"])
        ref = ChartRef(ref=f"{reference['name']}/{spec['chart']}", repository=source["spec"]["url"])
        return self.fetcher.fetch(ref, spec.get("version"), root=self.root)

    def __call__(
        self,
        chain: tuple[str, ...],
        release: Mapping[str, Any],
        output: Sequence[Mapping[str, Any]],
    ) -> list[dict[str, Any]]:
        name = release["metadata"]["name"]
        self.rendered.append(name)
        return render(
            self.engine,
            self.chart(release, output),
            release["spec"].get("values") or {},
            name,
            release["metadata"].get("namespace", "apps"),
        )


def render(
    engine: EmbeddedEngine, chart: Path, values: dict[str, Any], name: str, namespace: str
) -> list[dict[str, Any]]:
    request = RenderRequest(chart=chart, values=values, release=name, namespace=namespace)
    texts = engine.render(request)
    return [
        document
        for source, text in sorted(texts.items())
        for document in yamlio.load_manifests(text, source=source)
    ]


def test_bootstrap_chart_is_expanded_two_levels(charts: ChartRepository, tmp_path: Path) -> None:
    write_chart(tmp_path / "repo/charts", "leaf", "1.0.0", {"templates/cm.yaml": LEAF})
    renderer = Renderer(tmp_path / "repo", tmp_path / "cache")
    chart = renderer.fetcher.fetch(
        ChartRef(ref="charts/bootstrap", repository=charts.url), "1.0.0", root=tmp_path / "repo"
    )
    values = {"url": charts.url, "greeting": "hello"}
    output = render(renderer.engine, chart, values, "bootstrap", "apps")

    inner = nested.expand(
        "apps/bootstrap", output, renderer, namespace="apps", repository=repository_lookup
    )

    # `unresolved` names no source anywhere: it stays a plain object of the bootstrap release.
    assert [release.name for release in inner] == ["apps/middle"]
    (middle,) = inner
    (leaf,) = middle.children
    assert leaf.chain == ("apps/bootstrap", "apps/middle", "leaves/leaf")
    assert leaf.objects == (
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "leaf-greeting"},
            "data": {"greeting": "hello"},
        },
    )
    assert leaf.children == ()
    assert renderer.rendered == ["middle", "leaf"]


def test_expansion_beyond_the_depth_limit_names_the_chain(
    charts: ChartRepository, tmp_path: Path
) -> None:
    renderer = Renderer(tmp_path, tmp_path / "cache")
    chart = renderer.fetcher.fetch(
        ChartRef(ref="charts/loop", repository=charts.url), "1.0.0", root=tmp_path
    )
    output = render(renderer.engine, chart, {"url": charts.url}, "loop", "apps")
    inner = nested.expand(
        "apps/loop",
        output,
        renderer,
        namespace="apps",
        repository=repository_lookup,
        depth_limit=2,
    )
    deepest = nested.flatten(inner)[-1]
    assert deepest.objects == ()
    assert deepest.error is not None
    assert (
        f"deeper than 2 levels: apps/loop{SEP}apps/loop-again{SEP}apps/loop-again-again"
        f"{SEP}apps/loop-again-again-again"
    ) in deepest.error
    assert [release.error is None for release in nested.flatten(inner)] == [True, True, False]
    assert renderer.rendered == ["loop-again", "loop-again-again"]


def test_a_failing_inner_release_keeps_its_siblings(tmp_path: Path) -> None:
    output = [
        {
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "HelmRepository",
            "metadata": {"name": "charts"},
            "spec": {"url": "http://127.0.0.1:9"},
        },
        *(
            {
                "apiVersion": "helm.toolkit.fluxcd.io/v2",
                "kind": "HelmRelease",
                "metadata": {"name": name},
                "spec": {
                    "chart": {
                        "spec": {
                            "chart": name,
                            "sourceRef": {"kind": "HelmRepository", "name": "charts"},
                        }
                    }
                },
            }
            for name in ("broken", "fine")
        ),
    ]

    def render_inner(
        chain: tuple[str, ...], release: Mapping[str, Any], found: Sequence[Mapping[str, Any]]
    ) -> list[dict[str, Any]]:
        if release["metadata"]["name"] == "broken":
            raise RenderError("chart broken: not found")
        return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ok"}}]

    inner = nested.expand(
        "apps/boot", output, render_inner, namespace="apps", repository=repository_lookup
    )
    assert [(release.chain, release.error) for release in inner] == [
        (("apps/boot", "apps/broken"), "chart broken: not found"),
        (("apps/boot", "apps/fine"), None),
    ]
    assert inner[1].objects[0]["metadata"] == {"name": "ok"}


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    work = tmp_path_factory.mktemp("nested-oci")
    with Registry(work / "registry") as server:
        middle = {"templates/repo.yaml": HELM_REPOSITORY, "templates/hr.yaml": MIDDLE}
        server.push(package(write_chart(work / "src", "middle", "1.0.0", middle), work / "pkg"))
        yield server


def test_chart_ref_to_an_oci_repository_in_the_same_output(
    charts: ChartRepository, registry: Registry, tmp_path: Path
) -> None:
    write_chart(tmp_path / "repo/charts", "leaf", "1.0.0", {"templates/cm.yaml": LEAF})
    bootstrap = write_chart(
        tmp_path / "src", "oci-bootstrap", "1.0.0", {"templates/all.yaml": OCI_BOOTSTRAP}
    )
    renderer = Renderer(tmp_path / "repo", tmp_path / "cache")
    values = {"oci": registry.url, "url": charts.url, "greeting": "hi"}
    output = render(renderer.engine, bootstrap, values, "bootstrap", "apps")

    inner = nested.expand(
        "apps/bootstrap", output, renderer, namespace="apps", repository=repository_lookup
    )

    (middle,) = inner
    (leaf,) = middle.children
    assert leaf.chain == ("apps/bootstrap", "apps/middle", "leaves/leaf")
    assert leaf.objects[0]["data"] == {"greeting": "hi"}
