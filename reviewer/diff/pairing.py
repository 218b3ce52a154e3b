"""Pairing: which object on the base side is compared with which on the head side.

Objects pair by key within a release; what is left over pairs as a move (same
key, another release of the same cluster) or a rename (same release, nearly the
same YAML under another name). Nothing here changes its inputs: each step
returns the pairs it found and what is left.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from reviewer import yamlio
from reviewer.diff.resource import ResourceStatus
from reviewer.model import ReleaseId, RenderedRelease, Resource, ResourceKey


@dataclass(frozen=True)
class Pairing:
    """Objects of one release: matched by key, and what is left on each side."""

    matched: tuple[tuple[Resource, Resource], ...] = ()
    removed: tuple[Resource, ...] = ()
    added: tuple[Resource, ...] = ()


@dataclass(frozen=True)
class Pair:
    """Two objects to compare, with their owners (different owners make a move)."""

    status: ResourceStatus
    base_id: ReleaseId
    base: Resource
    head_id: ReleaseId
    head: Resource
    similarity: float | None = None


def pair_all(
    old: Mapping[ReleaseId, RenderedRelease],
    new: Mapping[ReleaseId, RenderedRelease],
    *,
    rename_threshold: float,
) -> tuple[dict[ReleaseId, Pairing], list[Pair]]:
    """Pair every release's objects, then moves, then renames.

    Returns what is left per release (in release order) and the moves and renames found.
    """
    ids = sorted(old.keys() | new.keys())
    pairings = {rid: pair_release(old.get(rid), new.get(rid)) for rid in ids}
    pairs, pairings = find_moves(pairings)
    left: dict[ReleaseId, Pairing] = {}
    for rid, pairing in pairings.items():
        renames, left[rid] = find_renames(rid, pairing, rename_threshold)
        pairs.extend(renames)
    return left, pairs


def pair_release(base: RenderedRelease | None, head: RenderedRelease | None) -> Pairing:
    """Objects of one release paired by key; a failed side pairs nothing."""
    if is_failed(base) or is_failed(head):
        # A failed side has no objects to compare; nothing of it may count as removed.
        return Pairing()
    if not (base and base.resources) and not (head and head.resources):
        return Pairing()  # e.g. unrendered stand-ins: a fleet's worth of them
    old = _by_key(base.resources if base else ())
    new = _by_key(head.resources if head else ())
    return Pairing(
        matched=tuple((old[key], new[key]) for key in sorted(old.keys() & new.keys())),
        removed=tuple(old[key] for key in sorted(old.keys() - new.keys())),
        added=tuple(new[key] for key in sorted(new.keys() - old.keys())),
    )


def is_failed(release: RenderedRelease | None) -> bool:
    """A release that exists on this side but did not render."""
    return release is not None and release.error is not None


def _by_key(resources: Iterable[Resource]) -> dict[tuple[ResourceKey, int], Resource]:
    # A chart may render one identity twice; pair the copies in order rather than drop one.
    seen: Counter[ResourceKey] = Counter()
    keyed: dict[tuple[ResourceKey, int], Resource] = {}
    for resource in resources:
        keyed[(resource.key, seen[resource.key])] = resource
        seen[resource.key] += 1
    return keyed


def find_moves(
    pairings: Mapping[ReleaseId, Pairing],
) -> tuple[list[Pair], dict[ReleaseId, Pairing]]:
    """Pair objects that leave one release and arrive in another of the same cluster.

    Returns the moves and the pairings without the moved objects (same release order).
    """
    leaving: dict[tuple[str, ResourceKey], list[tuple[ReleaseId, Resource]]] = {}
    for release_id, pairing in sorted(pairings.items()):
        for resource in pairing.removed:
            where = (release_id.cluster, resource.key)
            leaving.setdefault(where, []).append((release_id, resource))
    moves: list[Pair] = []
    for release_id, pairing in sorted(pairings.items()):
        for resource in pairing.added:
            sources = leaving.get((release_id.cluster, resource.key))
            if sources:
                source_id, source = sources.pop(0)
                moves.append(Pair(ResourceStatus.MOVED, source_id, source, release_id, resource))
    # By owner and object identity: releases that rendered alike share their objects.
    taken = {(pair.base_id, id(pair.base)) for pair in moves}
    taken |= {(pair.head_id, id(pair.head)) for pair in moves}
    rest = {
        rid: replace(
            pairing,
            removed=tuple(r for r in pairing.removed if (rid, id(r)) not in taken),
            added=tuple(r for r in pairing.added if (rid, id(r)) not in taken),
        )
        for rid, pairing in pairings.items()
    }
    return moves, rest


def find_renames(
    release_id: ReleaseId, pairing: Pairing, threshold: float
) -> tuple[list[Pair], Pairing]:
    """Pair removed and added objects of one release that differ (almost) only in name.

    Returns the renames and the pairing without the renamed objects.
    """
    renames: list[Pair] = []
    used_old: set[int] = set()
    used_new: set[int] = set()
    for score, i, j in _rename_candidates(pairing, threshold):
        if i not in used_old and j not in used_new:
            used_old.add(i)
            used_new.add(j)
            old, new = pairing.removed[i], pairing.added[j]
            renames.append(Pair(ResourceStatus.RENAMED, release_id, old, release_id, new, score))
    rest = replace(
        pairing,
        removed=tuple(r for i, r in enumerate(pairing.removed) if i not in used_old),
        added=tuple(r for j, r in enumerate(pairing.added) if j not in used_new),
    )
    return renames, rest


def _rename_candidates(pairing: Pairing, threshold: float) -> list[tuple[float, int, int]]:
    """(score, removed index, added index) of every pair alike enough, best first."""
    old_texts = [_nameless_text(resource) for resource in pairing.removed]
    new_texts = [_nameless_text(resource) for resource in pairing.added]
    scored: list[tuple[float, int, int]] = []
    for i, old in enumerate(pairing.removed):
        for j, new in enumerate(pairing.added):
            if _rename_compatible(old.key, new.key):
                score = similarity(old_texts[i], new_texts[j], floor=threshold)
                if score >= threshold:
                    scored.append((score, i, j))
    return sorted(scored, key=lambda item: (-item[0], item[1], item[2]))


def _rename_compatible(old: ResourceKey, new: ResourceKey) -> bool:
    return (old.group, old.kind, old.namespace) == (new.group, new.kind, new.namespace)


def _nameless_text(resource: Resource) -> str:
    metadata = {k: v for k, v in (resource.body.get("metadata") or {}).items() if k != "name"}
    return yamlio.dump({**resource.body, "metadata": metadata})


def similarity(a: str, b: str, *, floor: float = 0.0) -> float:
    """How alike two texts are, 0..1: difflib's ratio, matched line by line, then by character.

    Returns 0.0 early when the texts' lengths alone show the ratio is below `floor`.
    """
    total = len(a) + len(b)
    if total == 0:
        return 1.0
    if 2 * min(len(a), len(b)) / total < floor:
        return 0.0
    old, new = a.splitlines(keepends=True), b.splitlines(keepends=True)
    # A character-level matcher over whole manifests is quadratic (seconds for 20 kB); lines
    # first, then characters only inside replaced runs, gives nearly the same ratio quickly.
    matched = 0.0
    for tag, i1, i2, j1, j2 in _matcher(old, new).get_opcodes():
        if tag == "equal":
            matched += sum(len(line) for line in old[i1:i2])
        elif tag == "replace":
            matched += _matched_chars("".join(old[i1:i2]), "".join(new[j1:j2]))
    return 2 * matched / total


_CHAR_LIMIT = 4000


def _matched_chars(a: str, b: str) -> float:
    if len(a) + len(b) > _CHAR_LIMIT:
        return 0.0  # too long to compare by character: count as different (conservative)
    return _matcher(a, b).ratio() * (len(a) + len(b)) / 2


def _matcher(a: Sequence[str], b: Sequence[str]) -> difflib.SequenceMatcher[str]:
    # autojunk would treat frequent lines or characters as noise in longer inputs
    # and understate how alike two manifests are.
    return difflib.SequenceMatcher(None, a, b, autojunk=False)


def find_release_moves(
    old_ids: Iterable[ReleaseId], new_ids: Iterable[ReleaseId]
) -> list[tuple[ReleaseId, ReleaseId]]:
    """Releases on one side only that differ only in their deployment (group): moves.

    Each pairs at most once, in release order. Kraan layers do not need it: the
    `kraan` kind keeps the layer out of the identity (it is the `kraan/layer`
    label), so a release that changes layer pairs with itself.
    """
    old, new = set(old_ids), set(new_ids)
    arriving: dict[tuple[str, str], list[ReleaseId]] = {}
    for release_id in sorted(new - old):
        arriving.setdefault((release_id.cluster, release_id.release), []).append(release_id)
    moves = []
    for release_id in sorted(old - new):
        candidates = arriving.get((release_id.cluster, release_id.release))
        if candidates:
            moves.append((release_id, candidates.pop(0)))
    return moves
