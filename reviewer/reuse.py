"""Reuse: a head deployment whose inputs equal the base's is taken from the base side.

A diff mostly compares releases nothing touched. When every file a hierarchy
deployment was planned from (its values files, those the lookup probed and did
not find, its deployment.yaml, templates and local charts) is the same on both
sides, its head releases are the base's: the head side neither plans, renders,
nor redacts them again, and the report is the same as when it does.
`--no-fast-path` turns this off (docs: README, "Speed").
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from reviewer import jail
from reviewer.capabilities import CLUSTER_FILE
from reviewer.changes import Changes
from reviewer.discover import DEPLOYMENT_FILE, Cluster, DeploymentDir
from reviewer.errors import ReviewerError
from reviewer.model import ReleaseId, RenderedRelease, Snapshot
from reviewer.plan import Plan, PlanError, ReleasePlan
from reviewer.sources import nested
from reviewer.sources.protocol import Selector
from reviewer.templates import TEMPLATE_FILES
from reviewer.values import hierarchy_candidates

DeploymentKey = tuple[str, str]
"""(cluster path, deployment name): what one hierarchy deployment is planned for."""

_CHART_FILES = ("Chart.yaml", "requirements.yaml")


def key_of(rid: ReleaseId) -> DeploymentKey:
    """The deployment a release or plan error belongs to."""
    return (rid.cluster, rid.deployment)


def never(cluster: Cluster, deployment: DeploymentDir) -> bool:
    """Skip nothing."""
    return False


class Choosing:
    """A selector that remembers what it selected, in planning order, and holds back
    the deployments `skip` names (they are selected, but planned elsewhere)."""

    def __init__(
        self, inner: Selector, skip: Callable[[Cluster, DeploymentDir], bool] = never
    ) -> None:
        self.inner = inner
        self.skip = skip
        self.seen: dict[DeploymentKey, tuple[Cluster, DeploymentDir]] = {}
        self.skipped: set[DeploymentKey] = set()

    def __call__(self, cluster: Cluster, deployment: DeploymentDir) -> bool:
        """Selected by the inner selector and not held back."""
        if not self.inner(cluster, deployment):
            return False
        key = (cluster.path, deployment.name)
        self.seen[key] = (cluster, deployment)
        if self.skip(cluster, deployment):
            self.skipped.add(key)
            return False
        return True

    def location(self, cluster: str, deployment: str) -> bool:
        """Other kinds' releases: as the inner selector says."""
        return self.inner.location(cluster, deployment)


def by_deployment(releases: Iterable[ReleasePlan]) -> dict[DeploymentKey, list[ReleasePlan]]:
    """Releases grouped by deployment, in their order."""
    grouped: dict[DeploymentKey, list[ReleasePlan]] = {}
    for release in releases:
        grouped.setdefault(key_of(release.id), []).append(release)
    return grouped


def failed_keys(errors: Iterable[PlanError]) -> set[DeploymentKey]:
    """Deployments with a planning failure."""
    return {(error.cluster, error.deployment) for error in errors}


def assemble(
    order: Iterable[DeploymentKey], parts: Iterable[tuple[Collection[DeploymentKey], Plan]]
) -> tuple[ReleasePlan, ...]:
    """Releases in planning order, each deployment's from the first part that holds its key."""
    chosen = [(keys, by_deployment(plan.releases)) for keys, plan in parts]
    releases: list[ReleasePlan] = []
    for key in order:
        for keys, grouped in chosen:
            if key in keys:
                releases += grouped.get(key, [])
                break
    return tuple(releases)


@dataclass(frozen=True)
class Basis:
    """What the base side planned and rendered, for the head side to reuse."""

    plan: Plan
    twin: Plan
    seen: Mapping[DeploymentKey, tuple[Cluster, DeploymentDir]]
    snapshot: Snapshot | None
    """As rendered (real values, not redacted); None: planned only, the head side's
    reused deployments are rendered by neither side (reviewer/unrendered.py)."""
    published: Snapshot | None
    """Secret-derived positions in their twin form; None: `snapshot` (no SOPS file read)."""
    secret_keys: frozenset[DeploymentKey] = frozenset()
    """Deployments whose twin was planned apart (they read SOPS files)."""


@dataclass
class Reuse:
    """Decides which head deployments are the base's, and supplies their plans and renders."""

    basis: Basis
    changes: Changes
    root: Path
    """The head checkout (local charts are read there)."""
    _releases: dict[DeploymentKey, list[ReleasePlan]] = field(default_factory=dict)
    _failed: set[DeploymentKey] = field(default_factory=set)
    """Deployments always planned again: failed on the base side, or deploying HelmReleases."""
    _charts: dict[str, bool] = field(default_factory=dict)
    _decided: dict[DeploymentKey, bool] = field(default_factory=dict)
    """`reusable`'s answers (asked when a side is shared out, then when it is planned)."""

    def __post_init__(self) -> None:
        self._releases = by_deployment(self.basis.plan.releases)
        self._failed = failed_keys(self.basis.plan.errors) | failed_keys(self.basis.twin.errors)
        # Nested releases (docs/nested.md) read repository sources no plan records; with
        # nothing rendered, `unrendered.skippable` vouched that the change touches none.
        rendered = self.basis.snapshot.releases if self.basis.snapshot is not None else ()
        self._failed |= {
            key_of(release.id)
            for release in rendered
            if any(nested.is_helmrelease(resource.body) for resource in release.resources)
        }

    def reusable(self, cluster: Cluster, deployment: DeploymentDir) -> bool:
        """Whether the head's deployment was discovered and planned from the same files."""
        key = (cluster.path, deployment.name)
        known = self._decided.get(key)
        if known is None:
            known = self._decided[key] = self._reusable(key, cluster, deployment)
        return known

    def _reusable(self, key: DeploymentKey, cluster: Cluster, deployment: DeploymentDir) -> bool:
        found = self.basis.seen.get(key)
        releases = self._releases.get(key)
        if found is None or not releases or key in self._failed:
            return False
        base_cluster, base_deployment = found
        if base_cluster.levels != cluster.levels or base_deployment != deployment:
            return False
        if not self._known(cluster, deployment, releases):
            return False
        if any(not self._self_contained(release) for release in releases):
            return False
        return self._unchanged(planning_reads(cluster, deployment, releases))

    def _known(
        self, cluster: Cluster, deployment: DeploymentDir, releases: Iterable[ReleasePlan]
    ) -> bool:
        """Whether every directory looked in and every input is one the hashing saw (not
        behind a symlinked directory, where a change would go unnoticed)."""
        known = self.changes.known
        looked_in = [level.path for level in cluster.levels] + [deployment.path]
        inputs = (path for release in releases for path in release.inputs)
        return all(path in known for path in looked_in) and all(path in known for path in inputs)

    def _unchanged(self, paths: Iterable[str]) -> bool:
        return not any(self.changes.touches(path) for path in paths)

    def _self_contained(self, release: ReleasePlan) -> bool:
        """A local chart whose files say nothing of `file://` (a dependency elsewhere in
        the repository is no input of the release)."""
        chart = release.chart.local
        if chart is None:
            return True
        known = self._charts.get(chart)
        if known is None:
            known = chart in self.changes.known and not self._refers_outside(chart)
            self._charts[chart] = known
        return known

    def _refers_outside(self, chart: str) -> bool:
        prefix = chart + "/"
        for name in self.changes.known:
            if name.startswith(prefix) and name.rsplit("/", 1)[-1] in _CHART_FILES:
                try:
                    if "file://" in jail.read_text(self.root, name):
                        return True
                except (ReviewerError, OSError):
                    return True
        return False

    def plans(self, keys: Iterable[DeploymentKey]) -> Plan:
        """The base's real plan of those deployments."""
        wanted = set(keys)
        return Plan(releases=tuple(r for r in self.basis.plan.releases if key_of(r.id) in wanted))

    def twins(self, keys: Iterable[DeploymentKey]) -> Plan:
        """The base's redacted twin plan of those deployments."""
        wanted = set(keys)
        return Plan(releases=tuple(r for r in self.basis.twin.releases if key_of(r.id) in wanted))

    def rendered(self, keys: Iterable[DeploymentKey]) -> tuple[RenderedRelease, ...]:
        """The base's rendered releases (and refusals) of those deployments."""
        wanted = set(keys)
        assert self.basis.snapshot is not None, "a planned-only basis renders nothing to take"
        return tuple(r for r in self.basis.snapshot.releases if key_of(r.id) in wanted)

    def published(self, keys: Iterable[DeploymentKey]) -> tuple[RenderedRelease, ...]:
        """The base's publishable form of those deployments' releases."""
        wanted = set(keys)
        shown = self.basis.published or self.basis.snapshot
        assert shown is not None, "a planned-only basis renders nothing to take"
        return tuple(r for r in shown.releases if key_of(r.id) in wanted)


def planning_reads(
    cluster: Cluster, deployment: DeploymentDir, releases: Iterable[ReleasePlan]
) -> list[str]:
    """Every path planning these releases read or looked for, and the directories they
    were looked for in (a file that appears there changes the lookup)."""
    paths = [
        *hierarchy_candidates(cluster, deployment),
        f"{deployment.path}/{DEPLOYMENT_FILE}",
        f"{cluster.levels[-1].path}/{CLUSTER_FILE}",
    ]
    for release in releases:
        paths += release.inputs
        template_dir = release.template_file.rsplit("/", 1)[0]
        paths += (f"{template_dir}/{name}" for name in TEMPLATE_FILES)
    return paths
