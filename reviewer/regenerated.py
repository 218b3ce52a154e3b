"""Fields a chart regenerates on every render (`randAlphaNum`, `genCA`, `uuidv4`, `now`, ...).

Such a field differs between the sides whatever the change, so comparing it
says nothing. Only releases whose objects differ between the sides are looked
at: the head side's release is rendered a second time with identical inputs
(bypassing the render cache), and every field that differs between the two
head renders is regenerated. The diff lists those fields instead of showing
them as changes. An added release that has a sibling (the same deployment and
release on another cluster) is rendered twice too: the report compares it with
that sibling and leaves its regenerated fields out of the differences.

A regenerated field can still change for real (a longer password, another
user in a generated connection string). The only parts of it that can be
compared are the lines both head renders share (lines of an encoded payload,
such as a PEM body, excepted): when the target branch lacks one of them, the
field is reported as one that cannot be compared.

Values never leave this module: it hands on paths and flags only.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reviewer import decode
from reviewer.model import ReleaseId, RenderedRelease, Resource, ResourceKey, Snapshot
from reviewer.semantic import Path, Select, semantic_diff

RenderAgain = Callable[[Sequence[ReleaseId]], Mapping[ReleaseId, RenderedRelease]]
"""Renders the head side's releases once more, cache bypassed."""

ObjectId = tuple[ReleaseId, ResourceKey]


@dataclass(frozen=True)
class RegeneratedField:
    """A field the chart regenerates; `comparable` is False when its stable parts changed."""

    path: Path
    comparable: bool = True


@dataclass(frozen=True)
class Regeneration:
    """What the second renders found, per object of the head side."""

    fields: Mapping[ObjectId, tuple[RegeneratedField, ...]] = field(default_factory=dict)
    only: frozenset[ObjectId] = frozenset()
    """Objects whose every unredacted difference is a comparable regenerated field."""

    def at(self, release: ReleaseId, key: ResourceKey) -> tuple[RegeneratedField, ...]:
        """The regenerated fields of one object (none when it renders the same every time)."""
        return self.fields.get((release, key), ())

    def __bool__(self) -> bool:
        return bool(self.fields)


def publishable(regeneration: Regeneration, shown: Snapshot) -> Regeneration:
    """Only entries whose release, object and path exist in the published (twin) snapshot.

    Regeneration is found on the real renders; a name, key or list selector derived from a
    secret differs in the twin form, so such an entry is dropped rather than published.
    """
    bodies = {
        (release.id, resource.key): resource.body
        for release in shown.releases
        for resource in release.resources
    }
    fields = {
        object_id: kept
        for object_id, found in regeneration.fields.items()
        if object_id in bodies
        and (kept := tuple(f for f in found if _at(bodies[object_id], f.path) is not _ABSENT))
    }
    whole = {o for o, kept in fields.items() if len(kept) == len(regeneration.fields[o])}
    return Regeneration(fields, frozenset(o for o in regeneration.only if o in whole))


def differing_releases(base: Snapshot, head: Snapshot) -> list[ReleaseId]:
    """Releases rendered on both sides whose objects differ: the only ones worth a re-render."""
    old = base.by_id()
    found = []
    for release in head.releases:
        before = old.get(release.id)
        if before is None or before.error is not None or release.error is not None:
            continue
        if _contents(before.resources) != _contents(release.resources):
            found.append(release.id)
    return found


def siblings(base: Snapshot, head: Snapshot) -> dict[ReleaseId, list[RenderedRelease]]:
    """Added releases whose deployment and release exist on other clusters on both sides,
    with those: the report compares each with one of them, where regenerated fields would
    show as differences."""
    old = base.by_id()
    by_name: dict[tuple[str, str], list[RenderedRelease]] = {}
    for release in head.releases:
        if release.error is None:
            by_name.setdefault((release.id.deployment, release.id.release), []).append(release)
    found: dict[ReleaseId, list[RenderedRelease]] = {}
    for same in by_name.values():
        for release in same:
            if release.id in old:
                continue
            # Only releases on both sides are candidates the report compares with.
            others = [o for o in same if o.id.cluster != release.id.cluster and o.id in old]
            if others:
                found[release.id] = others
    return found


def _contents(resources: Iterable[Resource]) -> list[tuple[ResourceKey, Any]]:
    return [(resource.key, resource.body) for resource in resources]


def find_regenerated(base: Snapshot, head: Snapshot, again: RenderAgain) -> Regeneration:
    """Render each differing release of `head` again and find the fields that came out anew."""
    wanted = differing_releases(base, head)
    added = siblings(base, head)
    if not wanted and not added:
        return Regeneration()
    second = again([*wanted, *added])
    old, new = base.by_id(), head.by_id()
    fields: dict[ObjectId, tuple[RegeneratedField, ...]] = {}
    only: set[ObjectId] = set()
    for rid in wanted:
        rerun = second.get(rid)
        if rerun is None or rerun.error is not None:
            continue
        for key, found, alone in _release_fields(old[rid], new[rid], rerun):
            fields[(rid, key)] = found
            if alone:
                only.add((rid, key))
    for rid, others in added.items():
        rerun = second.get(rid)
        if rerun is not None and rerun.error is None:
            fields.update(_added_fields(new[rid], rerun, others))
    return Regeneration(fields, frozenset(only))


def _added_fields(
    head: RenderedRelease, rerun: RenderedRelease, others: Sequence[RenderedRelease]
) -> Iterable[tuple[ObjectId, tuple[RegeneratedField, ...]]]:
    """The fields of an added release that differ between its two renders: only the
    comparison with a sibling uses them (an added object has nothing to compare with).
    `comparable` is False when a sibling lacks lines both renders share (a real difference)."""
    seconds = _first_by_key(rerun.resources)
    theirs = [_first_by_key(other.resources) for other in others]
    for key, first in _first_by_key(head.resources).items():
        second = seconds.get(key)
        if second is None:
            continue
        paths = [change.path for change in semantic_diff(first.body, second.body)]
        secret = first.body.get("kind") == "Secret"
        bodies = [found[key].body for found in theirs if key in found]
        if paths:
            yield (
                (head.id, key),
                tuple(
                    RegeneratedField(
                        path,
                        all(_comparable(b, first.body, second.body, path, secret) for b in bodies),
                    )
                    for path in paths
                ),
            )


def _first_by_key(resources: Iterable[Resource]) -> dict[ResourceKey, Resource]:
    found: dict[ResourceKey, Resource] = {}
    for resource in resources:
        found.setdefault(resource.key, resource)
    return found


def _release_fields(
    base: RenderedRelease, head: RenderedRelease, rerun: RenderedRelease
) -> Iterable[tuple[ResourceKey, tuple[RegeneratedField, ...], bool]]:
    """Per object present on both sides: its regenerated fields, and whether that is all."""
    olds, seconds = _first_by_key(base.resources), _first_by_key(rerun.resources)
    for key, first in _first_by_key(head.resources).items():
        before, second = olds.get(key), seconds.get(key)
        if before is None or second is None:
            continue
        paths = [change.path for change in semantic_diff(first.body, second.body)]
        if not paths:
            continue
        secret = first.body.get("kind") == "Secret"
        found = tuple(
            RegeneratedField(path, _comparable(before.body, first.body, second.body, path, secret))
            for path in paths
        )
        covered = {item.path for item in found if item.comparable}
        real = semantic_diff(before.body, first.body)
        yield key, found, all(change.path in covered for change in real)


_ABSENT = object()


def _at(body: Any, path: Path) -> Any:
    node = body
    for segment in path:
        if isinstance(segment, Select):
            items = node if isinstance(node, list) else []
            matches = [
                item
                for item in items
                if isinstance(item, Mapping) and str(item.get(segment.field)) == segment.value
            ]
            if not matches:
                return _ABSENT
            node = matches[0]
        elif isinstance(segment, int):
            if not isinstance(node, list) or segment >= len(node):
                return _ABSENT
            node = node[segment]
        else:
            if not isinstance(node, Mapping) or segment not in node:
                return _ABSENT
            node = node[segment]
    return node


def _comparable(before: Any, first: Any, second: Any, path: Path, secret: bool) -> bool:
    """Whether the target branch's value keeps every line both head renders share."""
    old, new, again = _at(before, path), _at(first, path), _at(second, path)
    if old is _ABSENT or new is _ABSENT or again is _ABSENT:
        return True  # an added or removed field is an ordinary change, shown as such
    if type(old) is not type(new):
        return False
    if not isinstance(old, str) or not isinstance(new, str) or not isinstance(again, str):
        return True
    encoded = secret and path[:1] == ("data",)
    texts = [_decoded(text) if encoded else text for text in (old, new, again)]
    stable = _lines(texts[1]) & _lines(texts[2])
    return stable <= _lines(texts[0])


# A line of an encoded payload (a PEM body): certificates of one template share such lines
# by structure whenever their lengths align, so they say nothing about a real change.
_ENCODED_LINE = re.compile(r"[A-Za-z0-9+/]+={0,2}")


def _lines(text: str) -> set[str]:
    return {line for line in text.splitlines() if not _ENCODED_LINE.fullmatch(line)}


def _decoded(text: str) -> str:
    try:
        return base64.b64decode(text, validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return text


# --- JSON (saved review bundles, merged from CI shards) ----------------------------------------


def _segment_json(segment: Any) -> Any:
    if isinstance(segment, Select):
        return {"field": segment.field, "value": segment.value}
    return segment


def to_json(regeneration: Regeneration) -> list[dict[str, Any]]:
    """One entry per object: release, key, whether that is all, and each field's path."""
    return [
        {
            "release": str(rid),
            "key": [key.group, key.kind, key.namespace, key.name],
            "only": (rid, key) in regeneration.only,
            "fields": [
                {"path": [_segment_json(s) for s in item.path], "comparable": item.comparable}
                for item in fields
            ],
        }
        for (rid, key), fields in sorted(regeneration.fields.items())
    ]


def from_json(value: object, at: decode.Field) -> Regeneration:
    """Read back what `to_json` wrote; errors name the file and field."""
    fields: dict[ObjectId, tuple[RegeneratedField, ...]] = {}
    only: set[ObjectId] = set()
    for index, item in enumerate(decode.sequence(value, at)):
        where = at.index(index)
        data = decode.mapping(item, where)
        rid = _release_id(decode.required(data, "release", where, decode.string), where)
        parts = decode.required(data, "key", where, decode.strings)
        if len(parts) != 4:
            raise where.key("key").error("must list group, kind, namespace and name")
        key = ResourceKey(*parts)
        entries = decode.required(data, "fields", where, decode.sequence)
        fields[(rid, key)] = tuple(
            _field(entry, where.key("fields").index(i)) for i, entry in enumerate(entries)
        )
        if decode.optional(data, "only", where, decode.boolean, False):
            only.add((rid, key))
    return Regeneration(fields, frozenset(only))


def _release_id(text: str, at: decode.Field) -> ReleaseId:
    parts = text.rsplit("/", 2)
    if len(parts) != 3:
        raise at.key("release").error("must be a release id: cluster/deployment/release")
    return ReleaseId(*parts)


def _field(value: object, at: decode.Field) -> RegeneratedField:
    data = decode.mapping(value, at)
    segments = decode.required(data, "path", at, decode.sequence)
    path = tuple(_segment(segment, at.key("path").index(i)) for i, segment in enumerate(segments))
    return RegeneratedField(path, decode.optional(data, "comparable", at, decode.boolean, True))


def _segment(value: object, at: decode.Field) -> str | int | Select:
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return value
    data = decode.mapping(value, at)
    return Select(
        decode.required(data, "field", at, decode.string),
        decode.required(data, "value", at, decode.string),
    )


def merge(parts: Iterable[Regeneration]) -> Regeneration:
    """One regeneration from CI shards (each shard holds whole clusters)."""
    fields: dict[ObjectId, tuple[RegeneratedField, ...]] = {}
    only: set[ObjectId] = set()
    for part in parts:
        fields.update(part.fields)
        only |= part.only
    return Regeneration(fields, frozenset(only))
