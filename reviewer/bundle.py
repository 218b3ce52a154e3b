"""A rendered, redacted pair of sides saved to disk, so CI shards can be merged.

Layout: `DIR/base/` and `DIR/head/` (snapshots) plus `DIR/review.json` with
what the report needs besides the objects: refs, SHAs, warnings, noise rules.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from reviewer import decode, explain_json, regenerated
from reviewer import snapshot as snapshot_mod
from reviewer.diff.result import SnapshotDiff
from reviewer.errors import ReviewerError
from reviewer.explain import Explanation, FileImpact, NoEffect, Origin, ValueChange
from reviewer.model import ReleaseId, ResourceKey, Snapshot
from reviewer.noise import NoiseRules
from reviewer.regenerated import Regeneration
from reviewer.report import SideInfo
from reviewer.snapshot import Guard

BUNDLE_SCHEMA = "reviewer.bundle/v1"


@dataclass(frozen=True)
class RenderedPair:
    """Both sides rendered and redacted, with what the report needs about them."""

    base: Snapshot
    head: Snapshot
    base_info: SideInfo
    head_info: SideInfo
    warnings: tuple[str, ...]
    noise: NoiseRules
    explanation: Explanation = field(default_factory=Explanation)
    hidden: frozenset[tuple[ReleaseId, ResourceKey]] = frozenset()
    """Objects whose only change is a secret whose redacted form did not change."""
    regeneration: Regeneration = field(default_factory=Regeneration)
    """Fields the charts regenerate on every render: listed, never compared."""
    diff: SnapshotDiff | None = field(default=None, compare=False)
    """The diff, once computed (not saved: a merge diffs the combined sides again)."""


def save(pair: RenderedPair, root: Path, *, guard: Guard) -> None:
    """Write `pair` below `root` (every file passes `guard`)."""
    snapshot_mod.write(pair.base, root / "base", guard=guard)
    snapshot_mod.write(pair.head, root / "head", guard=guard)
    meta = {
        "schema": BUNDLE_SCHEMA,
        "base": {"ref": pair.base_info.ref, "sha": pair.base_info.sha},
        "head": {"ref": pair.head_info.ref, "sha": pair.head_info.sha},
        "warnings": list(pair.warnings),
        "noise": {
            "labels": list(pair.noise.labels),
            "annotations": list(pair.noise.annotations),
            "paths": [pattern.text for pattern in pair.noise.paths],
            "kinds": list(pair.noise.kinds),
            "chart-labels": pair.noise.chart_labels,
            "checksum-annotations": pair.noise.checksum_annotations,
        },
        "explain": explain_json.to_json(pair.explanation),
        "hidden": [
            [str(rid), key.group, key.kind, key.namespace, key.name]
            for rid, key in sorted(pair.hidden)
        ],
        "regenerated": regenerated.to_json(pair.regeneration),
    }
    text = json.dumps(meta, indent=2) + "\n"
    guard(text, "review.json")
    (root / "review.json").write_text(text, encoding="utf-8")


def load(root: Path) -> RenderedPair:
    """Read a pair written by `save`; a damaged review.json is an error naming file and field."""
    meta_file = root / "review.json"
    top = decode.Field(str(meta_file))
    meta = decode.mapping(decode.read_json(meta_file, source=top.file), top)
    decode.required(meta, "schema", top, _schema)
    pair = RenderedPair(
        base=snapshot_mod.read(root / "base"),
        head=snapshot_mod.read(root / "head"),
        base_info=decode.required(meta, "base", top, _side),
        head_info=decode.required(meta, "head", top, _side),
        warnings=decode.optional(meta, "warnings", top, decode.strings, ()),
        noise=NoiseRules.from_mapping(decode.optional_map(meta, "noise", top), source=top.file),
        explanation=decode.optional(meta, "explain", top, _explanation, Explanation()),
        hidden=decode.optional(meta, "hidden", top, _hidden, frozenset()),
        regeneration=decode.optional(
            meta, "regenerated", top, regenerated.from_json, Regeneration()
        ),
    )
    return _with_snapshot_ids(pair)


def _with_snapshot_ids(pair: RenderedPair) -> RenderedPair:
    """Release ids read back from text are ambiguous when both a cluster (`prod/eu`) and a
    directory of another kind (`overlays/prod`) hold slashes: take the snapshots' own."""
    known = {str(r.id): r.id for side in (pair.base, pair.head) for r in side.releases}
    hidden = frozenset((known.get(str(rid), rid), key) for rid, key in pair.hidden)
    explanation = explain_json.with_ids(pair.explanation, known)
    return replace(pair, explanation=explanation, hidden=hidden)


def _schema(value: object, at: decode.Field) -> str:
    if value != BUNDLE_SCHEMA:
        raise at.error(f"must be {BUNDLE_SCHEMA}: not a review bundle this version can read")
    return BUNDLE_SCHEMA


def _side(value: object, at: decode.Field) -> SideInfo:
    side = decode.mapping(value, at)
    ref = decode.required(side, "ref", at, decode.string)
    return SideInfo(ref, decode.optional(side, "sha", at, decode.string, None) or None)


def _hidden(value: object, at: decode.Field) -> frozenset[tuple[ReleaseId, ResourceKey]]:
    """`[[release id, group, kind, namespace, name], ...]`."""
    found: set[tuple[ReleaseId, ResourceKey]] = set()
    for index, item in enumerate(decode.sequence(value, at)):
        where = at.index(index)
        parts = decode.strings(item, where)
        if len(parts) != 5:
            raise where.error("must list a release id, group, kind, namespace and name")
        found.add((_release_id(parts[0], where.index(0)), ResourceKey(*parts[1:])))
    return frozenset(found)


def _release_id(value: object, at: decode.Field) -> ReleaseId:
    text = decode.string(value, at)
    if text.count("/") < 2:
        raise at.error("must be a release id: cluster/deployment/release")
    return explain_json.release_id(text)


def _explanation(value: object, at: decode.Field) -> Explanation:
    """What `explain_json.to_json` wrote: values by release, blast radius, no-effect warnings."""
    data = decode.mapping(value, at)
    values = decode.optional_map(data, "values", at)
    impacts = decode.optional(data, "blastRadius", at, decode.sequence, decode.NO_ITEMS)
    no_effects = decode.optional(data, "noEffect", at, decode.sequence, decode.NO_ITEMS)
    by_release = at.key("values")
    return Explanation(
        values={
            _release_id(rid, by_release.key(rid)): _changes(changes, by_release.key(rid))
            for rid, changes in values.items()
        },
        blast_radius=tuple(
            _file_impact(item, at.key("blastRadius").index(i)) for i, item in enumerate(impacts)
        ),
        no_effect=tuple(
            _no_effect(item, at.key("noEffect").index(i)) for i, item in enumerate(no_effects)
        ),
    )


def _changes(value: object, at: decode.Field) -> tuple[ValueChange, ...]:
    items = decode.sequence(value, at)
    return tuple(_value_change(item, at.index(i)) for i, item in enumerate(items))


def _value_change(value: object, at: decode.Field) -> ValueChange:
    data = decode.mapping(value, at)
    return ValueChange(
        path=decode.required(data, "path", at, decode.string),
        text=decode.required(data, "change", at, decode.string),
        base=decode.optional(data, "base", at, _origin, None),
        head=decode.optional(data, "head", at, _origin, None),
    )


def _origin(value: object, at: decode.Field) -> Origin:
    data = decode.mapping(value, at)
    return Origin(
        decode.required(data, "source", at, decode.string),
        decode.required(data, "level", at, decode.string),
    )


def _file_impact(value: object, at: decode.Field) -> FileImpact:
    data = decode.mapping(value, at)
    releases = decode.optional(data, "releases", at, decode.sequence, decode.NO_ITEMS)
    return FileImpact(
        file=decode.required(data, "file", at, decode.string),
        releases=tuple(_release_id(r, at.key("releases").index(i)) for i, r in enumerate(releases)),
        changed=decode.required(data, "changed", at, decode.integer),
    )


def _no_effect(value: object, at: decode.Field) -> NoEffect:
    data = decode.mapping(value, at)
    return NoEffect(
        file=decode.required(data, "file", at, decode.string),
        path=decode.required(data, "path", at, decode.string),
        reason=decode.required(data, "reason", at, decode.string),
    )


def merge(pairs: Sequence[RenderedPair]) -> RenderedPair:
    """One pair from shards of the same review: releases, errors and warnings combined."""
    if not pairs:
        raise ReviewerError("nothing to merge")
    first = pairs[0]
    for pair in pairs[1:]:
        if (pair.base_info, pair.head_info) != (first.base_info, first.head_info):
            raise ReviewerError("the shards were rendered from different commits")
    warnings = tuple(dict.fromkeys(w for pair in pairs for w in pair.warnings))
    return RenderedPair(
        base=_union([pair.base for pair in pairs]),
        head=_union([pair.head for pair in pairs]),
        base_info=first.base_info,
        head_info=first.head_info,
        warnings=warnings,
        noise=first.noise,
        explanation=explain_json.merge(pair.explanation for pair in pairs),
        hidden=frozenset().union(*(pair.hidden for pair in pairs)),
        regeneration=regenerated.merge(pair.regeneration for pair in pairs),
    )


def _union(snapshots: Sequence[Snapshot]) -> Snapshot:
    releases = sorted((r for s in snapshots for r in s.releases), key=lambda r: r.id)
    return Snapshot(
        releases=tuple(releases),
        errors=tuple(e for s in snapshots for e in s.errors),
        warnings=tuple(dict.fromkeys(w for s in snapshots for w in s.warnings)),
    )
