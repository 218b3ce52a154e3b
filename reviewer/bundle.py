"""A rendered, redacted pair of sides saved to disk, so CI shards can be merged.

Layout: `DIR/base/` and `DIR/head/` (snapshots) plus `DIR/review.json` with
what the report needs besides the objects: refs, SHAs, warnings, noise rules.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reviewer import explain as explain_mod
from reviewer import snapshot as snapshot_mod
from reviewer.diff.result import SnapshotDiff
from reviewer.errors import ReviewerError
from reviewer.explain import Explanation
from reviewer.model import ReleaseId, ResourceKey, Snapshot
from reviewer.noise import NoiseRules
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
        },
        "explain": explain_mod.to_json(pair.explanation),
        "hidden": [
            [str(rid), key.group, key.kind, key.namespace, key.name]
            for rid, key in sorted(pair.hidden)
        ],
    }
    text = json.dumps(meta, indent=2) + "\n"
    guard(text, "review.json")
    (root / "review.json").write_text(text, encoding="utf-8")


def load(root: Path) -> RenderedPair:
    """Read a pair written by `save`."""
    meta_file = root / "review.json"
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        raise ReviewerError(f"{meta_file}: missing or not valid JSON") from None
    if not isinstance(meta, dict) or meta.get("schema") != BUNDLE_SCHEMA:
        raise ReviewerError(f"{meta_file}: not a {BUNDLE_SCHEMA} file")
    return RenderedPair(
        base=snapshot_mod.read(root / "base"),
        head=snapshot_mod.read(root / "head"),
        base_info=_side(meta, "base"),
        head_info=_side(meta, "head"),
        warnings=tuple(str(w) for w in meta.get("warnings", [])),
        noise=NoiseRules.from_mapping(meta.get("noise") or {}, source=str(meta_file)),
        explanation=explain_mod.from_json(meta.get("explain") or {}),
        hidden=frozenset(
            (explain_mod.release_id(str(rid)), ResourceKey(*map(str, key)))
            for rid, *key in meta.get("hidden") or []
        ),
    )


def _side(meta: dict[str, Any], name: str) -> SideInfo:
    side = meta.get(name) or {}
    sha = side.get("sha")
    return SideInfo(str(side.get("ref", name)), str(sha) if sha else None)


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
        explanation=explain_mod.merge(pair.explanation for pair in pairs),
        hidden=frozenset().union(*(pair.hidden for pair in pairs)),
    )


def _union(snapshots: Sequence[Snapshot]) -> Snapshot:
    releases = sorted((r for s in snapshots for r in s.releases), key=lambda r: r.id)
    return Snapshot(
        releases=tuple(releases),
        errors=tuple(e for s in snapshots for e in s.errors),
        warnings=tuple(dict.fromkeys(w for s in snapshots for w in s.warnings)),
    )
