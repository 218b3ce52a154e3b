"""Added and removed releases in brief: their objects with sizes, and for an added
release the existing release it most resembles and how it differs from it.

A new cluster's releases hold thousands of lines (CRDs, dashboards); the PR
comment lists them by kind and name only, while the JSON report (and the CI
artifact) keeps their full content. What a reviewer of "add a cluster" wants
to read is how the new release differs from its siblings on other clusters.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from reviewer.diff.pairing import similarity
from reviewer.diff.result import ReleaseDiff, ReleaseStatus, SnapshotDiff
from reviewer.model import ReleaseId, RenderedRelease, Resource, ResourceKey
from reviewer.semantic import semantic_diff

DIFFERENCE_LINES = 40
"""Lines of the compact difference shown against the most resembling release."""
LINE_WIDTH = 160
CANDIDATES = 12
"""Releases compared when looking for the most resembling one (nearest clusters first)."""
NEAR_TIE = 0.01
"""Similarities this close to the best count as equal: the nearest cluster wins among them
(a chart's random passwords make siblings differ by a hair, in no meaningful way)."""


@dataclass(frozen=True)
class ObjectSize:
    """One object of an added or removed release, with its size as normalized YAML."""

    key: ResourceKey
    lines: int
    bytes: int


@dataclass(frozen=True)
class Resemblance:
    """The existing release an added one most resembles, and how it differs from it."""

    release: ReleaseId
    similarity: float
    differences: tuple[str, ...]
    more: int = 0
    """Difference lines left out of `differences`."""


@dataclass(frozen=True)
class ReleaseSummary:
    """An added or removed release: its objects with sizes (and what it resembles)."""

    release: ReleaseId
    objects: tuple[ObjectSize, ...]
    resembles: Resemblance | None = None

    @property
    def lines(self) -> int:
        """Lines of all objects together."""
        return sum(item.lines for item in self.objects)

    @property
    def bytes(self) -> int:
        """Bytes of all objects together."""
        return sum(item.bytes for item in self.objects)


def summaries(diff: SnapshotDiff) -> dict[ReleaseId, ReleaseSummary]:
    """A summary of every added and removed release of `diff`."""
    existing = [
        release.head
        for release in diff.releases
        if release.status in (ReleaseStatus.CHANGED, ReleaseStatus.UNCHANGED)
        and release.head is not None
    ]
    found: dict[ReleaseId, ReleaseSummary] = {}
    for release in diff.releases:
        side = _side(release)
        if side is None:
            continue
        resembles = None
        if release.status is ReleaseStatus.ADDED:
            resembles = most_resembling(side, existing)
        found[release.id] = ReleaseSummary(release.id, _sizes(side.resources), resembles)
    return found


def _side(release: ReleaseDiff) -> RenderedRelease | None:
    if release.status is ReleaseStatus.ADDED:
        return release.head
    if release.status is ReleaseStatus.REMOVED:
        return release.base
    return None


def _sizes(resources: Iterable[Resource]) -> tuple[ObjectSize, ...]:
    sizes = []
    for resource in resources:
        text = resource.text()
        sizes.append(ObjectSize(resource.key, text.count("\n"), len(text.encode())))
    return tuple(sorted(sizes, key=lambda item: item.key))


def _text(release: RenderedRelease) -> str:
    return "".join(resource.text() for resource in release.resources)


def most_resembling(
    added: RenderedRelease, existing: Sequence[RenderedRelease]
) -> Resemblance | None:
    """The existing release most like `added` among the same deployment and release on other
    clusters, with a compact path-level difference."""
    candidates = _candidates(added, existing)
    if not candidates:
        return None
    text = _text(added)
    scored = [(similarity(_text(other), text), other) for other in candidates]
    top = max(score for score, _ in scored)
    score, best = next(item for item in scored if item[0] >= top - NEAR_TIE)
    lines = list(_differences(best, added))
    return Resemblance(
        best.id, score, tuple(lines[:DIFFERENCE_LINES]), max(0, len(lines) - DIFFERENCE_LINES)
    )


def _candidates(
    added: RenderedRelease, existing: Sequence[RenderedRelease]
) -> list[RenderedRelease]:
    """The same deployment and release on other clusters (the same template): same chart
    first, then the clusters sharing the longest part of the new cluster's path (its group)."""
    related = [
        other
        for other in existing
        if other.id.cluster != added.id.cluster
        and (other.id.deployment, other.id.release) == (added.id.deployment, added.id.release)
        and other.error is None
    ]
    return sorted(
        related,
        key=lambda other: (
            other.chart != added.chart,
            -_shared_segments(other.id.cluster, added.id.cluster),
            str(other.id),
        ),
    )[:CANDIDATES]


def _shared_segments(one: str, other: str) -> int:
    """How many leading path segments two cluster paths share (`prod/eu-1`, `prod/eu-3`: 1)."""
    shared = 0
    for mine, theirs in zip(one.split("/"), other.split("/"), strict=False):
        if mine != theirs:
            break
        shared += 1
    return shared


def _differences(base: RenderedRelease, added: RenderedRelease) -> Iterable[str]:
    """Path-level differences, object by object; objects pair by kind, namespace and name,
    else by kind and name, else by kind and position."""
    theirs = list(base.resources)
    for resource in added.resources:
        other = _counterpart(resource, theirs)
        if other is None:
            yield f"+ {resource.key} (no counterpart in {base.id})"
            continue
        theirs.remove(other)
        changes = semantic_diff(other.body, resource.body)
        if not changes:
            continue
        title = str(resource.key)
        if other.key != resource.key:
            title += f" (vs {other.key.name})"
        yield f"~ {title}"
        for change in changes:
            for line in change.lines():
                yield _clipped("    " + line)
    for other in theirs:
        yield f"- {other.key} (only in {base.id})"


def _counterpart(resource: Resource, theirs: list[Resource]) -> Resource | None:
    key = resource.key
    for same in (
        lambda k: k == key,
        lambda k: (k.group, k.kind, k.name) == (key.group, key.kind, key.name),
        lambda k: (k.group, k.kind) == (key.group, key.kind),
    ):
        for other in theirs:
            if same(other.key):
                return other
    return None


def _clipped(line: str) -> str:
    return line if len(line) <= LINE_WIDTH else line[: LINE_WIDTH - 1] + "…"
