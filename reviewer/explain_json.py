"""Explanations as JSON (the report and saved shards), read back, and merged across CI shards."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from reviewer.explain import Explanation, FileImpact, NoEffect, Origin, ValueChange
from reviewer.model import ReleaseId


def _origin_json(origin: Origin | None) -> dict[str, str] | None:
    return None if origin is None else {"source": origin.source, "level": origin.level}


def _origin(data: Any) -> Origin | None:
    return None if not data else Origin(str(data["source"]), str(data["level"]))


def value_change_json(change: ValueChange) -> dict[str, Any]:
    """One value change as JSON."""
    return {
        "path": change.path,
        "change": change.text,
        "base": _origin_json(change.base),
        "head": _origin_json(change.head),
    }


def to_json(explanation: Explanation) -> dict[str, Any]:
    """The explanation as JSON (blast radius, no-effect warnings, values by release)."""
    return {
        "blastRadius": [
            {
                "file": impact.file,
                "releases": [str(rid) for rid in impact.releases],
                "clusters": impact.clusters,
                "changed": impact.changed,
            }
            for impact in explanation.blast_radius
        ],
        "noEffect": [
            {"file": item.file, "path": item.path, "reason": item.reason}
            for item in explanation.no_effect
        ],
        "values": {
            str(rid): [value_change_json(change) for change in changes]
            for rid, changes in sorted(explanation.values.items())
        },
    }


def from_json(data: Mapping[str, Any]) -> Explanation:
    """Read back what `to_json` wrote."""
    values = {
        release_id(rid): tuple(
            ValueChange(str(c["path"]), str(c["change"]), _origin(c["base"]), _origin(c["head"]))
            for c in changes
        )
        for rid, changes in (data.get("values") or {}).items()
    }
    impacts = tuple(
        FileImpact(str(i["file"]), tuple(release_id(r) for r in i["releases"]), int(i["changed"]))
        for i in data.get("blastRadius") or []
    )
    no_effects = tuple(
        NoEffect(str(n["file"]), str(n["path"]), str(n["reason"]))
        for n in data.get("noEffect") or []
    )
    return Explanation(values=values, blast_radius=impacts, no_effect=no_effects)


def release_id(text: str) -> ReleaseId:
    """Parse `cluster/deployment/release` (the cluster path may hold slashes).

    A directory of another kind (manifests `overlays/prod`) may hold slashes too: the text
    is then ambiguous, and `with_ids` puts the ids the snapshots hold in its place.
    """
    cluster, deployment, release = text.rsplit("/", 2)
    return ReleaseId(cluster, deployment, release)


def with_ids(explanation: Explanation, known: Mapping[str, ReleaseId]) -> Explanation:
    """The explanation with each release id read back from text replaced by the known id
    that prints the same (the snapshots' own, structured ids)."""

    def known_id(rid: ReleaseId) -> ReleaseId:
        return known.get(str(rid), rid)

    return Explanation(
        values={known_id(rid): changes for rid, changes in explanation.values.items()},
        blast_radius=tuple(
            FileImpact(impact.file, tuple(sorted(map(known_id, impact.releases))), impact.changed)
            for impact in explanation.blast_radius
        ),
        no_effect=explanation.no_effect,
    )


def merge(explanations: Iterable[Explanation]) -> Explanation:
    """One explanation from CI shards (each shard holds whole clusters)."""
    explanations = list(explanations)
    values: dict[ReleaseId, tuple[ValueChange, ...]] = {}
    impacts: dict[str, tuple[list[ReleaseId], int]] = {}
    for part in explanations:
        values.update(part.values)
        for impact in part.blast_radius:
            releases, changed = impacts.setdefault(impact.file, ([], 0))
            impacts[impact.file] = (releases + list(impact.releases), changed + impact.changed)
    radius = tuple(
        sorted(
            (
                FileImpact(file, tuple(sorted(rids)), changed)
                for file, (rids, changed) in impacts.items()
            ),
            key=lambda impact: (-len(impact.releases), impact.file),
        )
    )
    return Explanation(
        values=values, blast_radius=radius, no_effect=_merged_no_effect(explanations)
    )


def _merged_no_effect(explanations: list[Explanation]) -> tuple[NoEffect, ...]:
    """A value had no effect only if it had none in every shard that reads its file."""
    kept: dict[tuple[str, str], NoEffect] = {}
    for part in explanations:
        for item in part.no_effect:
            kept.setdefault((item.file, item.path), item)
    for part in explanations:
        mine = {(item.file, item.path) for item in part.no_effect}
        reads = {impact.file for impact in part.blast_radius if impact.releases}
        for key in list(kept):
            if key[0] in reads and key not in mine:
                del kept[key]
    return tuple(kept[key] for key in sorted(kept))
