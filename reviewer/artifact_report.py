"""The comment of the fork-safe pair's trusted half, rebuilt from the artifact's `report.json`.

The `workflow_run` half holds the write token but posts what an untrusted run rendered. It
never posts that run's Markdown (`report.md` could carry links, images, mentions or HTML):
it decodes `report.json` strictly into the dataclasses below and renders them with the
report's own template filters (`reviewer/markdown.py`), so every text the artifact holds is
a code span, a fence or escaped prose. Sections the JSON does not carry in a form safe to
rebuild (blast radius, value origins, repeated changes, regenerated fields, resemblance)
are left out and the comment says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reviewer import decode
from reviewer.report_markdown import render_template

_SOURCE = "report.json"
RELEASE_STATUSES = ("added", "removed", "changed", "unchanged", "error")
RESOURCE_STATUSES = ("added", "removed", "changed", "moved", "renamed")
_CHANGING = ("added", "removed", "changed")


@dataclass(frozen=True)
class FailureView:
    """One render failure as the artifact lists it."""

    where: str
    message: str
    reproduce: str


@dataclass(frozen=True)
class ResourceView:
    """One object's change: its kind, name, status and unified diff."""

    kind: str
    namespace: str
    name: str
    status: str
    diff: str


@dataclass(frozen=True)
class ReleaseView:
    """One release that changed, with its objects' changes."""

    name: str
    status: str
    chart_change: str
    routine_only: bool
    resources: tuple[ResourceView, ...]


@dataclass(frozen=True)
class ClusterView:
    """Release counts of one cluster."""

    cluster: str
    added: int
    changed: int
    removed: int
    failed: int

    @property
    def shown(self) -> bool:
        """Whether the cluster has anything to list (a release added, changed, removed, failed)."""
        return bool(self.added or self.changed or self.removed or self.failed)


@dataclass(frozen=True)
class ReportView:
    """What the rebuilt comment shows, decoded from `report.json`."""

    base: str
    head: str
    base_sha: str
    head_sha: str
    totals: Mapping[str, int]
    clusters: tuple[ClusterView, ...]
    introduced: tuple[FailureView, ...]
    still_failing: tuple[tuple[FailureView, bool], ...]
    target_only: tuple[FailureView, ...]
    releases: tuple[ReleaseView, ...]
    warnings: tuple[str, ...]

    @property
    def failed(self) -> bool:
        """A failure the change introduced (or, if the run was asked so, left failing)."""
        return bool(self.introduced) or any(blocking for _, blocking in self.still_failing)

    @property
    def changing(self) -> int:
        """Releases added, changed or removed."""
        return sum(self.totals.get(status, 0) for status in _CHANGING)


def decode_report(report: Mapping[str, Any], *, sha: decode.Decoder) -> ReportView:
    """`report.json` of an artifact as the rebuilt comment needs it; `ConfigError` naming the
    field for anything of the wrong shape. `sha` checks commit SHAs."""
    at = decode.Field(_SOURCE)
    base = decode.required(report, "base", at, decode.mapping)
    head = decode.required(report, "head", at, decode.mapping)
    summary = decode.required(report, "summary", at, decode.mapping)
    still = _items(report, "stillFailing", at, _still_failing)
    return ReportView(
        base=decode.required(base, "ref", at.key("base"), decode.string),
        head=decode.required(head, "ref", at.key("head"), decode.string),
        base_sha=str(decode.required(base, "sha", at.key("base"), sha)),
        head_sha=str(decode.required(head, "sha", at.key("head"), sha)),
        totals=_totals(decode.required(summary, "releases", at.key("summary"), decode.mapping), at),
        clusters=_items(summary, "clusters", at.key("summary"), _cluster),
        introduced=_items(head, "errors", at.key("head"), _failure),
        still_failing=still,
        target_only=_items(base, "errors", at.key("base"), _failure),
        releases=_items(report, "releases", at, _release),
        warnings=decode.optional(report, "warnings", at, decode.strings, ()),
    )


def render_markdown(view: ReportView) -> str:
    """The comment body (no footer) for `view`, every artifact text through the filters."""
    return render_template("artifact.md.j2", view=view, mark=_MARK)


_MARK = {"added": "+", "removed": "-", "changed": "~", "moved": ">", "renamed": ">"}


def _items(data: Mapping[str, Any], key: str, at: decode.Field, item: Any) -> tuple[Any, ...]:
    values: list[Any] = decode.optional(data, key, at, decode.sequence, [])
    return tuple(item(value, at.key(key).index(i)) for i, value in enumerate(values))


def _totals(counts: Mapping[str, Any], at: decode.Field) -> dict[str, int]:
    where = at.key("summary").key("releases")
    names = ("added", "changed", "removed", "unchanged", "failed")
    return {name: decode.integer(counts.get(name, 0), where.key(name), minimum=0) for name in names}


def _count(data: Mapping[str, Any], key: str, at: decode.Field) -> int:
    return decode.optional(data, key, at, lambda v, f: decode.integer(v, f, minimum=0), 0)


def _cluster(value: object, at: decode.Field) -> ClusterView:
    data = decode.mapping(value, at)
    return ClusterView(
        cluster=decode.required(data, "cluster", at, decode.string),
        added=_count(data, "added", at),
        changed=_count(data, "changed", at),
        removed=_count(data, "removed", at),
        failed=_count(data, "failed", at),
    )


def _failure(value: object, at: decode.Field) -> FailureView:
    data = decode.mapping(value, at)
    parts = [
        decode.optional(data, key, at, decode.string, "")
        for key in ("cluster", "deployment", "release")
    ]
    return FailureView(
        where="/".join(part for part in parts if part) or "deployment",
        message=decode.optional(data, "message", at, decode.string, ""),
        reproduce=decode.optional(data, "reproduce", at, decode.string, ""),
    )


def _still_failing(value: object, at: decode.Field) -> tuple[FailureView, bool]:
    data = decode.mapping(value, at)
    return _failure(data, at), decode.optional(data, "blocking", at, decode.boolean, False)


def _release(value: object, at: decode.Field) -> ReleaseView:
    data = decode.mapping(value, at)
    parts = [decode.required(data, key, at, decode.string) for key in ("cluster", "deployment")]
    parts.append(decode.required(data, "release", at, decode.string))
    return ReleaseView(
        name="/".join(parts),
        status=decode.required(
            data, "status", at, lambda v, f: decode.string(v, f, choices=RELEASE_STATUSES)
        ),
        chart_change=decode.optional(data, "chartChange", at, decode.string, ""),
        routine_only=decode.optional(data, "routineOnly", at, decode.boolean, False),
        resources=_items(data, "resources", at, _resource),
    )


def _resource(value: object, at: decode.Field) -> ResourceView:
    data = decode.mapping(value, at)
    return ResourceView(
        kind=decode.required(data, "kind", at, decode.string),
        namespace=decode.optional(data, "namespace", at, decode.string, ""),
        name=decode.required(data, "name", at, decode.string),
        status=decode.required(
            data, "status", at, lambda v, f: decode.string(v, f, choices=RESOURCE_STATUSES)
        ),
        diff=decode.optional(data, "diff", at, decode.string, ""),
    )
