"""Charts made from plain manifests and kustomizations, rendered by the real Helm engine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reviewer import yamlio
from reviewer.chartify import chartify
from reviewer.engine import EmbeddedEngine, RenderRequest
from reviewer.errors import ConfigError

RULE = """\
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: alerts
spec:
  groups:
  - name: a
    rules:
    - alert: Down
      annotations:
        summary: '{{ $labels.instance }} is down'
"""
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n{extra}data:\n  a: b\n"


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture(scope="module")
def engine() -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine()
    yield engine
    engine.close()


def render(engine: EmbeddedEngine, chart: Path) -> dict[tuple[str, str], dict[str, Any]]:
    output = engine.render(RenderRequest(chart, {}, "rel", "ns"))
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for text in output.values():
        for doc in yamlio.load_documents(text, source="out", cache=False):
            found[(doc["kind"], doc["metadata"]["name"])] = doc
    return found


def test_plain_manifests_become_a_chart_rendered_verbatim(
    tmp_path: Path, engine: EmbeddedEngine
) -> None:
    repo = tmp_path / "repo"
    write(
        repo,
        {
            "manifests/rule.yaml": RULE,
            "manifests/sub/cm.yml": CONFIGMAP.format(name="cm", extra=""),
            "manifests/sub/pinned.yaml": CONFIGMAP.format(
                name="pinned", extra="  namespace: other\n"
            ),
            "manifests/README.md": "{{ not a manifest",
        },
    )
    chart = chartify(
        repo / "manifests",
        root=repo,
        work_dir=tmp_path / "work",
        release_name="rel",
        namespace="apps",
    )
    assert yamlio.read_mapping(chart / "Chart.yaml", source="c")["name"] == "manifests"
    built = render(engine, chart)
    assert set(built) == {
        ("PrometheusRule", "alerts"),
        ("ConfigMap", "cm"),
        ("ConfigMap", "pinned"),
    }
    rule = built[("PrometheusRule", "alerts")]
    assert rule["spec"]["groups"][0]["rules"][0]["annotations"]["summary"] == (
        "{{ $labels.instance }} is down"
    )
    assert built[("ConfigMap", "cm")]["metadata"]["namespace"] == "apps"
    assert built[("ConfigMap", "pinned")]["metadata"]["namespace"] == "other"


def test_a_kustomization_is_built_first(tmp_path: Path, engine: EmbeddedEngine) -> None:
    write(
        tmp_path,
        {
            "app/kustomization.yaml": "resources:\n- rule.yaml\n- cm.yaml\nnamePrefix: x-\n",
            "app/rule.yaml": RULE,
            "app/cm.yaml": CONFIGMAP.format(name="cm", extra=""),
        },
    )
    chart = chartify(tmp_path / "app", root=tmp_path, work_dir=tmp_path / "work", release_name="r")
    built = render(engine, chart)
    assert set(built) == {("PrometheusRule", "x-alerts"), ("ConfigMap", "x-cm")}
    rule = built[("PrometheusRule", "x-alerts")]
    assert (
        "{{ $labels.instance }}" in rule["spec"]["groups"][0]["rules"][0]["annotations"]["summary"]
    )


def test_a_locked_down_refusal_reaches_the_caller(tmp_path: Path) -> None:
    write(tmp_path, {"app/kustomization.yaml": "resources:\n- https://example.invalid/x\n"})
    with pytest.raises(ConfigError, match=r"app/kustomization.yaml: resources\[0\]: remote"):
        chartify(tmp_path / "app", root=tmp_path, work_dir=tmp_path / "work", release_name="r")


def test_a_manifest_symlinked_from_outside_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.yaml").write_text(CONFIGMAP.format(name="s", extra=""))
    repo = tmp_path / "repo"
    (repo / "manifests").mkdir(parents=True)
    (repo / "manifests/s.yaml").symlink_to(tmp_path / "secret.yaml")
    with pytest.raises(ConfigError, match="leaves the repository"):
        chartify(repo / "manifests", root=repo, work_dir=tmp_path / "work", release_name="r")


def test_a_chart_is_not_chartified(tmp_path: Path) -> None:
    write(tmp_path, {"chart/Chart.yaml": "apiVersion: v2\nname: c\nversion: 1.0.0\n"})
    with pytest.raises(ConfigError, match="already a Helm chart"):
        chartify(tmp_path / "chart", root=tmp_path, work_dir=tmp_path / "work", release_name="r")
