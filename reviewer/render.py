"""Render: planned releases → normalized Kubernetes objects, one release at a time.

A failing release becomes a `RenderedRelease` with its error; the others go on.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from pathlib import Path

from reviewer import yamlio
from reviewer.charts import ChartError, ChartFetcher
from reviewer.engine import HelmEngine, RenderRequest
from reviewer.errors import ReviewerError
from reviewer.plan import Plan, PlanError, ReleasePlan
from reviewer.snapshot import WHOLE_DEPLOYMENT, ReleaseId, RenderedRelease, Resource, Snapshot

Progress = Callable[[ReleasePlan], None]


def _no_progress(release: ReleasePlan) -> None:
    return None


def render_plan(
    plan: Plan,
    *,
    root: Path,
    engine: HelmEngine,
    fetcher: ChartFetcher,
    progress: Progress = _no_progress,
) -> Snapshot:
    """Render every planned release; planning errors are carried over as failed entries."""
    releases = [_failed_plan_entry(error) for error in plan.errors]
    for release in plan.releases:
        releases.append(render_release(release, root=root, engine=engine, fetcher=fetcher))
        progress(release)
    releases.sort(key=lambda r: r.id)
    return Snapshot(releases=releases)


def _failed_plan_entry(error: PlanError) -> RenderedRelease:
    return RenderedRelease(
        id=ReleaseId(error.cluster, error.deployment, error.release or WHOLE_DEPLOYMENT),
        namespace="",
        error=error.message,
        reproduce=error.reproduce,
    )


def render_release(
    release: ReleasePlan, *, root: Path, engine: HelmEngine, fetcher: ChartFetcher
) -> RenderedRelease:
    """Render one release; any failure is recorded on the result, never raised."""
    result = RenderedRelease(
        id=release.id,
        namespace=release.namespace,
        chart=release.chart.ref,
        version=release.version or "",
        labels=release.labels,
        reproduce=release.reproduce,
    )
    try:
        chart = fetcher.fetch(release.chart, release.version, root=root)
        info = engine.chart_info(chart)
        result.chart, result.version = info.name, info.version
        rendered = engine.render(
            RenderRequest(
                chart=chart,
                values=release.values,
                release=release.id.release,
                namespace=release.namespace,
                skip_schema_validation=release.skip_schema_validation,
            )
        )
        result.resources = manifests(rendered, source=release.template_file)
    except ReviewerError as error:
        # A ChartError names the chart reference itself.
        which = "" if isinstance(error, ChartError) else f"chart {release.chart.ref}: "
        result.error = f"{release.template_file}: {which}{error.render()}"
    return result


def manifests(rendered: dict[str, str], *, source: str) -> list[Resource]:
    """Split rendered template outputs into normalized objects, like `helm template` does."""
    resources: list[Resource] = []
    for template in sorted(rendered):
        base = posixpath.basename(template)
        if base == "NOTES.txt" or base.startswith("_"):
            continue
        for body in yamlio.load_documents(rendered[template], source=template, cache=False):
            resources.append(Resource.from_body(body, source=template))
    resources.sort(key=lambda r: r.key)
    return resources
