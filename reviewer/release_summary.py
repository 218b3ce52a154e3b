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
from reviewer.regenerated import Regeneration
from reviewer.semantic import Path, format_path, semantic_diff

DIFFERENCE_LINES = 40
"""Lines of the compact difference shown against the most resembling release."""
LINE_WIDTH = 160
UNCOMPARABLE = "regenerated on every render, and lines both renders share differ too"
"""A regenerated field whose stable part differs from the sibling's (value never shown)."""
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
    regenerated: int = 0
    """Differing fields left out because a chart regenerates them on every render."""


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


def summaries(
    diff: SnapshotDiff, regeneration: Regeneration | None = None
) -> dict[ReleaseId, ReleaseSummary]:
    """A summary of every added and removed release of `diff`; fields `regeneration` found
    regenerated (on the added release or its sibling) are no difference from the sibling."""
    regeneration = regeneration or Regeneration()
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
            resembles = most_resembling(side, existing, regeneration)
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
    added: RenderedRelease,
    existing: Sequence[RenderedRelease],
    regeneration: Regeneration | None = None,
) -> Resemblance | None:
    """The existing release most like `added` among the same deployment and release on other
    clusters, with a compact path-level difference (regenerated fields left out)."""
    candidates = _candidates(added, existing)
    if not candidates:
        return None
    text = _text(added)
    scored = [(similarity(_text(other), text), other) for other in candidates]
    top = max(score for score, _ in scored)
    score, best = next(item for item in scored if item[0] >= top - NEAR_TIE)
    skipped: list[Path] = []
    lines = list(_differences(best, added, regeneration or Regeneration(), skipped))
    return Resemblance(
        best.id,
        score,
        tuple(lines[:DIFFERENCE_LINES]),
        max(0, len(lines) - DIFFERENCE_LINES),
        len(skipped),
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


def _differences(
    base: RenderedRelease, added: RenderedRelease, regeneration: Regeneration, skipped: list[Path]
) -> Iterable[str]:
    """Path-level differences, object by object; objects pair by kind, namespace and name,
    else by kind and name, else by kind and position. Fields regenerated on every render
    (on either release) go to `skipped`: they differ whatever the inputs."""
    theirs = list(base.resources)
    for resource in added.resources:
        other = _counterpart(resource, theirs)
        if other is None:
            yield f"+ {resource.key} (no counterpart in {base.id})"
            continue
        theirs.remove(other)
        mine = regeneration.at(added.id, resource.key)
        renewed = {item.path for item in (*mine, *regeneration.at(base.id, other.key))}
        differing = {item.path for item in mine if not item.comparable}
        found = semantic_diff(other.body, resource.body)
        skipped.extend(c.path for c in found if c.path in renewed and c.path not in differing)
        changes = [change for change in found if change.path not in renewed]
        noted = [change.path for change in found if change.path in differing]
        if not changes and not noted:
            continue
        title = str(resource.key)
        if other.key != resource.key:
            title += f" (vs {other.key.name})"
        yield f"~ {title}"
        for change in changes:
            for line in change.lines():
                yield _clipped("    " + line)
        for path in noted:
            # Never the value: a regenerated field is often a password.
            yield _clipped(f"    {format_path(path)}: {UNCOMPARABLE}")
    for other in theirs:
        yield f"- {other.key} (only in {base.id})"


def _regenerated_paths(
    regeneration: Regeneration, release: ReleaseId, key: ResourceKey
) -> set[Path]:
    return {item.path for item in regeneration.at(release, key)}


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
