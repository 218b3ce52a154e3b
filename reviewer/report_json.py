"""The versioned JSON report (`reviewer.report/v1`) of a `Review`: every release, object,
failure and regenerated field, unabridged (text and Markdown shorten long lists)."""

from __future__ import annotations

from typing import Any

from reviewer import explain_json
from reviewer.diff.resource import ResourceDiff, ResourceStatus
from reviewer.diff.result import Failure, ReleaseDiff
from reviewer.model import ReleaseId
from reviewer.release_summary import ReleaseSummary
from reviewer.report import Review
from reviewer.sources.nested import SEPARATOR as NESTED

REPORT_SCHEMA = "reviewer.report/v1"


def to_json(review: Review) -> dict[str, Any]:
    """The versioned JSON report (schema `reviewer.report/v1`, documented in README.md)."""
    return {
        "schema": REPORT_SCHEMA,
        "base": _side_json(review, "base"),
        "head": _side_json(review, "head"),
        "summary": {
            "releases": review.totals(),
            "clusters": [cluster.__dict__ for cluster in review.diff.summary()],
            "routine": review.diff.routine_counts(),
            "regenerated": len(review.regenerated),
            # explain.blastRadius[].changed counts every release that differs (schema v1).
            "blastRadius": [
                {"file": impact.file, **review.impact_counts(impact)}
                for impact in review.explanation.blast_radius
            ],
            "failedDeployments": [
                # The message is in the failures themselves (head.errors or stillFailing).
                {"deployment": f.deployment, "clusters": list(f.clusters)}
                for f in review.diff.deployment_failures()
            ],
        },
        "releases": [_release_json(review, release) for release in review.diff.releases],
        "groups": [
            {
                "status": group.status.value,
                "kind": group.kind,
                "name": group.name,
                "releases": [str(release) for release, _ in group.members],
                "diff": group.body,
            }
            for group in review.diff.groups
            if len(group.members) > 1
        ],
        "explain": {
            key: value
            for key, value in explain_json.to_json(review.explanation).items()
            if key != "values"
        },
        "stillFailing": [
            {**_failure_json(f), "blocking": review.fail_on_preexisting}
            for f in review.diff.still_failing
        ],
        "regenerated": [
            {
                "release": str(rid),
                "kind": key.kind,
                "namespace": key.namespace,
                "name": key.name,
                "path": item.path,
                "comparable": item.comparable,
            }
            for rid, key, item in review.regenerated
        ],
        "warnings": list(review.all_warnings),
    }


def _side_json(review: Review, side: str) -> dict[str, Any]:
    """A side's ref and the failures only it has (`stillFailing` lists those of both)."""
    info = review.base if side == "base" else review.head
    failures = review.diff.target_only_errors if side == "base" else review.diff.introduced_errors
    return {"ref": info.ref, "sha": info.sha, "errors": [_failure_json(f) for f in failures]}


def _failure_json(failure: Failure) -> dict[str, Any]:
    where = failure.release
    return {
        "cluster": where.cluster if where else None,
        "deployment": where.deployment if where else None,
        "release": where.release if where else None,
        "message": failure.message,
        "reproduce": failure.reproduce,
        "helm": failure.helm_command,
    }


def _release_json(review: Review, release: ReleaseDiff) -> dict[str, Any]:
    side = release.head or release.base
    return {**_release_entry(review, release, side), **_nesting(release.id)}


def _nesting(rid: ReleaseId) -> dict[str, Any]:
    """`parent` and `chain` of a nested release (docs/nested.md); nothing for others."""
    if NESTED not in rid.release:
        return {}
    chain = rid.release.split(NESTED)
    return {"parent": NESTED.join(chain[:-1]), "chain": chain}


def _release_entry(review: Review, release: ReleaseDiff, side: Any) -> dict[str, Any]:
    return {
        "cluster": release.id.cluster,
        "deployment": release.id.deployment,
        "release": release.id.release,
        "namespace": side.namespace if side else "",
        "status": release.status.value,
        "chart": {
            "base": _chart(release.base),
            "head": _chart(release.head),
        },
        "chartChange": release.chart_change,
        "routineOnly": release.routine_only,
        "unchangedResources": release.unchanged if release.rendered else None,
        "resources": [_resource_json(release, diff) for diff in release.resources],
        "values": [explain_json.value_change_json(c) for c in review.value_changes(release)],
        "resembles": _resembles_json(review.summaries.get(release.id)),
        **_layer_json(release),
    }


def _layer_json(release: ReleaseDiff) -> dict[str, Any]:
    """`layer` for a release of a Kraan layer, and `previousLayer` when it moved."""
    if not release.layer:
        return {}
    moved = release.layer_move
    return {"layer": release.layer, **({"previousLayer": moved[0]} if moved else {})}


def _resembles_json(summary: ReleaseSummary | None) -> dict[str, Any] | None:
    if summary is None or summary.resembles is None:
        return None
    found = summary.resembles
    return {
        "release": str(found.release),
        "similarity": round(found.similarity, 3),
        "differences": list(found.differences),
        "regenerated": found.regenerated,
    }


def _chart(side: Any) -> str | None:
    if side is None or not side.chart:
        return None
    return f"{side.chart}-{side.version}" if side.version else str(side.chart)


def _resource_json(release: ReleaseDiff, diff: ResourceDiff) -> dict[str, Any]:
    key = diff.key
    entry: dict[str, Any] = {
        "apiVersion": diff.head_api_version or diff.base_api_version,
        "kind": key.kind,
        "namespace": key.namespace,
        "name": key.name,
        "status": diff.status.value,
        "diff": diff.unified,
        "changes": [str(change) for change in diff.changes],
        "routine": [str(item) for item in diff.routine],
        "routineOnly": diff.routine_only,
        "secretOnly": diff.secret_only,
    }
    if diff.regenerated:
        entry["regenerated"] = [item.path for item in diff.regenerated]
    if diff.status is ResourceStatus.MOVED:
        entry["from"] = str(diff.base_release)
        entry["to"] = str(diff.head_release)
    if diff.status is ResourceStatus.RENAMED and diff.base_key is not None:
        entry["previousName"] = diff.base_key.name
    if diff.base_api_version and diff.head_api_version != diff.base_api_version:
        entry["previousApiVersion"] = diff.base_api_version
    return entry
