"""The terminal report of a review: the summary first (or last), then every change."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from reviewer.diff.resource import ResourceDiff, ResourceStatus
from reviewer.diff.result import ClusterSummary, ReleaseDiff
from reviewer.release_summary import ReleaseSummary
from reviewer.report import (
    BLAST_RADIUS_LINES,
    MARK,
    REGENERATED_LINES,
    REGENERATED_NOTE,
    ROUTINE_LINES,
    Review,
    plural,
)

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
    previous = None
    for release in review.changed_releases():
        heading = review.layer_heading(release, previous)
        if heading:
            yield ""
            yield paint(f"{heading}:", "1")
        yield from _release_text(review, release, paint)
        previous = release


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
    if found.regenerated:
        yield f"      ({found.regenerated} {REGENERATED_NOTE})"


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
        parts.append(f"{plural(cluster.failed_deployments, 'deployment')} failed to plan")
    return ", ".join(parts)


def _blast_radius_text(review: Review) -> Iterator[str]:
    impacts = review.explanation.blast_radius
    if not impacts:
        return
    yield "blast radius (files changed → releases built from them):"
    for impact in impacts[:BLAST_RADIUS_LINES]:
        yield f"  {review.impact_line(impact)}"
    if len(impacts) > BLAST_RADIUS_LINES:
        yield f"  ... and {len(impacts) - BLAST_RADIUS_LINES} more file(s)"


def _repeated_text(review: Review, paint: Any) -> Iterator[str]:
    for number, group in enumerate(review.repeated_changes(), start=1):
        mark = MARK[group.status.value]
        kind = f"{group.kind}.{group.group}" if group.group else group.kind
        yield ""
        title = f"{mark} [{number}] {kind}: the same change in {len(group.members)} objects"
        yield paint(title, _COLOUR.get(mark, ""))
        for release_id, key in group.members:
            yield f"      {release_id}: {key}"
        yield from _diff_lines(group.example, paint)


def _release_text(review: Review, release: ReleaseDiff, paint: Any) -> Iterator[str]:
    mark = MARK[release.status.value]
    suffix = f" (chart {release.chart_change})" if release.chart_change else ""
    suffix += " (routine changes only)" if release.routine_only else ""
    suffix += f" (layer {release.layer})" if release.layer else ""
    yield ""
    yield paint(f"{mark} {release.id} [{release.status.value}]{suffix}", _COLOUR.get(mark, ""))
    if release.layer_move:
        before, after = release.layer_move
        yield paint(f"    moved from layer {before} to layer {after}", _COLOUR[">"])
    for side, error in (
        ("target branch", release.base_error),
        ("merge result", release.head_error),
    ):
        if error and review.is_listed(release, error):
            yield paint(f"    fails to render on the {side} (error listed in the summary)", "31")
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
    for diff in release.shown_resources():
        yield from _resource_text(review, release, diff, paint)
    yield from _routine_objects_text(release, paint)


def _routine_objects_text(release: ReleaseDiff, paint: Any) -> Iterator[str]:
    collapsed = release.routine_objects()
    if not collapsed:
        return
    yield paint(f"  ~ {len(collapsed)} object(s) with routine changes only:", _COLOUR["~"])
    lines = release.routine_lines()
    for line in lines[:ROUTINE_LINES]:
        yield paint(f"      {line}", "2")
    if len(lines) > ROUTINE_LINES:
        yield paint(f"      ... and {len(lines) - ROUTINE_LINES} more (see the JSON report)", "2")


def _resource_text(
    review: Review, release: ReleaseDiff, diff: ResourceDiff, paint: Any
) -> Iterator[str]:
    mark = MARK[diff.status.value]
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
