"""The path-level view: which leaves changed, how lists are matched, how changes read."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from reviewer.semantic import (
    ChangeKind,
    PathChange,
    Select,
    format_path,
    list_key,
    semantic_diff,
)


def lines(before: Any, after: Any) -> list[str]:
    return [str(change) for change in semantic_diff(before, after)]


def test_scalar_changes_read_like_a_review() -> None:
    before = {"spec": {"replicas": 2, "paused": False, "image": "a"}}
    after = {"spec": {"replicas": 3, "paused": True, "image": "b"}}
    assert lines(before, after) == [
        "spec.replicas: 2 → 3",
        "spec.paused: false → true",
        'spec.image: "a" → "b"',
    ]


def test_added_and_removed_maps_are_listed_leaf_by_leaf() -> None:
    before = {"metadata": {"name": "x", "annotations": {"old": "1"}}}
    after = {"metadata": {"name": "x", "labels": {"app": "x", "tier": "web"}}}
    assert lines(before, after) == [
        'metadata.annotations.old: removed "1"',
        'metadata.labels.app: added "x"',
        'metadata.labels.tier: added "web"',
    ]


def test_type_changes_are_modifications() -> None:
    assert lines({"a": 1}, {"a": "1"}) == ['a: 1 → "1"']
    assert lines({"a": 1}, {"a": True}) == ["a: 1 → true"]
    assert lines({"a": {"b": 1}}, {"a": [1]}) == ['a: {"b": 1} → [1]']


def test_lists_are_matched_by_name_then_key_then_id() -> None:
    before = {"containers": [{"name": "web", "image": "a"}, {"name": "side", "image": "s"}]}
    after = {"containers": [{"name": "web", "image": "b"}, {"name": "init", "image": "i"}]}
    assert lines(before, after) == [
        'containers[name=side]: removed {"name": "side", "image": "s"}',
        'containers[name=web].image: "a" → "b"',
        'containers[name=init]: added {"name": "init", "image": "i"}',
    ]
    items = [{"key": "k1", "path": "p"}]
    assert lines({"items": items}, {"items": [{"key": "k1", "path": "q"}]}) == [
        'items[key=k1].path: "p" → "q"'
    ]
    assert list_key([{"id": 1}], [{"id": 2}]) == "id"


def test_lists_fall_back_to_positions() -> None:
    # One item lacks `name`, and duplicate names cannot identify items either.
    assert list_key([{"name": "a"}], [{"image": "b"}]) is None
    assert list_key([{"name": "a"}, {"name": "a"}], []) is None
    assert lines({"args": ["a", "b"]}, {"args": ["a", "c", "d"]}) == [
        'args[1]: "b" → "c"',
        'args[2]: added "d"',
    ]


def test_reordered_keyed_list_reports_the_order() -> None:
    before = {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
    after = {"env": [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]}
    assert lines(before, after) == ["env: order changed [A, B] → [B, A]"]


def test_multiline_text_gets_a_line_diff() -> None:
    before = {"data": {"app.conf": "a = 1\nb = 2\nc = 3\n"}}
    after = {"data": {"app.conf": "a = 1\nb = 20\nc = 3\n"}}
    assert lines(before, after) == [
        'data["app.conf"]: text changed\n'
        "    @@ -1,3 +1,3 @@\n"
        "     a = 1\n"
        "    -b = 2\n"
        "    +b = 20\n"
        "     c = 3"
    ]
    assert lines({}, {"script": "x\ny\n"}) == ["script: added\n    + x\n    + y"]


def test_paths_quote_keys_that_would_be_ambiguous() -> None:
    path = ("metadata", "labels", "app.kubernetes.io/name")
    assert format_path(path) == 'metadata.labels["app.kubernetes.io/name"]'
    assert format_path(("spec", "containers", Select("name", "web"), "ports", 0)) == (
        "spec.containers[name=web].ports[0]"
    )
    assert format_path(("x", Select("name", "a.b"))) == 'x[name="a.b"]'
    assert format_path(()) == "(object)"
    assert str(PathChange((), ChangeKind.REMOVED)) == "(object): removed"


# --- properties ----------------------------------------------------------------------------------

_keys = st.text("abc", min_size=1, max_size=2)
_leaf = st.one_of(st.integers(-3, 3), st.text("xy", max_size=2), st.booleans(), st.none())
_tree = st.recursive(_leaf, lambda inner: st.dictionaries(_keys, inner, max_size=3), max_leaves=10)
_maps = st.dictionaries(_keys, _tree, max_size=4)
_json = st.recursive(
    _leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_keys, inner, max_size=3)),
    max_leaves=12,
)


def flatten(value: Any, path: tuple[Any, ...] = ()) -> dict[tuple[Any, ...], Any]:
    """Leaves of a tree of maps: every value that is not a non-empty map."""
    if isinstance(value, dict) and value:
        found: dict[tuple[Any, ...], Any] = {}
        for key, item in value.items():
            found.update(flatten(item, (*path, key)))
        return found
    return {path: value}


def apply(document: dict[str, Any], changes: list[PathChange]) -> dict[str, Any]:
    """Apply map-only changes to a copy of `document`."""
    result = copy.deepcopy(document)
    for change in changes:
        *parents, last = change.path
        target: dict[Any, Any] = result
        for key in parents:
            target = target.setdefault(key, {})
        if change.kind is ChangeKind.REMOVED:
            del target[last]
        else:
            target[last] = change.after
    return result


def without_empty_maps(value: Any) -> Any:
    # Removing the last leaf of a map reads the same whether the map stays empty or goes.
    if isinstance(value, dict):
        pruned = {k: without_empty_maps(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if v != {}}
    return value


@settings(max_examples=300, deadline=None)
@given(_maps, _maps)
def test_semantic_diff_lists_exactly_the_changed_leaves(before: Any, after: Any) -> None:
    changes = semantic_diff(before, after)
    # Applied to the base, the changes give the head: nothing is missing.
    assert without_empty_maps(apply(before, changes)) == without_empty_maps(after)
    # And nothing extra: no leaf that is the same on both sides is reported.
    old, new = flatten(before), flatten(after)
    unchanged = {path for path in old.keys() & new.keys() if _same(old[path], new[path])}
    for change in changes:
        assert not any(path[: len(change.path)] == change.path for path in unchanged)


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


@settings(max_examples=200, deadline=None)
@given(_json)
def test_a_document_compared_with_itself_has_no_changes(value: Any) -> None:
    assert semantic_diff(value, value) == []


@settings(max_examples=200, deadline=None)
@given(_maps, _maps)
def test_every_change_kind_carries_the_values_it_names(before: Any, after: Any) -> None:
    for change in semantic_diff(before, after):
        if change.kind is ChangeKind.ADDED:
            assert change.before is None
        if change.kind is ChangeKind.REMOVED:
            assert change.after is None
        if change.kind is ChangeKind.MODIFIED:
            assert not _same(change.before, change.after)
