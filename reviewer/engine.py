"""Helm engines: what turns (chart, values, release name, namespace) into manifests.

Engines sit behind the `HelmEngine` Protocol so the embedded Go SDK (default)
and the `helm` binary can be swapped and cross-checked.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import helm_python

from reviewer.errors import RenderError


@dataclass(frozen=True)
class ChartInfo:
    """What the engine learned about a chart while loading it."""

    name: str
    version: str


@dataclass(frozen=True)
class RenderRequest:
    """Everything an engine needs to render one release."""

    chart: Path
    values: dict[str, Any]
    release: str
    namespace: str
    skip_schema_validation: bool = False


class HelmEngine(Protocol):
    """Renders charts offline."""

    name: str

    @property
    def version(self) -> str:
        """The Helm version this engine renders with."""
        ...

    def chart_info(self, chart: Path) -> ChartInfo:
        """Name and version of the chart at `chart`."""
        ...

    def render(self, request: RenderRequest) -> dict[str, str]:
        """Template path → rendered text, like `helm template` before splitting."""
        ...


class EmbeddedEngine:
    """Helm's Go SDK loaded in-process (`helm-python-sdk`): no binary, no subprocess."""

    name = "embedded"

    def __init__(self) -> None:
        self._charts: dict[Path, helm_python.Chart] = {}
        self._lock = threading.Lock()

    @property
    def version(self) -> str:
        """The Helm SDK version compiled into the library."""
        return str(helm_python.helm_sdk_version())

    def _load(self, chart: Path) -> helm_python.Chart:
        with self._lock:
            loaded = self._charts.get(chart)
            if loaded is None:
                try:
                    loaded = helm_python.Chart.load(chart)
                except helm_python.HelmError as exc:
                    raise RenderError(f"cannot load chart: {_one_line(exc)}") from None
                self._charts[chart] = loaded
            return loaded

    def chart_info(self, chart: Path) -> ChartInfo:
        """Name and version from the chart's Chart.yaml."""
        loaded = self._load(chart)
        return ChartInfo(name=loaded.name, version=loaded.version)

    def render(self, request: RenderRequest) -> dict[str, str]:
        """Render the chart with Helm's engine (schema-validated unless skipped)."""
        chart = self._load(request.chart)
        try:
            if not request.skip_schema_validation:
                chart.validate_schema(request.values)
            return chart.render(
                values=request.values,
                name=request.release,
                namespace=request.namespace,
                is_install=True,
            )
        except helm_python.HelmError as exc:
            raise RenderError(_one_line(exc)) from None

    def close(self) -> None:
        """Release the loaded charts."""
        for chart in self._charts.values():
            chart.close()
        self._charts.clear()


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())
