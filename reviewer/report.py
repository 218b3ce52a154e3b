"""Reports of a review: JSON (versioned), coloured text and Markdown.

Every format is built from the same `Review`; none of them reads files or
secrets, so what they show is exactly what the diff stage produced.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from typing import Any

import jinja2

from reviewer import explain as explain_mod
from reviewer import markdown
from reviewer.diff.result import (
    ChangeGroup,
    ClusterSummary,
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

REPORT_SCHEMA = "reviewer.report/v1"
BLAST_RADIUS_LINES = 20
"""Files listed in the blast-radius summary; the JSON report lists them all."""
REGENERATED_LINES = 30
"""Regenerated fields listed in text and Markdown; the JSON report lists them all."""


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
        """Releases that are added, removed, changed or failed, in identity order."""
        return [r for r in self.diff.releases if r.status is not ReleaseStatus.UNCHANGED]

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
                f"; {_plural(len(broken), 'deployment')} failed to plan "
                f"(affects {_plural(clusters, 'cluster')})"
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


def _plural(count: int, noun: str) -> str:
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
            for key, value in explain_mod.to_json(review.explanation).items()
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
        "values": [explain_mod.value_change_json(c) for c in review.value_changes(release)],
        "resembles": _resembles_json(review.summaries.get(release.id)),
    }


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


# --- text ------------------------------------------------------------------------------------

_MARK = {
    "added": "+",
    "removed": "-",
    "changed": "~",
    "moved": ">",
    "renamed": ">",
    "error": "!",
    "unchanged": " ",
}
_COLOUR = {"+": "32", "-": "31", "~": "33", ">": "36", "!": "31;1", "@": "36"}


def render_text(
    review: Review, *, colour: bool = False, summary_last: bool = False, summary_only: bool = False
) -> str:
    """A terminal report: the summary (sides, counts, clusters, blast radius, warnings,
    failures) and every change; `summary_last` puts the summary at the end, where a
    terminal leaves it in view, and `summary_only` leaves the changes out."""
    paint = _painter(colour)
    summary = list(_summary_text(review, paint))
    details = [] if summary_only else list(_details_text(review, paint))
    lines = [*details, "", *summary] if summary_last and details else [*summary, *details]
    return "".join(line + "\n" for line in lines)


def _painter(colour: bool) -> Any:
    def paint(text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if colour and code else text

    return paint


def _summary_text(review: Review, paint: Any) -> Iterator[str]:
    yield paint(f"reviewer diff: {review.base.short} → {review.head.short}", "1")
    yield review.counts_line()
    yield from _clusters_text(review)
    yield from _blast_radius_text(review)
    for warning in review.all_warnings:
        yield paint(f"warning: {warning}", "33")
    for note in review.failure_notes():
        failure = note.failure
        label = "FAILED" if note.blocking else "failing (not blocking)"
        where = f"{label} {failure.release or ''}: on the {note.sides}"
        yield paint(f"{where}: {failure.message}", "31;1" if note.blocking else "33")
        if failure.reproduce:
            yield f"  reproduce: {failure.reproduce}"
        if failure.helm_command:
            yield f"  with helm: {failure.helm_command}"
    yield from _regenerated_text(review)


def _details_text(review: Review, paint: Any) -> Iterator[str]:
    yield from _repeated_text(review, paint)
    for release in review.changed_releases():
        yield from _release_text(review, release, paint)


def _regenerated_text(review: Review) -> Iterator[str]:
    found = review.regenerated
    if not found:
        return
    yield (
        f"regenerated on every render (not compared): {len(found)} field(s) in "
        f"{len({(rid, key) for rid, key, _ in found})} object(s)"
    )
    for rid, key, item in found[:REGENERATED_LINES]:
        yield f"  {rid}: {key}: {item.line()}"
    if len(found) > REGENERATED_LINES:
        yield f"  ... and {len(found) - REGENERATED_LINES} more (see the JSON report)"


def _release_summary_text(summary: ReleaseSummary) -> Iterator[str]:
    yield f"    {len(summary.objects)} object(s), {summary.lines} lines, {summary.bytes} bytes:"
    for item in summary.objects:
        yield f"      {item.key} ({item.lines} lines, {item.bytes} bytes)"
    found = summary.resembles
    if found is None:
        return
    yield f"    most resembles {found.release} ({found.similarity:.0%} alike); differences:"
    for line in found.differences or ("(none)",):
        yield f"      {line}"
    if found.more:
        yield f"      ... and {found.more} more line(s)"


def _clusters_text(review: Review) -> Iterator[str]:
    clusters = review.diff.summary()
    touched = [cluster for cluster in clusters if _cluster_words(cluster)]
    if not touched:
        return
    yield "per cluster:"
    width = max(len(cluster.cluster) for cluster in touched)
    for cluster in touched:
        yield f"  {cluster.cluster.ljust(width)}  {_cluster_words(cluster)}"
    if len(touched) < len(clusters):
        yield f"  ({len(clusters) - len(touched)} other cluster(s) unchanged)"


def _cluster_words(cluster: ClusterSummary) -> str:
    parts = [
        f"{count} {word}"
        for count, word in (
            (cluster.changed, "changed"),
            (cluster.added, "added"),
            (cluster.removed, "removed"),
            (cluster.failed, "failed"),
        )
        if count
    ]
    if cluster.routine_only:
        parts.append(f"({cluster.routine_only} routine only)")
    if cluster.failed_deployments:
        parts.append(f"{_plural(cluster.failed_deployments, 'deployment')} failed to plan")
    return ", ".join(parts)


def _blast_radius_text(review: Review) -> Iterator[str]:
    impacts = review.explanation.blast_radius
    if not impacts:
        return
    yield "blast radius (files changed → releases built from them):"
    for impact in impacts[:BLAST_RADIUS_LINES]:
        yield f"  {impact.line()}"
    if len(impacts) > BLAST_RADIUS_LINES:
        yield f"  ... and {len(impacts) - BLAST_RADIUS_LINES} more file(s)"


def _repeated_text(review: Review, paint: Any) -> Iterator[str]:
    for number, group in enumerate(review.repeated_changes(), start=1):
        mark = _MARK[group.status.value]
        kind = f"{group.kind}.{group.group}" if group.group else group.kind
        yield ""
        title = f"{mark} [{number}] {kind}: the same change in {len(group.members)} objects"
        yield paint(title, _COLOUR.get(mark, ""))
        for release_id, key in group.members:
            yield f"      {release_id}: {key}"
        yield from _diff_lines(group.example, paint)


def _release_text(review: Review, release: ReleaseDiff, paint: Any) -> Iterator[str]:
    mark = _MARK[release.status.value]
    suffix = f" (chart {release.chart_change})" if release.chart_change else ""
    suffix += " (routine changes only)" if release.routine_only else ""
    yield ""
    yield paint(f"{mark} {release.id} [{release.status.value}]{suffix}", _COLOUR.get(mark, ""))
    for side, error in (
        ("target branch", release.base_error),
        ("merge result", release.head_error),
    ):
        if error and review.is_listed(release, error):
            yield paint(f"    fails to render on the {side} (error above)", "31")
        elif error:
            yield paint(f"    {side}: {error}", "31")
    changes = review.value_changes(release)
    if changes:
        yield "    values:"
        for change in changes:
            yield f"      {change.line()}"
    summary = review.summaries.get(release.id)
    if summary is not None:
        yield from _release_summary_text(summary)
        return
    for diff in release.resources:
        yield from _resource_text(review, release, diff, paint)


def _resource_text(
    review: Review, release: ReleaseDiff, diff: ResourceDiff, paint: Any
) -> Iterator[str]:
    mark = _MARK[diff.status.value]
    title = f"  {mark} {_resource_title(release, diff)}"
    number = review.repeat_number(release, diff)
    if number is not None:
        yield paint(f"{title}: repeated change [{number}]", _COLOUR.get(mark, ""))
        return
    yield paint(title, _COLOUR.get(mark, ""))
    yield from _diff_lines(diff, paint)


def _diff_lines(diff: ResourceDiff, paint: Any) -> Iterator[str]:
    for line in diff.semantic_lines():
        yield f"      {line}"
    for line in diff.unified.splitlines():
        yield "      " + paint(
            line, _COLOUR.get(line[:1], "") if line[:3] not in ("+++", "---") else "1"
        )
    for item in diff.routine:
        yield paint(f"      routine: {item}", "2")


def _resource_title(release: ReleaseDiff, diff: ResourceDiff) -> str:
    title = str(diff.key)
    if diff.status is ResourceStatus.MOVED:
        other = diff.base_release if diff.head_release == release.id else diff.head_release
        direction = "from" if diff.head_release == release.id else "to"
        title += f" (moved {direction} {other})"
    elif diff.status is ResourceStatus.RENAMED and diff.base_key is not None:
        title += f" (renamed from {diff.base_key.name})"
    if (
        diff.base_api_version
        and diff.head_api_version
        and (diff.base_api_version != diff.head_api_version)
    ):
        title += f" (apiVersion {diff.base_api_version} → {diff.head_api_version})"
    return title


# --- Markdown --------------------------------------------------------------------------------


def render_template(name: str, **context: Any) -> str:
    """Render one of the package's report templates (e.g. the CI footer)."""
    return _environment().get_template(name).render(**context)


def _environment() -> jinja2.Environment:
    loader = jinja2.FunctionLoader(_package_template)
    environment = jinja2.Environment(
        loader=loader,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    environment.filters["resource_title_for"] = _resource_title_markdown
    environment.filters["fence"] = fence
    environment.filters["fenced"] = markdown.fenced
    environment.filters["code"] = markdown.code_span
    environment.filters["table_code"] = markdown.table_code
    environment.filters["html_code"] = markdown.html_code
    environment.filters["plain"] = markdown.plain
    environment.filters["call"] = lambda function: function()
    return environment


def _package_template(name: str) -> str:
    return (
        resources.files("reviewer")
        .joinpath("report_templates")
        .joinpath(name)
        .read_text(encoding="utf-8")
    )


def fence(text: str) -> str:
    """A code fence longer than any backtick run inside `text`, so the block cannot break."""
    return markdown.fence_for(text)


def _resource_title_markdown(release: ReleaseDiff, diff: ResourceDiff) -> str:
    """`_resource_title` for Markdown: every name a code span, our words plain."""
    key = diff.key
    kind = f"{key.kind}.{key.group}" if key.group else key.kind
    where = f"{key.namespace}/" if key.namespace else ""
    title = f"{markdown.code_span(kind)} {markdown.code_span(where + key.name)}"
    if diff.status is ResourceStatus.MOVED:
        other = diff.base_release if diff.head_release == release.id else diff.head_release
        direction = "from" if diff.head_release == release.id else "to"
        title += f" (moved {direction} {markdown.code_span(str(other))})"
    elif diff.status is ResourceStatus.RENAMED and diff.base_key is not None:
        title += f" (renamed from {markdown.code_span(diff.base_key.name)})"
    before, after = diff.base_api_version, diff.head_api_version
    if before and after and before != after:
        title += f" (apiVersion {markdown.code_span(before)} → {markdown.code_span(after)})"
    return title


def render_markdown(
    review: Review, *, template: str = "report.md.j2", summary_only: bool = False
) -> str:
    """The Markdown report (also the body of the PR comment); `summary_only`: no details."""
    environment = _environment()
    environment.globals["repeat_number"] = review.repeat_number
    return environment.get_template(template).render(
        review=review,
        mark=_MARK,
        blast_radius_lines=BLAST_RADIUS_LINES,
        regenerated_lines=REGENERATED_LINES,
        summary_only=summary_only,
    )
