"""The review a report shows (`Review`) and its versioned JSON form.

Every format (JSON here, text in `report_text`, Markdown in `report_markdown`) is built
from the same `Review`; none of them reads files or secrets, so what they show is exactly
what the diff stage produced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from reviewer import explain_json
from reviewer.diff.result import (
    ChangeGroup,
    Failure,
    RegeneratedChange,
    ReleaseDiff,
    ReleaseStatus,
    ResourceDiff,
    ResourceStatus,
    SnapshotDiff,
)
from reviewer.explain import Explanation, ValueChange
from reviewer.model import ReleaseId, ResourceKey
from reviewer.release_summary import ReleaseSummary, summaries
from reviewer.sources.nested import SEPARATOR as NESTED

REPORT_SCHEMA = "reviewer.report/v1"
BLAST_RADIUS_LINES = 20
"""Files listed in the blast-radius summary; the JSON report lists them all."""
REGENERATED_LINES = 30
"""Regenerated fields listed in text and Markdown; the JSON report lists them all."""
ROUTINE_LINES = 10
"""Distinct routine changes listed per release for its routine-only objects (JSON: all)."""
MARK = {
    "added": "+",
    "removed": "-",
    "changed": "~",
    "moved": ">",
    "renamed": ">",
    "error": "!",
    "unchanged": " ",
}
"""The sign each status shows in text and Markdown."""


@dataclass(frozen=True)
class SideInfo:
    """What one side was rendered from."""

    ref: str
    sha: str | None = None
    branch: str | None = None
    """The checked-out branch, when the side is a working tree."""

    @property
    def short(self) -> str:
        """`ref (sha7)` for headers; a working tree names its branch."""
        if self.sha:
            return f"{self.ref} ({self.sha[:7]})"
        return f"{self.ref} of {self.branch}" if self.branch else self.ref


BOTH_SIDES = "target branch and merge result"


@dataclass(frozen=True)
class FailureNote:
    """One render failure as the reports list it (once): where it happens, whether it blocks."""

    failure: Failure
    sides: str
    """`merge result`, `target branch`, or both (`BOTH_SIDES`) when the error is the same."""
    blocking: bool
    sha: str | None
    """The commit to check out to reproduce it."""


@dataclass(frozen=True)
class Review:
    """Everything a report shows."""

    base: SideInfo
    head: SideInfo
    diff: SnapshotDiff
    warnings: tuple[str, ...] = ()
    explanation: Explanation = field(default_factory=Explanation)
    fail_on_preexisting: bool = False
    """Failures the target branch has too (same error) fail the run as well."""

    @property
    def all_warnings(self) -> tuple[str, ...]:
        """Given warnings plus one per failure that is not the change's doing."""
        fixed = tuple(
            f"target branch failed to render {f.release or 'a deployment'} (not blocking: "
            "the change may be the fix)"
            for f in self.diff.target_only_errors
        )
        blocking = (
            "fails this run (fail-on-preexisting)"
            if self.fail_on_preexisting
            else ("not blocking: the change did not cause it")
        )
        still = tuple(
            f"{f.release or 'a deployment'} still fails to render, with the same error on both "
            f"sides ({BOTH_SIDES}); {blocking}"
            for f in self.diff.still_failing
        )
        no_effect = tuple(item.line() for item in self.explanation.no_effect)
        return self.warnings + fixed + still + no_effect

    def failure_notes(self) -> tuple[FailureNote, ...]:
        """Every render failure once: introduced, still failing (both sides), target only."""
        head, base = self.head.sha, self.base.sha
        return (
            *(FailureNote(f, "merge result", True, head) for f in self.diff.introduced_errors),
            *(
                FailureNote(f, BOTH_SIDES, self.fail_on_preexisting, head)
                for f in self.diff.still_failing
            ),
            *(FailureNote(f, "target branch", False, base) for f in self.diff.target_only_errors),
        )

    def is_listed(self, release: ReleaseDiff, message: str) -> bool:
        """Whether this error of `release` is among the failures listed at the top."""
        return any(
            note.failure.release == release.id and note.failure.message == message
            for note in self.failure_notes()
        )

    def value_changes(self, release: ReleaseDiff) -> tuple[ValueChange, ...]:
        """How the merged values of `release` changed, with their origins."""
        return self.explanation.values.get(release.id, ())

    @property
    def failed(self) -> bool:
        """True when the change makes something fail to render (or, if asked, leaves it failing)."""
        return any(note.blocking for note in self.failure_notes())

    def changed_releases(self) -> list[ReleaseDiff]:
        """Releases that are added, removed, changed or failed, in identity order (those of
        Kraan layers grouped by layer within their source)."""
        changed = [r for r in self.diff.releases if r.status is not ReleaseStatus.UNCHANGED]
        return sorted(changed, key=lambda r: (r.id.cluster, r.layer, r.id))

    @staticmethod
    def layer_heading(release: ReleaseDiff, previous: ReleaseDiff | None) -> str | None:
        """`layer apps (source addons)` where a new group of `changed_releases()` starts."""
        if not release.layer:
            return None
        if previous is not None and (previous.id.cluster, previous.layer) == (
            release.id.cluster,
            release.layer,
        ):
            return None
        return f"layer {release.layer} (source {release.id.cluster})"

    def repeated_changes(self) -> list[ChangeGroup]:
        """Changes that apply identically to several objects: shown once, with their owners.

        Objects of added and removed releases are summarised instead, never shown in full.
        """
        whole = {
            release.id
            for release in self.diff.releases
            if release.status in (ReleaseStatus.ADDED, ReleaseStatus.REMOVED)
        }
        return [
            group
            for group in self.diff.groups
            if len(group.members) > 1 and any(rid not in whole for rid, _ in group.members)
        ]

    @cached_property
    def summaries(self) -> dict[ReleaseId, ReleaseSummary]:
        """Added and removed releases in brief: objects with sizes, what an added one resembles."""
        return summaries(self.diff)

    @cached_property
    def regenerated(self) -> list[tuple[ReleaseId, ResourceKey, RegeneratedChange]]:
        """Fields the charts regenerate on every render: listed, never compared."""
        return list(self.diff.regenerated_fields())

    def repeat_number(self, release: ReleaseDiff, diff: ResourceDiff) -> int | None:
        """The 1-based number of the repeated change this object diff belongs to, if any."""
        for number, group in enumerate(self.repeated_changes(), start=1):
            if (release.id, diff.key) in group.members and diff.status is group.status:
                return number
        return None

    def counts_line(self) -> str:
        """Release counts in words, then deployments that failed to plan (never mixed)."""
        totals = self.totals()
        line = (
            f"{totals['changed']} changed, {totals['added']} added, {totals['removed']} removed, "
            f"{totals['failed']} failed, {totals['unchanged']} unchanged release(s)"
        )
        broken = self.diff.deployment_failures()
        if broken:
            clusters = len({name for failure in broken for name in failure.clusters})
            line += (
                f"; {plural(len(broken), 'deployment')} failed to plan "
                f"(affects {plural(clusters, 'cluster')})"
            )
        return line

    def totals(self) -> dict[str, int]:
        """Release counts over the whole fleet."""
        totals = {"added": 0, "changed": 0, "removed": 0, "unchanged": 0, "failed": 0}
        for cluster in self.diff.summary():
            totals["added"] += cluster.added
            totals["changed"] += cluster.changed
            totals["removed"] += cluster.removed
            totals["unchanged"] += cluster.unchanged
            totals["failed"] += cluster.failed
        return totals


def plural(count: int, noun: str) -> str:
    """`1 noun` or `N nouns`."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


# --- JSON ------------------------------------------------------------------------------------


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
        "unchangedResources": release.unchanged,
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
