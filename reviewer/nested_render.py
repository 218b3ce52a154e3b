"""Nested releases: render the HelmReleases a rendered release deploys (docs/nested.md).

After a side renders, every release's output is searched for Flux HelmReleases whose
chart resolves (reviewer/sources/nested.py). Each is planned as the `flux` kind plans a
HelmRelease file (reviewer/helmreleases) and rendered by the same render stage, then its
own output is searched in turn, up to the depth limit. An inner release keeps its
parent's cluster and deployment; its release name is the chain, outermost first, joined
by `nested.SEPARATOR` (`bootstrap`, `apps/middle`, `leaves/leaf`), so it is reported
right under its parent.

Secrets: the expansion runs twice, as planning does (reviewer/twins.py). The twin
expansion starts from each parent's published output (secret-derived positions already
in twin form) with the data of every v1 Secret in it redacted; the real one from the real
output. Inner releases are paired by chain and aligned, so whatever derives from a SOPS
value or from a Secret of the parent's output is published in its twin form. A real
inner release whose chart reference differs from its twin's is never fetched, and one
without a twin is not shown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reviewer import decode
from reviewer.errors import ConfigError, RenderError
from reviewer.helmreleases.planner import FluxInputs, plan_helmreleases
from reviewer.model import ReleaseId, RenderedRelease, Snapshot
from reviewer.nested_repository import RepositorySources, namespace_of, readable
from reviewer.nested_twins import publish, redacted_secret
from reviewer.plan import Plan, ReleasePlan
from reviewer.sources import nested

CONFIG_KEY = "nested"
_OPTION_KEYS = ("expand", "depth")

Render = Callable[[Plan], Snapshot]
"""The render stage, bound to a side's checkout and tools."""


@dataclass(frozen=True)
class NestedOptions:
    """`nested:` of `.reviewer.yaml`: whether to expand, and how deep."""

    expand: bool = True
    depth: int = nested.DEFAULT_DEPTH_LIMIT


def from_mapping(value: object, *, source: str) -> NestedOptions:
    """`nested: {expand: true|false, depth: N}`; both optional."""
    if value is None:
        return NestedOptions()
    at = decode.Field(source, (CONFIG_KEY,))
    data = decode.mapping(value, at, allowed=_OPTION_KEYS)
    return NestedOptions(
        expand=decode.optional(data, "expand", at, decode.boolean, True),
        depth=decode.optional(
            data,
            "depth",
            at,
            lambda v, where: decode.integer(v, where, minimum=1),
            nested.DEFAULT_DEPTH_LIMIT,
        ),
    )


@dataclass(frozen=True)
class Expansion:
    """The inner releases of a side: as rendered, as published, and their plans."""

    real: tuple[RenderedRelease, ...] = ()
    shown: tuple[RenderedRelease, ...] = ()
    plans: tuple[ReleasePlan, ...] = ()
    """The twin plans under the inner identities: values safe to show."""
    notes: tuple[str, ...] = ()

    def merged(self, real: Snapshot, shown: Snapshot) -> tuple[Snapshot, Snapshot]:
        """`real` and `shown` with the inner releases added (each in identity order)."""
        return _with(real, self.real, ()), _with(shown, self.shown, self.notes)


def _with(
    snapshot: Snapshot, releases: tuple[RenderedRelease, ...], notes: tuple[str, ...]
) -> Snapshot:
    every = sorted((*snapshot.releases, *releases), key=lambda r: r.id)
    return replace(snapshot, releases=tuple(every), warnings=(*snapshot.warnings, *notes))


def expand_side(
    root: Path,
    *,
    real: Snapshot,
    shown: Snapshot,
    inputs: Mapping[ReleaseId, frozenset[str]],
    render: Render,
    options: NestedOptions,
) -> Expansion:
    """The inner releases of every rendered release of a side (nothing when turned off)."""
    if not options.expand:
        return Expansion()
    repository = RepositorySources(root)
    twin = _Expander(root, repository, render, inputs, options.depth, twins=None)
    actual = _Expander(root, repository, render, inputs, options.depth, twins=twin.plans)
    published = shown.by_id()
    shown_releases: list[RenderedRelease] = []
    notes: list[str] = []
    for parent in real.releases:
        partner = published.get(parent.id)
        if parent.error is not None or partner is None or partner.error is not None:
            continue
        if not _deploys_helmreleases(parent):
            continue
        twins = twin.expand(partner)
        reals = actual.expand(parent)
        shown_releases += publish(reals, twins, actual.refused, notes, parent.id)
    return Expansion(
        real=tuple(actual.rendered.values()),
        shown=tuple(shown_releases),
        plans=tuple(twin.plans.values()),
        notes=tuple(notes),
    )


def _deploys_helmreleases(release: RenderedRelease) -> bool:
    return any(nested.is_helmrelease(resource.body) for resource in release.resources)


class _Expander:
    """Expands parents on one side of the twins, remembering every inner plan and render."""

    def __init__(
        self,
        root: Path,
        repository: RepositorySources,
        render: Render,
        inputs: Mapping[ReleaseId, frozenset[str]],
        depth: int,
        *,
        twins: dict[ReleaseId, ReleasePlan] | None,
    ) -> None:
        self.root = root
        self.repository = repository
        self.render = render
        self.inputs = inputs
        self.depth = depth
        self.twins = twins
        self.plans: dict[ReleaseId, ReleasePlan] = {}
        self.rendered: dict[ReleaseId, RenderedRelease] = {}
        self.refused: set[ReleaseId] = set()

    def expand(self, parent: RenderedRelease) -> dict[ReleaseId, RenderedRelease]:
        """The inner releases of `parent`, by identity (failures included); the twin side
        reads every Secret of the output redacted."""
        twin = self.twins is None
        output = [redacted_secret(r.body) if twin else r.body for r in parent.resources]
        tree = nested.expand(
            parent.id.release,
            output,
            lambda chain, release, found: self._render(parent, chain, release, found),
            namespace=parent.namespace,
            repository=self.repository.lookup,
            depth_limit=self.depth,
        )
        found: dict[ReleaseId, RenderedRelease] = {}
        for inner in nested.flatten(tree):
            rid = _inner_id(parent, inner.chain)
            if inner.error is not None:
                self.rendered[rid] = _failed(rid, inner, parent)
            found[rid] = self.rendered[rid]
        return found

    def _render(
        self,
        parent: RenderedRelease,
        chain: tuple[str, ...],
        release: Mapping[str, Any],
        output: Sequence[Mapping[str, Any]],
    ) -> list[dict[str, Any]]:
        rid = _inner_id(parent, chain)
        planned = self._plan(parent, rid, release, output)
        if self.twins is not None:
            self._check_twin(rid, planned)
        self.plans[rid] = replace(planned, id=rid)
        # Rendered under its own identity: the Helm release name is its last part.
        (rendered,) = self.render(Plan(releases=(planned,))).releases
        rendered = replace(rendered, id=rid)
        self.rendered[rid] = rendered
        return [resource.body for resource in rendered.resources]

    def _plan(
        self,
        parent: RenderedRelease,
        rid: ReleaseId,
        release: Mapping[str, Any],
        output: Sequence[Mapping[str, Any]],
    ) -> ReleasePlan:
        origin = f"output of {rid.release.rpartition(nested.SEPARATOR)[0]}"
        documents = [(origin, document) for document in output if readable(document)]
        documents.append((origin, release))
        documents += self.repository.chart_sources(release, output, parent.namespace)
        plan = plan_helmreleases(
            FluxInputs(
                root=self.root,
                source=parent.id.cluster,
                paths=(),
                secrets=_NoFiles(),
                twin=self.twins is None,
                namespace=parent.namespace,
                documents=tuple(documents),
            )
        )
        if plan.errors:
            raise RenderError(plan.errors[0].message)
        if len(plan.releases) != 1:
            raise RenderError("the HelmRelease could not be planned")
        (planned,) = plan.releases
        files = {name for name in planned.inputs if name != origin}
        return replace(
            planned,
            inputs=frozenset(files | self.inputs.get(parent.id, frozenset())),
            reproduce=parent.reproduce or planned.reproduce,
            helm_command=None,
            template_file=f"nested release {rid.release}",
        )

    def _check_twin(self, rid: ReleaseId, planned: ReleasePlan) -> None:
        assert self.twins is not None
        twin = self.twins.get(rid)
        if twin is None:
            raise RenderError("not rendered: its twin with redacted secret values is missing")
        if _reference(twin) != _reference(planned):
            self.refused.add(rid)
            raise RenderError("not rendered: its chart reference depends on a secret")


def _reference(release: ReleasePlan) -> tuple[object, ...]:
    chart = release.chart
    return (chart.ref, chart.local, chart.repository, release.version)


def _inner_id(parent: RenderedRelease, chain: tuple[str, ...]) -> ReleaseId:
    return ReleaseId(parent.id.cluster, parent.id.deployment, nested.SEPARATOR.join(chain))


def _failed(rid: ReleaseId, inner: nested.InnerRelease, parent: RenderedRelease) -> RenderedRelease:
    namespace = namespace_of(inner.release, parent.namespace)
    return RenderedRelease(
        id=rid,
        namespace=namespace,
        error=f"nested release {rid.release}: {inner.error}",
        reproduce=parent.reproduce,
    )


class _NoFiles:
    """Inner releases read no files of the repository through the secrets stage."""

    def load(self, path: Path, *, source: str) -> dict[str, Any]:
        """Refuse: only objects of the parent's output are read."""
        raise ConfigError(source, "a nested release reads no SOPS files")
