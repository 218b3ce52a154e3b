"""The big-chart shape: one release whose chart renders several MB in many objects.

Shaped like a monitoring stack (kube-prometheus-stack): large CustomResourceDefinitions
shipped in `crds/`, dozens of dashboard ConfigMaps holding big JSON documents, rule
objects, and the usual RBAC, Services and Deployments. The chart itself is small: the
objects come from `range` loops over generated files and values.

`measure_stages` renders it in this process and times each stage on its own, so the
cost of splitting, normalising, redacting and writing objects is seen beside Helm's:

    .venv/bin/python benchmarks/bigchart.py --repeat 3
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHART = "monitoring-stack"

_CHART_YAML = f"apiVersion: v2\nname: {CHART}\nversion: 45.0.0\nappVersion: v0.70.0\n"

_DASHBOARDS = """{{- range $name, $file := .Values.dashboards }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $.Release.Name }}-dashboard-{{ $name }}
  namespace: {{ $.Release.Namespace }}
  labels:
    grafana_dashboard: "1"
    release: {{ $.Release.Name }}
data:
  {{ $name }}.json: |-
{{ $.Files.Get $file | indent 4 }}
{{- end }}
"""

_RULES = """{{- range $group := until (int .Values.ruleGroups) }}
---
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: {{ $.Release.Name }}-rules-{{ $group }}
  namespace: {{ $.Release.Namespace }}
spec:
  groups:
    - name: group-{{ $group }}
      rules:
      {{- range $rule := until 25 }}
        - alert: Alert{{ $group }}x{{ $rule }}
          expr: sum(rate(http_requests_total{job="svc-{{ $group }}",code=~"5.."}[5m])) > {{ $rule }}
          for: {{ $.Values.alertFor }}
          labels:
            severity: {{ if eq (mod $rule 3) 0 }}critical{{ else }}warning{{ end }}
          annotations:
            summary: "Service {{ $group }} rule {{ $rule }} is firing"
            runbook_url: https://runbooks.example.com/alerts/{{ $group }}/{{ $rule }}
      {{- end }}
{{- end }}
"""

_WORKLOADS = """{{- range $component := .Values.components }}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ $.Release.Name }}-{{ $component }}
  namespace: {{ $.Release.Namespace }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ $.Release.Name }}-{{ $component }}
rules:
  - apiGroups: ["", "apps", "batch", "monitoring.coreos.com"]
    resources: ["pods", "services", "endpoints", "deployments", "jobs", "servicemonitors"]
    verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ $.Release.Name }}-{{ $component }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ $.Release.Name }}-{{ $component }}
subjects:
  - kind: ServiceAccount
    name: {{ $.Release.Name }}-{{ $component }}
    namespace: {{ $.Release.Namespace }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $.Release.Name }}-{{ $component }}
  namespace: {{ $.Release.Namespace }}
spec:
  selector:
    app.kubernetes.io/name: {{ $component }}
  ports:
    - name: http
      port: 8080
      targetPort: http
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $.Release.Name }}-{{ $component }}
  namespace: {{ $.Release.Namespace }}
spec:
  replicas: {{ $.Values.replicaCount }}
  selector:
    matchLabels:
      app.kubernetes.io/name: {{ $component }}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {{ $component }}
    spec:
      serviceAccountName: {{ $.Release.Name }}-{{ $component }}
      containers:
        - name: {{ $component }}
          image: "quay.io/example/{{ $component }}:{{ $.Chart.AppVersion }}"
          args: ["--log.level={{ $.Values.logLevel }}", "--web.listen-address=:8080"]
          ports:
            - name: http
              containerPort: 8080
          resources:
            requests: {cpu: 100m, memory: 128Mi}
            limits: {memory: 512Mi}
{{- end }}
"""


def _dashboard(rng: random.Random, index: int) -> str:
    """A Grafana-like dashboard: panels with queries, about 40 KB of indented JSON."""
    panels = [
        {
            "id": panel,
            "title": f"Panel {index}.{panel}",
            "type": rng.choice(("timeseries", "stat", "table", "heatmap")),
            "gridPos": {"h": 8, "w": 12, "x": 12 * (panel % 2), "y": 8 * (panel // 2)},
            "targets": [
                {
                    "expr": "sum by (pod) (rate(container_cpu_usage_seconds_total"
                    f'{{namespace="$ns",container="c{target}"}}[5m])) * {rng.randint(1, 100)}',
                    "legendFormat": "{{pod}}",
                    "refId": chr(65 + target),
                }
                for target in range(3)
            ],
            "fieldConfig": {"defaults": {"unit": "short", "decimals": rng.randint(0, 3)}},
        }
        for panel in range(40)
    ]
    board = {"title": f"Dashboard {index}", "uid": f"d{index:04d}", "panels": panels}
    return json.dumps(board, indent=2)


def _crd(rng: random.Random, index: int) -> str:
    """A CustomResourceDefinition with a deep, wide openAPI schema (about 120 KB)."""

    def properties(depth: int) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        for field in range(8 if depth < 3 else 5):
            name = f"field{depth}x{field}"
            words = "lorem ipsum " * rng.randint(2, 8)
            described = {"description": f"{name} of kind {index}: {words}"}
            if depth < 3 and field < 3:
                fields[name] = {"type": "object", "properties": properties(depth + 1), **described}
            else:
                fields[name] = {"type": rng.choice(("string", "integer", "boolean")), **described}
        return fields

    body = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"kind{index}s.monitoring.example.com"},
        "spec": {
            "group": "monitoring.example.com",
            "names": {"kind": f"Kind{index}", "plural": f"kind{index}s"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": properties(0)}},
                }
            ],
        },
    }
    return json.dumps(body, indent=1)  # JSON is YAML: Helm reads it as it is


@dataclass(frozen=True)
class BigShape:
    """How big the chart's output is."""

    dashboards: int = 60
    crds: int = 10
    rule_groups: int = 40
    components: int = 12


def write_chart(directory: Path, shape: BigShape, *, seed: int = 7) -> None:
    """The chart at `directory` (created)."""
    rng = random.Random(seed)
    (directory / "templates").mkdir(parents=True)
    (directory / "crds").mkdir()
    (directory / "files").mkdir()
    (directory / "Chart.yaml").write_text(_CHART_YAML, encoding="utf-8")
    (directory / "templates" / "dashboards.yaml").write_text(_DASHBOARDS, encoding="utf-8")
    (directory / "templates" / "rules.yaml").write_text(_RULES, encoding="utf-8")
    (directory / "templates" / "workloads.yaml").write_text(_WORKLOADS, encoding="utf-8")
    dashboards = {}
    for index in range(shape.dashboards):
        name = f"board-{index:03d}"
        (directory / "files" / f"{name}.json").write_text(_dashboard(rng, index), encoding="utf-8")
        dashboards[name] = f"files/{name}.json"
    for index in range(shape.crds):
        (directory / "crds" / f"kind{index}.yaml").write_text(_crd(rng, index), encoding="utf-8")
    values = {
        "replicaCount": 1,
        "logLevel": "info",
        "alertFor": "10m",
        "ruleGroups": shape.rule_groups,
        "components": [f"component-{index:02d}" for index in range(shape.components)],
        "dashboards": dashboards,
    }
    (directory / "values.yaml").write_text(json.dumps(values, indent=2), encoding="utf-8")


def build_repo(target: Path, shape: BigShape, *, seed: int = 7) -> Path:
    """A fleet repository with one cluster and one release of the big chart (not committed)."""
    write_chart(target / "charts" / CHART, shape, seed=seed)
    template = target / "templates" / "monitoring"
    template.mkdir(parents=True)
    (template / "helmfile.yaml").write_text(
        f"releases:\n  - name: monitoring\n    chart: ../../charts/{CHART}\n", encoding="utf-8"
    )
    cluster = target / "deployments" / "production" / "eu-west"
    (cluster / "apps" / "monitoring").mkdir(parents=True)
    (target / "deployments" / "global.values.yaml").write_text("logLevel: info\n", encoding="utf-8")
    (cluster / "cluster.values.yaml").write_text("replicaCount: 2\n", encoding="utf-8")
    (cluster / "apps" / "monitoring" / "deployment.yaml").write_text(
        "settings:\n  namespace: monitoring\napps:\n  - template: monitoring\n", encoding="utf-8"
    )
    return target


# -- stage timings, in this process ------------------------------------------------------


def _median_seconds(repeat: int, step: Callable[[], object]) -> tuple[float, object]:
    times: list[float] = []
    result: object = None
    for _ in range(repeat):
        started = time.perf_counter()
        result = step()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def measure_stages(repo: Path, *, repeat: int) -> dict[str, float]:
    """Median seconds of each stage of one release: Helm, split+normalise, redact, write."""
    from reviewer import snapshot as snapshot_mod
    from reviewer.engine import RenderRequest, make_engine
    from reviewer.model import ReleaseId, RenderedRelease, Snapshot
    from reviewer.redact import Redactor
    from reviewer.side_redact import redact_snapshot
    from reviewer.workers import manifests

    engine = make_engine("embedded")
    request = RenderRequest(
        chart=repo / "charts" / CHART,
        values={"replicaCount": 2, "logLevel": "info"},
        release="monitoring",
        namespace="monitoring",
    )
    figures: dict[str, float] = {}
    figures["helm render"], rendered = _median_seconds(repeat, lambda: engine.render(request))
    assert isinstance(rendered, dict)
    figures["output MB"] = sum(len(text) for text in rendered.values()) / 1e6
    figures["split + normalise"], objects = _median_seconds(repeat, lambda: manifests(rendered))
    assert isinstance(objects, list)
    figures["objects"] = len(objects)
    release = RenderedRelease(
        id=ReleaseId("production/eu-west", "monitoring", "monitoring"),
        namespace="monitoring",
        chart=CHART,
        version="45.0.0",
        resources=tuple(objects),
    )
    snapshot = Snapshot(releases=(release,))
    redactor = Redactor({}, key=b"0" * 32)
    figures["redact"], _ = _median_seconds(repeat, lambda: redact_snapshot(snapshot, redactor))
    with tempfile.TemporaryDirectory(prefix="bigchart-out-") as out:
        figures["write normalised YAML"], _ = _median_seconds(
            repeat, lambda: snapshot_mod.write(snapshot, Path(out) / "snapshot")
        )
    engine.close()
    return figures


def main(argv: list[str]) -> int:
    """Build the big chart and print each stage's median time."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per stage (median shown)")
    parser.add_argument("--dashboards", type=int, default=BigShape.dashboards)
    parser.add_argument("--keep", type=Path, help="build the repository here and keep it")
    args = parser.parse_args(argv)
    shape = BigShape(dashboards=args.dashboards)
    with tempfile.TemporaryDirectory(prefix="bigchart-") as scratch:
        repo = build_repo(args.keep or Path(scratch) / "repo", shape)
        figures = measure_stages(repo, repeat=args.repeat)
    helm = figures["helm render"]
    print(
        f"big chart: {figures['objects']:.0f} objects, {figures['output MB']:.1f} MB rendered "
        f"(medians of {args.repeat})"
    )
    for stage in ("helm render", "split + normalise", "redact", "write normalised YAML"):
        print(f"  {stage:22s} {figures[stage]:7.3f} s  ({figures[stage] / helm:5.2f}x helm)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
