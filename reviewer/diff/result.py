"""The result of comparing two snapshots: release diffs, failures, change groups, counts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import Enum

from reviewer.diff.options import Differ
from reviewer.diff.resource import RegeneratedChange, ResourceDiff, ResourceStatus
from reviewer.model import (
    LAYER_LABEL,
    WHOLE_DEPLOYMENT,
    ReleaseId,
    RenderedRelease,
    ResourceKey,
)
from reviewer.semantic import PathChange


class ReleaseStatus(str, Enum):
    """How a release differs between the two sides."""

    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"
    UNCHANGED = "unchanged"
    ERROR = "error"


class DiffSide(str, Enum):
    """Which side of the comparison: base is the target branch, head the merge result."""

    BASE = "base"
    HEAD = "head"


@dataclass(frozen=True)
class ReleaseDiff:
    """One release on both sides and its objects that differ."""

    id: ReleaseId
    status: ReleaseStatus
    base: RenderedRelease | None
    head: RenderedRelease | None
    resources: tuple[ResourceDiff, ...] = ()
    """Objects that differ, by key; a move is listed under both of its owners."""
    unchanged: int = 0
    regenerated: tuple[ResourceDiff, ...] = ()
    """Objects whose only differences are fields regenerated on every render (unchanged)."""

    def regenerated_fields(self) -> Iterator[tuple[ResourceKey, RegeneratedChange]]:
        """Every regenerated field of this release's objects, changed or not."""
        for diff in (*self.resources, *self.regenerated):
            if diff.release == self.id:
                for item in diff.regenerated:
                    yield diff.key, item

    @property
    def rendered(self) -> bool:
        """False for a release not rendered because its inputs are the same on both sides."""
        return not any(side is not None and side.identical for side in (self.base, self.head))

    @property
    def base_error(self) -> str | None:
        """Why the release failed on the target branch (a warning)."""
        return self.base.error if self.base is not None else None

    @property
    def head_error(self) -> str | None:
        """Why the release failed on the merge result (fails the run)."""
        return self.head.error if self.head is not None else None

    @property
    def routine_only(self) -> bool:
        """A changed release whose object changes are all routine."""
        return (
            self.status is ReleaseStatus.CHANGED
            and bool(self.resources)
            and all(diff.routine_only for diff in self.resources)
            and release_meta(self.base) == release_meta(self.head)
        )

    @property
    def layer(self) -> str:
        """The Kraan layer of the release on the head side (else the base side); "" for none."""
        return layer_of(self.head) or layer_of(self.base)

    @property
    def layer_move(self) -> tuple[str, str] | None:
        """(base layer, head layer) when the release moved from one Kraan layer to another."""
        before, after = layer_of(self.base), layer_of(self.head)
        if not before or not after or before == after:
            return None
        return before, after

    @property
    def chart_change(self) -> str | None:
        """`argo-cd 9.5.21 → 9.5.22` when the chart or its version differs between the sides."""
        if self.base is None or self.head is None or not (self.base.chart and self.head.chart):
            return None
        old, new = self.base, self.head
        if (old.chart, old.version) == (new.chart, new.version):
            return None
        if old.chart == new.chart:
            return f"{new.chart} {old.version} → {new.version}"
        return f"{old.chart} {old.version} → {new.chart} {new.version}"

    def routine_counts(self) -> dict[str, int]:
        """How many routine changes each rule covered in this release."""
        return dict(Counter(item.rule for diff in self.resources for item in diff.routine))

    def shown_resources(self) -> tuple[ResourceDiff, ...]:
        """The objects reports show one by one: all but the collapsible ones."""
        return tuple(diff for diff in self.resources if not diff.collapsible)

    def routine_objects(self) -> tuple[ResourceDiff, ...]:
        """Objects whose only changes are routine: reports show them as one count."""
        return tuple(diff for diff in self.resources if diff.collapsible)

    def routine_lines(self) -> list[str]:
        """Each distinct routine change of `routine_objects()` with how many fields it covers,
        most frequent first."""
        found = Counter(str(item) for diff in self.routine_objects() for item in diff.routine)
        return [f"{line}  ({count} field(s))" for line, count in found.most_common()]


@dataclass(frozen=True)
class Failure:
    """A render failure on one side; `release` is None for failures outside any release."""

    side: DiffSide
    release: ReleaseId | None
    message: str
    reproduce: str | None = None
    helm_command: str | None = None


@dataclass(frozen=True)
class ChangeGroup:
    """One distinct change and every (release, object) it applies to."""

    status: ResourceStatus
    group: str
    kind: str
    name: str
    body: str
    changes: tuple[PathChange, ...]
    members: tuple[tuple[ReleaseId, ResourceKey], ...]
    example: ResourceDiff
    """The first member's diff, for its file labels and dyff report."""


@dataclass(frozen=True)
class ClusterSummary:
    """Release counts of one cluster; `routine_only` is the part of `changed` that is routine."""

    cluster: str
    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    failed: int = 0
    routine_only: int = 0
    failed_deployments: int = 0
    """Deployments of the merge result that failed before their releases were known."""


@dataclass(frozen=True)
class SnapshotDiff:
    """Everything that differs between two snapshots."""

    releases: tuple[ReleaseDiff, ...]
    groups: tuple[ChangeGroup, ...]
    failures: tuple[Failure, ...]
    differ: Differ

    @property
    def has_changes(self) -> bool:
        """Whether any release is added, removed or changed (routine-only changes count)."""
        changing = (ReleaseStatus.ADDED, ReleaseStatus.REMOVED, ReleaseStatus.CHANGED)
        return any(release.status in changing for release in self.releases)

    @property
    def head_errors(self) -> tuple[Failure, ...]:
        """Failures of the merge result: they fail the run."""
        return tuple(failure for failure in self.failures if failure.side is DiffSide.HEAD)

    @property
    def base_errors(self) -> tuple[Failure, ...]:
        """Failures of the target branch: warnings only (the PR may be the fix)."""
        return tuple(failure for failure in self.failures if failure.side is DiffSide.BASE)

    @property
    def introduced_errors(self) -> tuple[Failure, ...]:
        """Merge-result failures the change introduces: they fail the run."""
        both = _on_both_sides(self.failures)
        return tuple(f for f in self.head_errors if (f.release, f.message) not in both)

    @property
    def still_failing(self) -> tuple[Failure, ...]:
        """Failures of the merge result that the target branch has too, with the same error."""
        both = _on_both_sides(self.failures)
        return tuple(f for f in self.head_errors if (f.release, f.message) in both)

    @property
    def target_only_errors(self) -> tuple[Failure, ...]:
        """Target-branch failures that the merge result fixes (or fails differently)."""
        both = _on_both_sides(self.failures)
        return tuple(f for f in self.base_errors if (f.release, f.message) not in both)

    def deployment_failures(self) -> tuple[DeploymentFailure, ...]:
        """Merge-result deployments that failed to plan, one per cause, with their clusters."""
        clusters: dict[tuple[str, str], list[str]] = {}
        for failure in self.head_errors:
            if failure.release is not None and failure.release.release == WHOLE_DEPLOYMENT:
                cause = (failure.release.deployment, failure.message)
                clusters.setdefault(cause, []).append(failure.release.cluster)
        return tuple(
            DeploymentFailure(deployment, message, tuple(sorted(set(names))))
            for (deployment, message), names in clusters.items()
        )

    def summary(self) -> tuple[ClusterSummary, ...]:
        """Per-cluster release counts, by cluster path."""
        clusters: dict[str, list[ReleaseDiff]] = {}
        for release in self.releases:
            clusters.setdefault(release.id.cluster, []).append(release)
        return tuple(_cluster_summary(name, clusters[name]) for name in sorted(clusters))

    def routine_counts(self) -> dict[str, int]:
        """How many routine changes each rule covered, over all releases (moves once)."""
        counts: Counter[str] = Counter()
        for _, diff in self.resource_diffs():
            counts.update(item.rule for item in diff.routine)
        return dict(counts)

    def regenerated_fields(self) -> Iterator[tuple[ReleaseId, ResourceKey, RegeneratedChange]]:
        """Every field regenerated on every render, with its release and object."""
        for release in self.releases:
            for key, item in release.regenerated_fields():
                yield release.id, key, item

    def resource_diffs(self) -> Iterator[tuple[ReleaseId, ResourceDiff]]:
        """Every object diff once, with its owning release (a move under its head owner)."""
        for release in self.releases:
            for diff in release.resources:
                if diff.release == release.id:
                    yield release.id, diff


def _on_both_sides(failures: Iterable[Failure]) -> set[tuple[ReleaseId | None, str]]:
    """(release, message) of the failures both sides have, with the same error."""
    found = list(failures)
    base = {(f.release, f.message) for f in found if f.side is DiffSide.BASE}
    return {(f.release, f.message) for f in found if f.side is DiffSide.HEAD} & base


@dataclass(frozen=True)
class DeploymentFailure:
    """One deployment that failed to plan on the merge result, and the clusters it hit."""

    deployment: str
    message: str
    clusters: tuple[str, ...]


def _cluster_summary(cluster: str, ours: list[ReleaseDiff]) -> ClusterSummary:
    """The counts of one cluster's releases (`ours`)."""
    # A whole-deployment failure is a deployment, not a release: counted apart.
    mine = [release for release in ours if release.id.release != WHOLE_DEPLOYMENT]
    counts = Counter(release.status for release in mine)
    return ClusterSummary(
        cluster=cluster,
        added=counts[ReleaseStatus.ADDED],
        changed=counts[ReleaseStatus.CHANGED],
        removed=counts[ReleaseStatus.REMOVED],
        unchanged=counts[ReleaseStatus.UNCHANGED],
        failed=counts[ReleaseStatus.ERROR],
        routine_only=sum(1 for release in mine if release.routine_only),
        failed_deployments=sum(
            1 for release in ours if release.id.release == WHOLE_DEPLOYMENT and release.head_error
        ),
    )


def release_meta(release: RenderedRelease | None) -> tuple[str, str, str, str] | None:
    """What of a release besides its objects counts as a change: namespace, chart, version
    and Kraan layer."""
    if release is None:
        return None
    return (release.namespace, release.chart, release.version, layer_of(release))


def layer_of(release: RenderedRelease | None) -> str:
    """The release's Kraan layer (its `kraan/layer` label); "" for none."""
    return release.labels.get(LAYER_LABEL, "") if release is not None else ""
