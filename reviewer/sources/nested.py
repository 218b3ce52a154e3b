"""Nested releases: bootstrap charts whose output holds HelmReleases of their own.

A release's rendered output may contain HelmReleases (two-stage rendering). Each
one whose chart resolves (its `spec.chart.spec.sourceRef` or `spec.chartRef`
names an object found in the same output or in the repository) is rendered in
turn by the caller's `InnerRenderer` (the HelmRelease half of the `flux` kind),
and so on, up to a depth limit. A HelmRelease whose chart does not resolve stays
a plain object of its parent. Beyond the limit the expansion is an error naming
the chain, which also stops a chart that deploys itself. One inner release that
fails (to plan, to render, or past the limit) carries its error; the others go on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reviewer.errors import ReviewerError

DEFAULT_DEPTH_LIMIT = 3
SEPARATOR = " \u203a "
"""Between the releases of a chain, outermost first: `bootstrap \u203a apps/middle`
(a single right-pointing angle quotation mark)."""
HELMRELEASE_GROUP = "helm.toolkit.fluxcd.io/"
_SOURCE_GROUP = "source.toolkit.fluxcd.io/"

# (kind, namespace, name) -> the object found in the repository, or None.
SourceLookup = Callable[[str, str, str], Mapping[str, Any] | None]
# (chain, inner HelmRelease, the output it came from) -> its rendered objects;
# a `ReviewerError` it raises becomes that inner release's error.
InnerRenderer = Callable[
    [tuple[str, ...], Mapping[str, Any], Sequence[Mapping[str, Any]]], Sequence[dict[str, Any]]
]


@dataclass(frozen=True)
class InnerRelease:
    """A HelmRelease found in a parent's output, rendered, with its own inner releases."""

    chain: tuple[str, ...]  # `namespace/name` of each release, outermost first, this one last
    release: Mapping[str, Any]
    objects: tuple[dict[str, Any], ...]
    children: tuple[InnerRelease, ...] = ()
    error: str | None = None
    """Why it has no objects (it failed, or lies beyond the depth limit)."""

    @property
    def name(self) -> str:
        """`namespace/name` of this HelmRelease."""
        return self.chain[-1]


def expand(
    parent: str,
    output: Sequence[Mapping[str, Any]],
    render: InnerRenderer,
    *,
    namespace: str,
    repository: SourceLookup,
    depth_limit: int = DEFAULT_DEPTH_LIMIT,
) -> tuple[InnerRelease, ...]:
    """The inner releases of the release `parent` (its `output`), reported under it.

    `namespace` is the parent's release namespace: Helm installs objects that name
    none there, so an inner HelmRelease without one lives there too.
    """
    return _expand((parent,), output, render, namespace, repository, depth_limit)


def _expand(
    chain: tuple[str, ...],
    output: Sequence[Mapping[str, Any]],
    render: InnerRenderer,
    namespace: str,
    repository: SourceLookup,
    depth_limit: int,
) -> tuple[InnerRelease, ...]:
    found = []
    for release in expandable(output, namespace=namespace, repository=repository):
        inner_namespace = _namespace(release, namespace)
        inner_chain = (*chain, f"{inner_namespace}/{_name(release)}")
        if len(inner_chain) - 1 > depth_limit:
            found.append(
                InnerRelease(inner_chain, release, (), error=_too_deep(inner_chain, depth_limit))
            )
            continue
        try:
            objects = tuple(render(inner_chain, release, output))
        except ReviewerError as error:
            found.append(InnerRelease(inner_chain, release, (), error=error.render()))
            continue
        children = _expand(inner_chain, objects, render, inner_namespace, repository, depth_limit)
        found.append(InnerRelease(inner_chain, release, objects, children))
    return tuple(found)


def _too_deep(chain: tuple[str, ...], depth_limit: int) -> str:
    return (
        f"nested releases deeper than {depth_limit} levels: {SEPARATOR.join(chain)} (a bootstrap "
        "chart may deploy itself; raise `nested.depth` in .reviewer.yaml if intended)"
    )


def flatten(releases: Sequence[InnerRelease]) -> list[InnerRelease]:
    """Every inner release of a tree, each parent before its children."""
    return [item for release in releases for item in (release, *flatten(release.children))]


def expandable(
    output: Sequence[Mapping[str, Any]], *, namespace: str, repository: SourceLookup
) -> list[Mapping[str, Any]]:
    """The HelmReleases of `output` whose chart source is in `output` or the repository."""
    return [
        document
        for document in output
        if is_helmrelease(document)
        and _resolves(document, output, _namespace(document, namespace), repository)
    ]


def is_helmrelease(document: Mapping[str, Any]) -> bool:
    """A Flux HelmRelease."""
    api_version = str(document.get("apiVersion", ""))
    return document.get("kind") == "HelmRelease" and api_version.startswith(HELMRELEASE_GROUP)


def chart_source(release: Mapping[str, Any], *, namespace: str) -> tuple[str, str, str] | None:
    """(kind, namespace, name) of the object a HelmRelease takes its chart from."""
    spec = release.get("spec") or {}
    if not isinstance(spec, Mapping):
        return None
    reference = spec.get("chartRef")
    if reference is None:
        chart = (spec.get("chart") or {}).get("spec") or {}
        reference = chart.get("sourceRef") if isinstance(chart, Mapping) else None
    if not isinstance(reference, Mapping) or not reference.get("kind") or not reference.get("name"):
        return None
    return (
        str(reference["kind"]),
        str(reference.get("namespace") or namespace),
        str(reference["name"]),
    )


def _resolves(
    release: Mapping[str, Any],
    output: Sequence[Mapping[str, Any]],
    namespace: str,
    repository: SourceLookup,
) -> bool:
    wanted = chart_source(release, namespace=namespace)
    if wanted is None:
        return False
    kind, source_namespace, name = wanted
    for document in output:
        api_version = str(document.get("apiVersion", ""))
        if (
            document.get("kind") == kind
            and api_version.startswith(_SOURCE_GROUP)
            and _name(document) == name
            and _namespace(document, namespace) == source_namespace
        ):
            return True
    return repository(kind, source_namespace, name) is not None


def _name(document: Mapping[str, Any]) -> str:
    return str((document.get("metadata") or {}).get("name", ""))


def _namespace(document: Mapping[str, Any], default: str) -> str:
    return str((document.get("metadata") or {}).get("namespace") or default)
