"""Render: planned releases → normalized Kubernetes objects.

Each release's inputs (chart content, merged values, name, namespace, engine
and Helm version) hash to a digest; a digest already rendered — on this side or
the other side of a diff — is reused instead of rendered again. With a
`RenderStore`, releases no secret reaches are also read from and written to the
persistent render cache (docs/cache.md). A failing release becomes a
`RenderedRelease` with its error; the others go on.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reviewer import chartify, postrender
from reviewer.charts import ChartError, ChartFetcher, ResolvedChart
from reviewer.charts.defaults import ChartDefaults, replace_defaults
from reviewer.engine import RenderRequest
from reviewer.errors import ReviewerError
from reviewer.model import WHOLE_DEPLOYMENT, ReleaseId, RenderedRelease, Resource, Snapshot
from reviewer.plan import Plan, PlanError, ReleasePlan
from reviewer.proc import Programs
from reviewer.render_cache import RenderStore
from reviewer.unstable import chart_may_vary
from reviewer.workers import Outcome, Pool

Progress = Callable[[ReleasePlan], None]


def _no_progress(release: ReleasePlan) -> None:
    return None


# Mutable on purpose: one cache is shared by both sides of a diff and fills as they render.
@dataclass
class RenderCache:
    """Render outcomes by input digest, shared by both sides of a diff."""

    outcomes: dict[str, Outcome] = field(default_factory=dict)
    chart_digests: dict[Path, str] = field(default_factory=dict)
    varying: dict[Path, bool] = field(default_factory=dict)
    """Charts that may render differently twice (reviewer/unstable.py), by path."""
    rendered: int = 0
    reused: int = 0
    chartified: dict[tuple[Path, str, str], Path] = field(default_factory=dict)
    defaults: dict[tuple[Path, ChartDefaults], Path] = field(default_factory=dict)
    local_charts: dict[tuple[Path, str, str | None], ResolvedChart] = field(default_factory=dict)
    """Local charts resolved (jail-checked) once per checkout, not once per release."""
    store: RenderStore | None = None
    """The persistent render cache, if any: outcomes across runs."""
    restored: int = 0
    """Outcomes read from `store` instead of rendered."""
    stored: int = 0
    """Outcomes written to `store`."""
    identical: int = 0
    """Releases left unrendered: every input the same on both sides (reviewer/unrendered.py)."""
    programs: Programs = field(default_factory=Programs)
    """Where kubectl is found for directories made into charts (from the edge)."""
    _scratch: tempfile.TemporaryDirectory[str] | None = None

    def scratch(self) -> str:
        """A private directory for charts made from directories (removed with the cache)."""
        if self._scratch is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="reviewer-chartify-")
        return self._scratch.name

    def may_vary(self, chart: Path) -> bool:
        """Whether the chart calls a random or time function (reviewer/unstable.py), once."""
        found = self.varying.get(chart)
        if found is None:
            found = self.varying[chart] = chart_may_vary(chart)
        return found

    def chart_digest(self, chart: ResolvedChart) -> str:
        """sha256 of the chart's content (archive bytes, or every file of a directory)."""
        found = self.chart_digests.get(chart.path)
        if found is None:
            found = _content_digest(chart.path)
            self.chart_digests[chart.path] = found
        return found


def _content_digest(path: Path) -> str:
    digest = hashlib.sha256()
    if path.is_file():
        digest.update(path.read_bytes())
        return digest.hexdigest()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()


def input_digest(request: RenderRequest, *, chart_digest: str, engine_id: str) -> str:
    """The digest of everything that decides a release's rendered output."""
    inputs = {
        "chart": chart_digest,
        "values": request.values,
        "release": request.release,
        "namespace": request.namespace,
        "skipSchemaValidation": request.skip_schema_validation,
        "kubeVersion": request.kube_version,
        "apiVersions": list(request.api_versions),
        "patches": postrender.digest_data(request.patches),
        "engine": engine_id,
    }
    text = json.dumps(inputs, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class _Pending:
    """Releases waiting for one digest's render."""

    request: RenderRequest
    releases: list[int]


def render_plan(
    plan: Plan,
    *,
    root: Path,
    fetcher: ChartFetcher,
    pool: Pool,
    cache: RenderCache | None = None,
    progress: Progress = _no_progress,
    persist: frozenset[ReleaseId] = frozenset(),
) -> Snapshot:
    """Render every planned release once per distinct input digest.

    Releases in `persist` (those no secret reaches) may come from, and go to, the cache's
    persistent store; the others are never read from or written to disk.
    """
    cache = cache if cache is not None else RenderCache()
    results: dict[int, RenderedRelease] = {}
    pending: dict[str, _Pending] = {}
    for index, release in enumerate(plan.releases):
        try:
            request, digest = _request(release, root, fetcher, pool, cache)
        except ReviewerError as error:
            results[index] = _failed(release, error.render(), error)
            progress(release)
            continue
        outcome = cache.outcomes.get(digest)
        if outcome is None and release.id in persist:
            outcome = _restore(cache, digest)
        if outcome is not None:
            cache.reused += 1
            results[index] = _finished(release, outcome)
            progress(release)
        elif digest in pending:
            pending[digest].releases.append(index)
        else:
            pending[digest] = _Pending(request, [index])
    results.update(_render_pending(plan, pending, pool, cache, progress, persist))
    releases = [_failed_plan_entry(error) for error in plan.errors]
    releases += [results[index] for index in range(len(plan.releases))]
    releases += plan.objects
    return Snapshot(releases=tuple(sorted(releases, key=lambda r: r.id)))


def _render_pending(
    plan: Plan,
    pending: dict[str, _Pending],
    pool: Pool,
    cache: RenderCache,
    progress: Progress,
    persist: frozenset[ReleaseId],
) -> Iterator[tuple[int, RenderedRelease]]:
    """Render each pending digest once; yields every waiting release as its render finishes."""
    digests = list(pending)
    requests = [pending[digest].request for digest in digests]
    for position, outcome in pool.render(requests):
        digest = digests[position]
        cache.outcomes[digest] = outcome
        cache.rendered += 1
        waiting = pending[digest].releases
        if cache.store is not None and all(plan.releases[i].id in persist for i in waiting):
            cache.stored += cache.store.save(digest, outcome)
        for index in waiting:
            release = plan.releases[index]
            yield index, _finished(release, outcome)
            progress(release)


def _restore(cache: RenderCache, digest: str) -> Outcome | None:
    """The outcome the persistent store holds for `digest`, kept in memory for this run."""
    if cache.store is None:
        return None
    outcome = cache.store.load(digest)
    if outcome is not None:
        cache.outcomes[digest] = outcome
        cache.restored += 1
    return outcome


def render_again(
    releases: Sequence[ReleasePlan],
    *,
    root: Path,
    fetcher: ChartFetcher,
    pool: Pool,
    cache: RenderCache | None = None,
) -> dict[ReleaseId, RenderedRelease]:
    """Render `releases` once more without reusing any outcome: random values come out anew.

    A release whose chart calls no random or time function renders the same again, so it
    is left out. `cache` only lends its chart digests; no outcome is read from it or
    stored in it.
    """
    requests: list[RenderRequest] = []
    wanted: list[ReleasePlan] = []
    digests = cache if cache is not None else RenderCache()
    for release in releases:
        try:
            request = _request(release, root, fetcher, pool, digests)[0]
        except ReviewerError:
            continue  # it failed the first time too; nothing to compare
        if digests.may_vary(request.chart):
            requests.append(request)
            wanted.append(release)
    return {
        wanted[index].id: _finished(wanted[index], outcome)
        for index, outcome in pool.render(requests)
    }


def _request(
    release: ReleasePlan, root: Path, fetcher: ChartFetcher, pool: Pool, cache: RenderCache
) -> tuple[RenderRequest, str]:
    resolved = _resolved(release, root, fetcher, cache)
    chart = _with_defaults(_chartified(resolved, release, root, cache), release, cache)
    request = RenderRequest(
        chart=chart.path,
        values=release.values,
        release=release.id.release,
        namespace=release.namespace,
        skip_schema_validation=release.skip_schema_validation,
        kube_version=release.capabilities.kube_version,
        api_versions=release.capabilities.api_versions or (),
        patches=release.patches,
    )
    digest = input_digest(request, chart_digest=cache.chart_digest(chart), engine_id=pool.engine_id)
    return request, digest


def _resolved(
    release: ReleasePlan, root: Path, fetcher: ChartFetcher, cache: RenderCache
) -> ResolvedChart:
    """The release's chart; a local chart's tree is walked by the jail once per checkout."""
    if release.chart.local is None:
        return fetcher.resolve(release.chart, release.version, root=root)
    key = (root, release.chart.local, release.version)
    found = cache.local_charts.get(key)
    if found is None:
        found = fetcher.resolve(release.chart, release.version, root=root)
        cache.local_charts[key] = found
    return found


def _chartified(
    chart: ResolvedChart, release: ReleasePlan, root: Path, cache: RenderCache
) -> ResolvedChart:
    """A local directory that is not a chart becomes one (helmfile's chartify)."""
    if chart.source != "local" or not chart.path.is_dir() or chartify.is_chart(chart.path):
        return chart
    key = (chart.path, release.namespace, release.id.release)
    found = cache.chartified.get(key)
    if found is None:
        found = chartify.chartify(
            chart.path,
            root=root,
            work_dir=Path(tempfile.mkdtemp(dir=cache.scratch())),
            release_name=release.id.release,
            namespace=release.namespace,
            programs=cache.programs,
        )
        cache.chartified[key] = found
    return ResolvedChart(found, chart.source, chart.name, chart.version, chart.digest)


def _with_defaults(chart: ResolvedChart, release: ReleasePlan, cache: RenderCache) -> ResolvedChart:
    """The chart with its values.yaml replaced, when the release says so (Flux valuesFiles)."""
    if release.chart_defaults is None:
        return chart
    key = (chart.path, release.chart_defaults)
    found = cache.defaults.get(key)
    if found is None:
        work = Path(tempfile.mkdtemp(dir=cache.scratch()))
        found = replace_defaults(chart.path, release.chart_defaults, work, ref=release.chart.ref)
        cache.defaults[key] = found
    return ResolvedChart(found, chart.source, chart.name, chart.version, chart.digest)


def _rendered(
    release: ReleasePlan,
    *,
    chart: str,
    version: str,
    resources: tuple[Resource, ...] = (),
    error: str | None = None,
) -> RenderedRelease:
    return RenderedRelease(
        id=release.id,
        namespace=release.namespace,
        chart=chart,
        version=version,
        labels=release.labels,
        resources=resources,
        error=error,
        reproduce=release.reproduce,
        helm_command=release.helm_command,
    )


def _finished(release: ReleasePlan, outcome: Outcome) -> RenderedRelease:
    if outcome.error is not None or outcome.chart is None:
        return _failed(release, outcome.error or "render failed", None)
    chart = outcome.chart
    return _rendered(release, chart=chart.name, version=chart.version, resources=outcome.resources)


def _failed(release: ReleasePlan, message: str, error: ReviewerError | None) -> RenderedRelease:
    # A ChartError names the chart reference itself.
    which = "" if isinstance(error, ChartError) else f"chart {release.chart.ref}: "
    return _rendered(
        release,
        chart=release.chart.ref,
        version=release.version or "",
        error=f"{release.template_file}: {which}{message}",
    )


def _failed_plan_entry(error: PlanError) -> RenderedRelease:
    return RenderedRelease(
        id=ReleaseId(error.cluster, error.deployment, error.release or WHOLE_DEPLOYMENT),
        namespace="",
        error=error.message,
        reproduce=error.reproduce,
    )
