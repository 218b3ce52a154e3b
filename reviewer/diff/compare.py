"""Put a comparison together: pair releases and objects, diff each pair, group repeated changes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from reviewer.diff.options import DiffOptions, HiddenChanges, resolve_differ
from reviewer.diff.pairing import Pair, Pairing, is_failed, pair_all
from reviewer.diff.resource import ResourceDiff, ResourceStatus
from reviewer.diff.result import (
    ChangeGroup,
    DiffSide,
    Failure,
    ReleaseDiff,
    ReleaseStatus,
    SnapshotDiff,
    release_meta,
)
from reviewer.diff.split import diff_pairs
from reviewer.diff.views import Settings, diff_one_side, diff_pair
from reviewer.model import WHOLE_DEPLOYMENT, ReleaseId, RenderedRelease, ResourceKey, Snapshot
from reviewer.regenerated import Regeneration


def diff_snapshots(
    base: Snapshot,
    head: Snapshot,
    *,
    options: DiffOptions,
    hidden: HiddenChanges = frozenset(),
    regeneration: Regeneration | None = None,
    jobs: int = 1,
) -> SnapshotDiff:
    """Pair releases and objects of two snapshots and describe every difference.

    `hidden` names objects whose only change is invisible after redaction: they
    are reported as changed with a note instead of being dropped as identical.
    `regeneration` names fields the chart regenerates on every render: listed, not compared.
    With `jobs` 2 or more, many changed objects are diffed in two processes.
    """
    settings = Settings(
        options, resolve_differ(options.differ), hidden, regeneration or Regeneration()
    )
    old = {**base.by_id(), **_stand_ins(base, head.by_id())}
    new = {**head.by_id(), **_stand_ins(head, old)}
    pairings, pairs = pair_all(old, new, rename_threshold=options.rename_threshold)
    per_release, unchanged, renewed = _collect(pairings, pairs, settings, jobs)
    releases = tuple(
        _release_diff(
            rid,
            old.get(rid),
            new.get(rid),
            per_release.get(rid, []),
            unchanged[rid],
            tuple(renewed.get(rid, ())),
        )
        for rid in pairings
    )
    return SnapshotDiff(
        releases=releases,
        groups=group_changes(releases),
        failures=_failures(base, DiffSide.BASE) + _failures(head, DiffSide.HEAD),
        differ=settings.differ,
    )


def _stand_ins(
    side: Snapshot, other: Mapping[ReleaseId, RenderedRelease]
) -> dict[ReleaseId, RenderedRelease]:
    """Failed stand-ins for releases hidden by a whole-deployment failure on `side`.

    Without them, the releases of a deployment whose deployment.yaml broke would
    look removed (or added) instead of unknown.
    """
    broken = {
        (release.id.cluster, release.id.deployment): release
        for release in side.releases
        if release.id.release == WHOLE_DEPLOYMENT and release.error is not None
    }
    stand_ins: dict[ReleaseId, RenderedRelease] = {}
    for rid, release in other.items():
        # A source that failed as a whole (a generator) fails under deployment `*`.
        failure = broken.get((rid.cluster, rid.deployment)) or broken.get(
            (rid.cluster, WHOLE_DEPLOYMENT)
        )
        if failure is not None and rid.release != WHOLE_DEPLOYMENT:
            stand_ins[rid] = RenderedRelease(
                id=rid,
                namespace=release.namespace,
                error=_not_rendered(failure.id, rid),
                reproduce=failure.reproduce,
            )
    return stand_ins


def _not_rendered(failure: ReleaseId, rid: ReleaseId) -> str:
    if failure.deployment == WHOLE_DEPLOYMENT:
        return f"not rendered: source {failure.cluster} failed as a whole"
    return f"not rendered: deployment {rid.deployment} failed as a whole"


def _collect(
    pairings: Mapping[ReleaseId, Pairing], pairs: list[Pair], settings: Settings, jobs: int
) -> tuple[
    dict[ReleaseId, list[ResourceDiff]], Counter[ReleaseId], dict[ReleaseId, list[ResourceDiff]]
]:
    """Object diffs per release (a move under both owners), counts of unchanged objects,
    and objects whose only differences are regenerated fields (counted as unchanged).
    `jobs` 2 or more may diff many changed objects in two processes (reviewer/diff/split.py)."""
    per_release: dict[ReleaseId, list[ResourceDiff]] = {}
    unchanged: Counter[ReleaseId] = Counter()
    renewed: dict[ReleaseId, list[ResourceDiff]] = {}
    matched = [
        Pair(ResourceStatus.CHANGED, rid, old, rid, new)
        for rid, pairing in pairings.items()
        for old, new in pairing.matched
    ]
    diffs = iter(diff_pairs(matched, settings, jobs=jobs))
    for rid, pairing in pairings.items():
        mine = per_release.setdefault(rid, [])
        for _ in pairing.matched:
            diff = next(diffs)
            if diff is None or diff.regenerated_only:
                unchanged[rid] += 1
                if diff is not None:
                    renewed.setdefault(rid, []).append(diff)
            else:
                mine.append(diff)
        for status, resources in (
            (ResourceStatus.REMOVED, pairing.removed),
            (ResourceStatus.ADDED, pairing.added),
        ):
            mine.extend(diff_one_side(status, rid, r, settings) for r in resources)
    for pair in pairs:
        found = diff_pair(pair, settings)
        assert found is not None, "moves and renames always produce a diff"
        for owner in dict.fromkeys((pair.base_id, pair.head_id)):
            per_release.setdefault(owner, []).append(found)
    return per_release, unchanged, renewed


def _release_diff(
    rid: ReleaseId,
    base: RenderedRelease | None,
    head: RenderedRelease | None,
    resources: list[ResourceDiff],
    unchanged: int,
    regenerated: tuple[ResourceDiff, ...],
) -> ReleaseDiff:
    ordered = tuple(sorted(resources, key=lambda diff: (diff.key, diff.status.value)))
    return ReleaseDiff(
        id=rid,
        status=_release_status(base, head, ordered),
        base=base,
        head=head,
        resources=ordered,
        unchanged=unchanged,
        regenerated=regenerated,
    )


def _release_status(
    base: RenderedRelease | None, head: RenderedRelease | None, resources: tuple[ResourceDiff, ...]
) -> ReleaseStatus:
    if is_failed(base) or is_failed(head):
        return ReleaseStatus.ERROR
    if base is None:
        return ReleaseStatus.ADDED
    if head is None:
        return ReleaseStatus.REMOVED
    if resources or release_meta(base) != release_meta(head):
        return ReleaseStatus.CHANGED
    return ReleaseStatus.UNCHANGED


def _failures(snapshot: Snapshot, side: DiffSide) -> tuple[Failure, ...]:
    found = [
        Failure(side, release.id, release.error, release.reproduce, release.helm_command)
        for release in snapshot.releases
        if release.error is not None
    ]
    found.extend(Failure(side, None, message) for message in snapshot.errors)
    return tuple(found)


def _group_identity(diff: ResourceDiff) -> tuple[str, ...]:
    key = diff.key
    if diff.status is ResourceStatus.CHANGED and diff.changes and diff.dyff is None:
        return (diff.status.value, key.group, key.kind, *(str(c) for c in diff.changes))
    return (diff.status.value, key.group, key.kind, key.name, diff.body)


def group_changes(releases: Iterable[ReleaseDiff]) -> tuple[ChangeGroup, ...]:
    """Identical changes listed once with every (release, object) they apply to.

    Changed objects group by kind and their path-level changes, so one value
    edit that touches differently named objects in many releases shows once;
    added and removed objects group by kind, name and diff body. Routine-only
    diffs are left out: they are counted per release instead.
    """
    members: dict[tuple[str, ...], list[tuple[ReleaseId, ResourceKey]]] = {}
    examples: dict[tuple[str, ...], ResourceDiff] = {}
    for release in releases:
        for diff in release.resources:
            if diff.routine_only or diff.release != release.id:
                continue
            key = diff.key
            ident = _group_identity(diff)
            members.setdefault(ident, []).append((release.id, key))
            examples.setdefault(ident, diff)
    return tuple(
        ChangeGroup(
            status=example.status,
            group=example.key.group,
            kind=example.key.kind,
            name=example.key.name,
            body=example.body,
            changes=example.changes,
            members=tuple(members[ident]),
            example=example,
        )
        for ident, example in examples.items()
    )
