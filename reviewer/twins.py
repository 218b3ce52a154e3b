"""Align a release rendered from real secrets with its redacted twin (docs/redaction.md).

The twin is rendered from values where every SOPS leaf was redacted before
anything was merged or templated, so nothing in it can carry a secret. Every
output position whose text differs between the two renders derives from a
secret and is published in its twin form; positions equal in both are published
as they are. Whatever a template does to a secret (upper, b64enc, printf,
reversal, a map key, an object name), the published text therefore equals the
twin's text. The only real content kept is `data`/`stringData` of v1 Secrets,
which the redactor turns into keyed-hash markers.

Where the renders differ in structure (a template branches on a secret), the
objects that do not pair up are masked and the release carries a note.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from reviewer.model import WHOLE_DEPLOYMENT, ReleaseId, RenderedRelease, Resource, Snapshot
from reviewer.plan import Plan, ReleasePlan

MASKED = "masked: its structure depends on a secret value"
"""The body text of an object that could not be aligned with its twin."""

WITHHELD = (
    "rendering failed with the real secret values but not with redacted ones; "
    "the message is withheld because it may quote a secret"
)


class _Mismatch(Exception):
    """The two renders differ in structure here."""


@dataclass(frozen=True)
class Aligned:
    """The release to publish (twin identity, twin text) and how many objects were masked."""

    release: RenderedRelease
    masked: int


def align(real: RenderedRelease, twin: RenderedRelease) -> Aligned:
    """The publishable form of `real`, given the same release rendered from redacted values."""
    identity = replace(twin, resources=(), error=None)
    if real.error is not None:
        return Aligned(replace(identity, error=twin.error or WITHHELD), 0)
    if twin.error is not None:
        return Aligned(replace(identity, error=_twin_failed(twin.error)), 0)
    resources, masked = _align_resources(real.resources, twin.resources)
    return Aligned(replace(identity, resources=resources), masked)


def _twin_failed(error: str) -> str:
    return (
        f"{error} (with redacted secret values; the release rendered with the real ones, "
        "but its objects cannot be shown without showing secrets)"
    )


def masked_release(twin: RenderedRelease, reason: str) -> RenderedRelease:
    """`twin` published as a failure: its structure cannot be paired with the real render."""
    return replace(twin, resources=(), error=reason)


def _align_resources(
    real: tuple[Resource, ...], twin: tuple[Resource, ...]
) -> tuple[tuple[Resource, ...], int]:
    """Pair objects by template file, equal keys first; mask what does not pair."""
    published: list[Resource] = []
    masked = 0
    real_by_source = _by_source(real)
    for source, twins in _by_source(twin).items():
        pairs, lonely = _pair(real_by_source.pop(source, []), twins)
        for real_resource, twin_resource in pairs:
            merged = _merge_resource(real_resource, twin_resource)
            masked += merged is None
            published.append(merged or _mask(twin_resource))
        published += [_mask(resource) for resource in lonely]
        masked += len(lonely)
    masked += sum(len(rest) for rest in real_by_source.values())
    return tuple(sorted(published, key=lambda r: r.key)), masked


def _by_source(resources: tuple[Resource, ...]) -> dict[str, list[Resource]]:
    grouped: dict[str, list[Resource]] = {}
    for resource in resources:
        grouped.setdefault(resource.source, []).append(resource)
    return grouped


def _pair(
    real: list[Resource], twin: list[Resource]
) -> tuple[list[tuple[Resource, Resource]], list[Resource]]:
    """Pairs (real, twin) and the twin objects left without a partner."""
    if len(real) != len(twin):
        return [], twin
    rest_real = list(real)
    pairs: list[tuple[Resource, Resource]] = []
    rest_twin: list[Resource] = []
    for resource in twin:
        partner = next((r for r in rest_real if r.key == resource.key), None)
        if partner is None:
            rest_twin.append(resource)
        else:
            rest_real.remove(partner)
            pairs.append((partner, resource))
    # Objects named from a secret have different keys; the same order in
    # both renders is the best remaining evidence (a wrong pair still publishes twin text).
    pairs += zip(rest_real, rest_twin, strict=True)
    return pairs, []


def _merge_resource(real: Resource, twin: Resource) -> Resource | None:
    try:
        body = _merge_object(real.body, twin.body)
    except _Mismatch:
        return None
    return Resource.from_body(body, source=twin.source)


def _merge_object(real: Any, twin: Any) -> Any:
    """One rendered object; only a v1 Secret at the top (or in a List) keeps real data."""
    if not (isinstance(real, Mapping) and isinstance(twin, Mapping)):
        return _merge(real, twin)
    if real.get("kind") == twin.get("kind") == "List":
        items = _merge_mapping(real, twin, secret=False, skip="items")
        real_items, twin_items = real.get("items"), twin.get("items")
        if isinstance(real_items, list) and isinstance(twin_items, list):
            if len(real_items) != len(twin_items):
                raise _Mismatch
            pairs = zip(real_items, twin_items, strict=True)
            items["items"] = [_merge_object(*pair) for pair in pairs]
        elif "items" in twin:
            items["items"] = _merge(real_items, twin_items)
        return items
    return _merge_mapping(real, twin, secret=_is_secret(real) and _is_secret(twin))


def _merge(real: Any, twin: Any) -> Any:
    if isinstance(real, Mapping) and isinstance(twin, Mapping):
        return _merge_mapping(real, twin, secret=False)
    if isinstance(real, list) and isinstance(twin, list):
        if len(real) != len(twin):
            raise _Mismatch
        return [_merge(a, b) for a, b in zip(real, twin, strict=True)]
    if isinstance(real, Mapping | list) or isinstance(twin, Mapping | list):
        raise _Mismatch
    return real if _same_scalar(real, twin) else twin


def _same_scalar(real: Any, twin: Any) -> bool:
    return type(real) is type(twin) and bool(real == twin)


def _merge_mapping(
    real: Mapping[Any, Any], twin: Mapping[Any, Any], *, secret: bool, skip: str | None = None
) -> dict[Any, Any]:
    if len(real) != len(twin) or (skip is not None and (skip in real) != (skip in twin)):
        raise _Mismatch
    merged: dict[Any, Any] = {}
    only_twin = [key for key in twin if key not in real]
    only_real = [key for key in real if key not in twin]
    for key in twin:
        if key in real and key != skip:
            merged[key] = _field(real[key], twin[key], secret=secret and key in _SECRET_FIELDS)
    if len(only_twin) == 1:
        # A key computed from a secret: published as the twin's key.
        merged[only_twin[0]] = _merge(real[only_real[0]], twin[only_twin[0]])
    else:
        # Several keys computed from secrets cannot be told apart: the twin's subtrees.
        merged.update({key: twin[key] for key in only_twin})
    return merged


_SECRET_FIELDS = ("data", "stringData")


def _field(real: Any, twin: Any, *, secret: bool) -> Any:
    if not (secret and isinstance(real, Mapping) and isinstance(twin, Mapping)):
        return _merge(real, twin)
    # Secret data keeps the real values: the redactor replaces each by a keyed
    # hash, so a changed secret still shows as changed.
    if set(real) != set(twin):
        return {key: _merge(real.get(key), value) for key, value in twin.items()}
    return {key: real[key] for key in twin}


def _is_secret(body: Mapping[Any, Any]) -> bool:
    return body.get("kind") == "Secret" and body.get("apiVersion") == "v1"


def _mask(resource: Resource) -> Resource:
    metadata = resource.body.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    namespace = metadata.get("namespace") if isinstance(metadata, Mapping) else None
    body: dict[str, Any] = {
        "apiVersion": resource.api_version,
        "kind": resource.key.kind,
        "metadata": {k: v for k, v in (("name", name), ("namespace", namespace)) if v},
        "reviewer": MASKED,
    }
    return Resource.from_body(body, source=resource.source)


# --- a whole side ------------------------------------------------------------------


Group = tuple[str, str]


def publish_twins(
    real: Plan, twin: Plan, rendered: Snapshot, render: Callable[[Plan], Snapshot]
) -> Snapshot:
    """`rendered` (from `real`) with every secret-derived position in its twin form.

    `render` renders a plan; it is called once, for the twin releases whose plan
    differs from the real one (none when no SOPS value reaches a release).
    """
    pairs, unpaired = pair_plans(real, twin)
    differing = [(r, t) for r, t in pairs if _differs(r, t)]
    # A chart reference computed from a secret is never fetched (reviewer/refguard.py).
    refused = [(r, t) for r, t in differing if _reference(r) != _reference(t)]
    differing = [(r, t) for r, t in differing if _reference(r) == _reference(t)]
    to_render = [t for _, t in differing] + unpaired
    twin_plan = Plan(
        releases=tuple(replace(t, skip_schema_validation=True) for t in to_render),
        errors=twin.errors,
    )
    twin_rendered = render(twin_plan).by_id()
    real_rendered = rendered.by_id()
    published: dict[ReleaseId, RenderedRelease] = {}
    notes: list[str] = []
    for release in real.releases:
        published[release.id] = real_rendered[release.id]
    for r, t in differing:
        del published[r.id]
        aligned = align(real_rendered[r.id], twin_rendered[t.id])
        published[t.id] = aligned.release
        if aligned.masked:
            notes.append(
                f"{t.id}: {aligned.masked} object(s) masked: the chart's output differs in "
                "structure with the real and the redacted secret values (a template branches "
                "on a secret), so they cannot be shown without showing secrets"
            )
    for r, t in refused:
        del published[r.id]
        published[t.id] = _refused(t)
    for t in unpaired:
        published[t.id] = masked_release(twin_rendered[t.id], _UNPAIRED)
    for entry in _plan_errors(real, twin, twin_rendered):
        published[entry.id] = entry
    for group in {(r.id.cluster, r.id.deployment) for r in unpaired}:
        for r in real.releases:
            if (r.id.cluster, r.id.deployment) == group:
                published.pop(r.id, None)
    return Snapshot(
        releases=tuple(sorted(published.values(), key=lambda r: r.id)),
        errors=rendered.errors,
        warnings=(*rendered.warnings, *notes),
    )


_UNPAIRED = (
    "the deployment plans different releases with the real and the redacted secret values "
    "(a template branches on a secret); its releases are not shown"
)


def pair_plans(
    real: Plan, twin: Plan
) -> tuple[list[tuple[ReleasePlan, ReleasePlan]], list[ReleasePlan]]:
    """Releases paired in planning order per deployment, and twin releases left unpaired.

    Planning is deterministic, so the twins list a deployment's releases in the
    same order unless a template branches on a secret (then their counts differ).
    """
    real_groups, twin_groups = _groups(real.releases), _groups(twin.releases)
    pairs: list[tuple[ReleasePlan, ReleasePlan]] = []
    unpaired: list[ReleasePlan] = []
    for group in {*real_groups, *twin_groups}:
        mine, theirs = real_groups.get(group, []), twin_groups.get(group, [])
        if len(mine) == len(theirs):
            pairs += zip(mine, theirs, strict=True)
        else:
            unpaired += theirs
    return pairs, unpaired


def _groups(releases: Sequence[ReleasePlan]) -> dict[Group, list[ReleasePlan]]:
    grouped: dict[Group, list[ReleasePlan]] = {}
    for release in releases:
        grouped.setdefault((release.id.cluster, release.id.deployment), []).append(release)
    return grouped


def _reference(release: ReleasePlan) -> tuple[object, ...]:
    chart = release.chart
    return (chart.ref, chart.local, chart.repository, release.version)


def _refused(twin: ReleasePlan) -> RenderedRelease:
    """The refusal of a secret-dependent chart reference, told with the twin's names."""
    return RenderedRelease(
        id=twin.id,
        namespace=twin.namespace,
        chart=twin.chart.ref,
        labels=twin.labels,
        error=(
            f"{twin.template_file}: release '{twin.id.release}': the chart reference "
            f"or repository URL ({twin.chart.ref}) depends on a SOPS secret; chart references "
            "are fetched before any redaction and must not use secret values"
        ),
        reproduce=twin.reproduce,
    )


def _differs(real: ReleasePlan, twin: ReleasePlan) -> bool:
    return (real.id, real.namespace, real.labels, real.values, real.chart, real.version) != (
        twin.id,
        twin.namespace,
        twin.labels,
        twin.values,
        twin.chart,
        twin.version,
    )


def _plan_errors(
    real: Plan, twin: Plan, twin_rendered: Mapping[ReleaseId, RenderedRelease]
) -> list[RenderedRelease]:
    """Planning failures, told from the twin; a failure only the real plan has is withheld."""
    entries = [
        twin_rendered[ReleaseId(e.cluster, e.deployment, e.release or WHOLE_DEPLOYMENT)]
        for e in twin.errors
    ]
    known = {(e.cluster, e.deployment) for e in twin.errors}
    for error in real.errors:
        if (error.cluster, error.deployment) not in known:
            known.add((error.cluster, error.deployment))
            entries.append(
                RenderedRelease(
                    id=ReleaseId(error.cluster, error.deployment, WHOLE_DEPLOYMENT),
                    namespace="",
                    error=(
                        "planning failed with the real secret values but not with redacted "
                        "ones; the message is withheld because it may quote a secret"
                    ),
                    reproduce=error.reproduce,
                )
            )
    return entries
