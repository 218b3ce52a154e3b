"""The Markdown report of a review (also the PR comment's body), from the package's templates."""

from __future__ import annotations

from importlib import resources
from typing import Any

import jinja2

from reviewer import markdown
from reviewer.diff.resource import ResourceDiff, ResourceStatus
from reviewer.diff.result import ReleaseDiff
from reviewer.report import (
    BLAST_RADIUS_LINES,
    MARK,
    REGENERATED_LINES,
    REGENERATED_NOTE,
    ROUTINE_LINES,
    Review,
)


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
    """`report_text`'s resource title for Markdown: every name a code span, our words plain."""
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
        mark=MARK,
        blast_radius_lines=BLAST_RADIUS_LINES,
        regenerated_lines=REGENERATED_LINES,
        regenerated_note=REGENERATED_NOTE,
        routine_lines=ROUTINE_LINES,
        summary_only=summary_only,
    )
