"""Helm engines: what turns (chart, values, release name, namespace) into manifests.

Engines sit behind the `HelmEngine` Protocol so the embedded Go SDK (default)
and the `helm` binary can be swapped and cross-checked.
"""

from __future__ import annotations

import shutil
import tempfile
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
        self._charts: dict[tuple[Path, bool], helm_python.Chart] = {}
        self._lock = threading.Lock()
        self._scratch: tempfile.TemporaryDirectory[str] | None = None

    @property
    def version(self) -> str:
        """The Helm SDK version compiled into the library."""
        return str(helm_python.helm_sdk_version())

    def _load(self, chart: Path, *, without_schema: bool = False) -> helm_python.Chart:
        with self._lock:
            loaded = self._charts.get((chart, without_schema))
            if loaded is None:
                source = self._schemaless_copy(chart) if without_schema else chart
                try:
                    loaded = helm_python.Chart.load(source)
                except helm_python.HelmError as exc:
                    raise RenderError(f"cannot load chart: {_one_line(exc)}") from None
                self._charts[(chart, without_schema)] = loaded
            return loaded

    def _schemaless_copy(self, chart: Path) -> Path:
        # The SDK always validates values against values.schema.json while
        # rendering; `skipSchemaValidation` is honoured by rendering a copy of
        # the chart (and its subcharts) without schema files.
        if self._scratch is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="reviewer-charts-")
        target = Path(tempfile.mkdtemp(dir=self._scratch.name))
        try:
            if chart.is_dir():
                copy = target / chart.name
                shutil.copytree(chart, copy, symlinks=False)
            else:
                helm_python.expand(target, chart)
                copy = next(p for p in target.iterdir() if p.is_dir())
        except (OSError, helm_python.HelmError, StopIteration) as exc:
            raise RenderError(f"cannot load chart: {_one_line(exc)}") from None
        for schema in copy.rglob("values.schema.json"):
            schema.unlink()
        return copy

    def chart_info(self, chart: Path) -> ChartInfo:
        """Name and version from the chart's Chart.yaml."""
        loaded = self._load(chart)
        return ChartInfo(name=loaded.name, version=loaded.version)

    def render(self, request: RenderRequest) -> dict[str, str]:
        """Render with Helm's engine; values are checked against the schema unless skipped."""
        chart = self._load(request.chart, without_schema=request.skip_schema_validation)
        try:
            return chart.render(
                values=request.values,
                name=request.release,
                namespace=request.namespace,
                is_install=True,
            )
        except helm_python.HelmError as exc:
            raise RenderError(_one_line(exc)) from None

    def close(self) -> None:
        """Release the loaded charts and scratch copies."""
        for chart in self._charts.values():
            chart.close()
        self._charts.clear()
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())
