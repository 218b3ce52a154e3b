"""Pairing objects across the two sides: by key, moves, renames; inputs stay as they were."""

from __future__ import annotations

import copy
from typing import Any

from reviewer.diff.pairing import (
    Pairing,
    find_moves,
    find_renames,
    pair_all,
    pair_release,
    similarity,
)
from reviewer.diff.resource import ResourceStatus
from reviewer.model import ReleaseId, RenderedRelease, Resource

WEB = ReleaseId("eu/prod-1", "shop", "web")
API = ReleaseId("eu/prod-1", "shop", "api")
US_WEB = ReleaseId("us/prod-1", "shop", "web")


def config_map(name: str, **data: str) -> Resource:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "shop"},
    }
    return Resource.from_body({**body, "data": dict(data)})


def rendered(rid: ReleaseId, *resources: Resource, error: str | None = None) -> RenderedRelease:
    return RenderedRelease(rid, namespace="shop", resources=resources, error=error)


def big_data() -> dict[str, str]:
    return {f"key{n}": f"a fairly long value number {n}" for n in range(20)}


def test_objects_pair_by_key_and_the_rest_is_added_or_removed() -> None:
    same, gone, new = config_map("same", a="1"), config_map("gone"), config_map("new")
    changed = config_map("same", a="2")
    pairing = pair_release(rendered(WEB, same, gone), rendered(WEB, changed, new))
    assert pairing == Pairing(matched=((same, changed),), removed=(gone,), added=(new,))


def test_a_release_that_failed_on_either_side_pairs_nothing() -> None:
    base = rendered(WEB, config_map("a"))
    assert pair_release(base, rendered(WEB, error="boom")) == Pairing()
    assert pair_release(rendered(WEB, error="boom"), base) == Pairing()


def test_an_identity_rendered_twice_pairs_its_copies_in_order() -> None:
    first, second = config_map("twice", a="1"), config_map("twice", a="2")
    pairing = pair_release(rendered(WEB, first, second), rendered(WEB, first, second))
    assert pairing.matched == ((first, first), (second, second))


def test_a_move_leaves_its_pairings_untouched_and_returns_what_is_left() -> None:
    moving = config_map("shared")
    pairings = {WEB: Pairing(removed=(moving,)), API: Pairing(added=(moving,))}
    before = copy.deepcopy(pairings)
    moves, rest = find_moves(pairings)
    assert [(m.status, m.base_id, m.head_id) for m in moves] == [(ResourceStatus.MOVED, WEB, API)]
    assert rest == {WEB: Pairing(), API: Pairing()}
    assert pairings == before


def test_moves_stay_within_one_cluster() -> None:
    moving = config_map("shared")
    moves, rest = find_moves({WEB: Pairing(removed=(moving,)), US_WEB: Pairing(added=(moving,))})
    assert moves == []
    assert rest[US_WEB].added == (moving,)


def test_a_move_in_one_cluster_keeps_the_same_object_added_in_another() -> None:
    # Releases that render alike share their object instances (the render cache).
    shared = config_map("shared")
    pairings = {
        API: Pairing(added=(shared,)),
        WEB: Pairing(removed=(config_map("shared"),)),
        US_WEB: Pairing(added=(shared,)),
    }
    moves, rest = find_moves(pairings)
    assert len(moves) == 1
    assert rest[US_WEB].added == (shared,)


def test_a_rename_pairs_near_identical_objects_and_leaves_the_unrelated() -> None:
    old, new = config_map("cfg-1a2b", **big_data()), config_map("cfg-3c4d", **big_data())
    unrelated = config_map("other", x="y")
    pairing = Pairing(removed=(old,), added=(new, unrelated))
    renames, rest = find_renames(WEB, pairing, 0.9)
    assert [(r.status, r.base, r.head) for r in renames] == [(ResourceStatus.RENAMED, old, new)]
    assert renames[0].similarity == 1.0
    assert rest == Pairing(added=(unrelated,))
    assert pairing.added == (new, unrelated), "the input pairing is unchanged"


def test_renames_take_the_best_match_first() -> None:
    data = big_data()
    old = config_map("cfg-old", **data)
    close = config_map("cfg-close", **{**data, "key0": "changed"})
    exact = config_map("cfg-exact", **data)
    renames, rest = find_renames(WEB, Pairing(removed=(old,), added=(close, exact)), 0.5)
    assert [r.head for r in renames] == [exact]
    assert rest.added == (close,)


def test_pair_all_finds_moves_before_renames_without_changing_the_releases() -> None:
    moving = config_map("moving", **big_data())
    old = {WEB: rendered(WEB, moving), API: rendered(API)}
    new = {WEB: rendered(WEB), API: rendered(API, moving)}
    snapshot: dict[Any, Any] = copy.deepcopy({**old})
    left, pairs = pair_all(old, new, rename_threshold=0.9)
    assert [p.status for p in pairs] == [ResourceStatus.MOVED]
    assert list(left) == [API, WEB], "in release order"
    assert all(p == Pairing() for p in left.values())
    assert old == snapshot


def test_similarity_bounds() -> None:
    assert similarity("", "") == 1.0
    assert similarity("a\nb\n", "a\nb\n") == 1.0
    assert similarity("x" * 10, "y") == 0.0
    assert 0.0 < similarity("a: 1\nb: 2\n", "a: 1\nb: 3\n") < 1.0
