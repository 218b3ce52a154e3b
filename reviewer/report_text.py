"""The terminal report of a review: the summary first (or last), then every change."""

from __future__ import annotations

from collections.abc import Iterator

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
from reviewer.visible import Shown, continued, visible

_COLOUR = {"+": "32", "-": "31", "~": "33", ">": "36", "!": "31;1", "@": "36"}


def render_text(
    review: Review, *, colour: bool = False, summary_last: bool = False, summary_only: bool = False
) -> Shown:
    """A terminal report: the summary (sides, counts, clusters, blast radius, warnings,
    failures) and every change; `summary_last` puts the summary at the end, where a
    terminal leaves it in view, and `summary_only` leaves the changes out."""
    summary = list(_summary_text(review))
    details = [] if summary_only else list(_details_text(review))
    lines = [*details, _BLANK, *summary] if summary_last and details else [*summary, *details]
    return Shown("".join(_painted(text, style, colour) + "\n" for text, style in lines))


Line = tuple[str, str]
"""One line of the report and its colour (an SGR code; empty for none)."""
_BLANK: Line = ("", "")


def _painted(text: str, style: str, colour: bool) -> str:
    # Every line is escaped whole before our colour codes wrap it: names, values and
    # messages from a pull request never reach the terminal as control characters, and a
    # line feed in a message continues its line, indented.
    shown = continued(visible(text, keep_newlines=True))
    return f"\x1b[{style}m{shown}\x1b[0m" if colour and style else shown


def _name(name: object) -> str:
    """A name (release, object, layer) on one line: its line feeds shown as `\\n`."""
    return visible(str(name))


def _summary_text(review: Review) -> Iterator[Line]:
    yield f"reviewer diff: {review.base.short} → {review.head.short}", "1"
    yield review.counts_line(), ""
    yield from _clusters_text(review)
    yield from _blast_radius_text(review)
    for warning in review.all_warnings:
        yield f"warning: {warning}", "33"
    for note in review.failure_notes():
        failure = note.failure
        label = "FAILED" if note.blocking else "failing (not blocking)"
        where = f"{label} {_name(failure.release or '')}: on the {note.sides}"
        yield f"{where}: {failure.message}", "31;1" if note.blocking else "33"
        if failure.reproduce:
            yield f"  reproduce: {failure.reproduce}", ""
        if failure.helm_command:
            yield f"  with helm: {failure.helm_command}", ""
    yield from _regenerated_text(review)


def _details_text(review: Review) -> Iterator[Line]:
    yield from _repeated_text(review)
    previous = None
    for release in review.changed_releases():
        heading = review.layer_heading(release, previous)
        if heading:
            yield _BLANK
            yield f"{_name(heading)}:", "1"
        yield from _release_text(review, release)
        previous = release


def _regenerated_text(review: Review) -> Iterator[Line]:
    found = review.regenerated
    if not found:
        return
    objects = len({(rid, key) for rid, key, _ in found})
    yield (
        f"regenerated on every render (not compared): {len(found)} field(s) in {objects} object(s)",
        "",
    )
    for rid, key, item in found[:REGENERATED_LINES]:
        yield f"  {_name(rid)}: {_name(key)}: {item.line()}", ""
    if len(found) > REGENERATED_LINES:
        yield f"  ... and {len(found) - REGENERATED_LINES} more (see the JSON report)", ""


def _release_summary_text(summary: ReleaseSummary) -> Iterator[Line]:
    yield f"    {len(summary.objects)} object(s), {summary.lines} lines, {summary.bytes} bytes:", ""
    for item in summary.objects:
        yield f"      {_name(item.key)} ({item.lines} lines, {item.bytes} bytes)", ""
    found = summary.resembles
    if found is None:
        return
    yield (
        f"    most resembles {_name(found.release)} ({found.similarity:.0%} alike); differences:",
        "",
    )
    for line in found.differences or ("(none)",):
        yield f"      {line}", ""
    if found.more:
        yield f"      ... and {found.more} more line(s)", ""
    if found.regenerated:
        yield f"      ({found.regenerated} {REGENERATED_NOTE})", ""


def _clusters_text(review: Review) -> Iterator[Line]:
    clusters = review.diff.summary()
    touched = [cluster for cluster in clusters if _cluster_words(cluster)]
    if not touched:
        return
    yield "per cluster:", ""
    # Aligned as shown: an escaped character takes several columns.
    width = max(len(_name(cluster.cluster)) for cluster in touched)
    for cluster in touched:
        yield f"  {_name(cluster.cluster).ljust(width)}  {_cluster_words(cluster)}", ""
    if len(touched) < len(clusters):
        yield f"  ({len(clusters) - len(touched)} other cluster(s) unchanged)", ""


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


def _blast_radius_text(review: Review) -> Iterator[Line]:
    impacts = review.explanation.blast_radius
    if not impacts:
        return
    yield "blast radius (files changed → releases built from them):", ""
    for impact in impacts[:BLAST_RADIUS_LINES]:
        yield f"  {review.impact_line(impact)}", ""
    if len(impacts) > BLAST_RADIUS_LINES:
        yield f"  ... and {len(impacts) - BLAST_RADIUS_LINES} more file(s)", ""


def _repeated_text(review: Review) -> Iterator[Line]:
    for number, group in enumerate(review.repeated_changes(), start=1):
        mark = MARK[group.status.value]
        kind = f"{group.kind}.{group.group}" if group.group else group.kind
        yield _BLANK
        title = f"{mark} [{number}] {kind}: the same change in {len(group.members)} objects"
        yield title, _COLOUR.get(mark, "")
        for release_id, key in group.members:
            yield f"      {_name(release_id)}: {_name(key)}", ""
        yield from _diff_lines(group.example)


def _release_text(review: Review, release: ReleaseDiff) -> Iterator[Line]:
    mark = MARK[release.status.value]
    suffix = f" (chart {release.chart_change})" if release.chart_change else ""
    suffix += " (routine changes only)" if release.routine_only else ""
    suffix += f" (layer {_name(release.layer)})" if release.layer else ""
    yield _BLANK
    yield f"{mark} {_name(release.id)} [{release.status.value}]{suffix}", _COLOUR.get(mark, "")
    if release.layer_move:
        before, after = release.layer_move
        yield f"    moved from layer {_name(before)} to layer {_name(after)}", _COLOUR[">"]
    for side, error in (
        ("target branch", release.base_error),
        ("merge result", release.head_error),
    ):
        if error and review.is_listed(release, error):
            yield f"    fails to render on the {side} (error listed in the summary)", "31"
        elif error:
            yield f"    {side}: {error}", "31"
    changes = review.value_changes(release)
    if changes:
        yield "    values:", ""
        for change in changes:
            yield f"      {change.line()}", ""
    summary = review.summaries.get(release.id)
    if summary is not None:
        yield from _release_summary_text(summary)
        return
    for diff in release.shown_resources():
        yield from _resource_text(review, release, diff)
    yield from _routine_objects_text(release)


def _routine_objects_text(release: ReleaseDiff) -> Iterator[Line]:
    collapsed = release.routine_objects()
    if not collapsed:
        return
    yield f"  ~ {len(collapsed)} object(s) with routine changes only:", _COLOUR["~"]
    lines = release.routine_lines()
    for line in lines[:ROUTINE_LINES]:
        yield f"      {line}", "2"
    if len(lines) > ROUTINE_LINES:
        yield f"      ... and {len(lines) - ROUTINE_LINES} more (see the JSON report)", "2"


def _resource_text(review: Review, release: ReleaseDiff, diff: ResourceDiff) -> Iterator[Line]:
    mark = MARK[diff.status.value]
    title = f"  {mark} {_resource_title(release, diff)}"
    number = review.repeat_number(release, diff)
    if number is not None:
        yield f"{title}: repeated change [{number}]", _COLOUR.get(mark, "")
        return
    yield title, _COLOUR.get(mark, "")
    yield from _diff_lines(diff)


def _diff_lines(diff: ResourceDiff) -> Iterator[Line]:
    for line in diff.semantic_lines():
        yield f"      {line}", ""
    for line in diff.unified.splitlines():
        style = _COLOUR.get(line[:1], "") if line[:3] not in ("+++", "---") else "1"
        yield f"      {line}", style
    for item in diff.routine:
        yield f"      routine: {item}", "2"


def _resource_title(release: ReleaseDiff, diff: ResourceDiff) -> str:
    title = _name(diff.key)
    if diff.status is ResourceStatus.MOVED:
        other = diff.base_release if diff.head_release == release.id else diff.head_release
        direction = "from" if diff.head_release == release.id else "to"
        title += f" (moved {direction} {_name(other)})"
    elif diff.status is ResourceStatus.RENAMED and diff.base_key is not None:
        title += f" (renamed from {_name(diff.base_key.name)})"
    if (
        diff.base_api_version
        and diff.head_api_version
        and (diff.base_api_version != diff.head_api_version)
    ):
        title += f" (apiVersion {_name(diff.base_api_version)} → {_name(diff.head_api_version)})"
    return title
