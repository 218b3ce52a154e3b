"""One side of a review: discover → plan → render → redact, for one repository checkout.

Each side is planned twice when it uses SOPS: once with the real secrets (fed
to Helm) and once with every secret leaf redacted before merging, so values
derived in `.gotmpl` files are redacted too. Leaves that differ between the
twins form the replacement map applied to the rendered objects.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from reviewer import unrendered
from reviewer.config import CONFIG_FILE
from reviewer.discover import Cluster, DeploymentDir, Layout
from reviewer.gotmpl import TemplateRenderer
from reviewer.model import ReleaseId, RenderedRelease, Snapshot
from reviewer.nested_render import NestedOptions, expand_side
from reviewer.plan import Plan, ReleasePlan
from reviewer.plan_cache import SidePlans
from reviewer.proc import Programs
from reviewer.refguard import refuse_secret_charts
from reviewer.render import render_plan
from reviewer.render_cache import secret_free
from reviewer.reuse import (
    Basis,
    Choosing,
    DeploymentKey,
    Reuse,
    assemble,
    by_deployment,
    failed_keys,
    key_of,
)
from reviewer.side_twins import RecordingSecrets, RedactedSecrets, twin_keys, twin_replacements
from reviewer.sops import SopsDecoder
from reviewer.sources.hierarchy import Hierarchy
from reviewer.sources.protocol import PlanContext, Selector, SideBuilds, Source
from reviewer.tooling import Tools
from reviewer.twins import publish_twins
from reviewer.values import NoSecrets, SecretsLoader


@dataclass(frozen=True)
class Shard:
    """Shard `index` (1-based) of `total`: a deterministic share of the clusters.

    Whole clusters are assigned, by a hash of their path, so an object moving
    between releases of one cluster stays inside one shard on both sides.
    """

    index: int
    total: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """`I/N` with 1 ≤ I ≤ N."""
        index, _, total = text.partition("/")
        if not (index.isdigit() and total.isdigit() and 1 <= int(index) <= int(total)):
            raise ValueError(f"'{text}' is not I/N with 1 <= I <= N")
        return cls(int(index), int(total))

    def holds(self, cluster: str, *, salt: str = "") -> bool:
        """True when `cluster` belongs to this shard (`salt`: another way to share them)."""
        digest = hashlib.sha256((salt + cluster).encode()).digest()
        return int.from_bytes(digest[:8], "big") % self.total == self.index - 1


@dataclass(frozen=True)
class Selection:
    """Which clusters and deployments to render (empty = all)."""

    clusters: Sequence[str] = ()
    deployments: Sequence[str] = ()
    shard: Shard | None = None
    only: frozenset[tuple[str, str]] | None = None
    """(cluster, deployment) pairs this process plans, the rest another one does
    (reviewer/plan_parts.py); None: every selected deployment."""
    elsewhere: frozenset[tuple[str, str]] = frozenset()
    """(cluster, deployment) pairs another process plans (reviewer/plan_parts.py)."""

    def __call__(self, cluster: Cluster, deployment: DeploymentDir) -> bool:
        """True when the deployment of that cluster is selected."""
        if not self._here(cluster.path, deployment.name):
            return False
        if self.clusters and not {cluster.path, cluster.name} & set(self.clusters):
            return False
        return not self.deployments or deployment.name in self.deployments

    def location(self, cluster: str, deployment: str) -> bool:
        """True when releases at (cluster, deployment) of a non-hierarchy source are selected."""
        if not self._here(cluster, deployment):
            return False
        if self.clusters and cluster not in self.clusters:
            return False
        return not self.deployments or deployment in self.deployments

    def _here(self, cluster: str, deployment: str) -> bool:
        """In this run's shard, and planned by this process."""
        if self.shard is not None and not self.shard.holds(cluster):
            return False
        key = (cluster, deployment)
        return key not in self.elsewhere and (self.only is None or key in self.only)


@dataclass(frozen=True)
class SideOptions:
    """How to render a side."""

    layout: Layout = field(default_factory=Layout)
    selection: Selection = field(default_factory=Selection)
    display_root: str = "."
    config_file: str = CONFIG_FILE
    """The settings file, relative to the repository root (read from the base side)."""
    sources: tuple[Source, ...] = ()
    """Where releases come from; empty: the hierarchy described by `layout`."""
    nested: NestedOptions = field(default_factory=NestedOptions)
    """Whether and how deep HelmReleases in rendered output are expanded (docs/nested.md)."""
    programs: Programs = field(default_factory=Programs)
    """What external programs may see of the environment (read at the edge)."""


def plan_side(
    root: Path,
    *,
    options: SideOptions,
    renderer: TemplateRenderer,
    secrets: SecretsLoader | None = None,
    decoder: SopsDecoder | None = None,
    twin: bool = False,
    select: Selector | None = None,
    builds: SideBuilds | None = None,
) -> Plan:
    """Plan every selected release and object set of every source of the checkout at `root`.

    `decoder` decrypts SOPS files that are objects themselves (default: `secrets` when it
    is one); `twin` plans the redacted twin, where only Helm values matter; `select`
    replaces the options' selection; `builds`: what the side's other plan built already.
    """
    if decoder is None and isinstance(secrets, SopsDecoder):
        decoder = secrets
    context = PlanContext(
        root=root,
        renderer=renderer,
        secrets=secrets or NoSecrets(),
        decoder=decoder,
        select=options.selection if select is None else select,
        display_root=options.display_root,
        twin=twin,
        programs=options.programs,
        builds=SideBuilds() if builds is None else builds,
    )
    sources = options.sources or (Hierarchy(layout=options.layout),)
    found = [source.plan(context) for source in sources]
    return Plan(
        releases=tuple(release for plan in found for release in plan.releases),
        errors=tuple(error for plan in found for error in plan.errors),
        objects=tuple(objects for plan in found for objects in plan.objects),
        replacements={real: shown for plan in found for real, shown in plan.replacements.items()},
        inputs={rid: inputs for plan in found for rid, inputs in plan.inputs.items()},
    )


@dataclass(frozen=True)
class PlannedSide:
    """A side's plan (real values), its redacted twin and the replacement map between them."""

    plan: Plan
    twin: Plan
    replacements: dict[str, str] = field(default_factory=dict)
    leaves: frozenset[str] = frozenset()
    """Every decrypted SOPS leaf (string form), paired by the twins or not."""
    seen: Mapping[DeploymentKey, tuple[Cluster, DeploymentDir]] = field(default_factory=dict)
    """Hierarchy deployments selected, in planning order (fast path only)."""
    reused: frozenset[DeploymentKey] = frozenset()
    """Deployments taken from the base side instead of planned (fast path only)."""
    secret_keys: frozenset[DeploymentKey] = frozenset()
    """Deployments whose twin was planned apart from the real plan (they read SOPS files)."""
    read_sops: bool = False
    """Whether planning read a SOPS file (failed deployments then count as secret)."""

    @property
    def has_secrets(self) -> bool:
        """Whether any SOPS file was read (the twin is then a separate plan)."""
        return self.twin is not self.plan


@dataclass(frozen=True)
class SideRender:
    """One rendered side: objects (not yet redacted), secrets map, and redacted plans."""

    snapshot: Snapshot
    replacements: dict[str, str]
    plans: dict[ReleaseId, ReleasePlan]
    """The redacted twin's release plans: values and provenance safe to show."""
    real: tuple[ReleasePlan, ...] = ()
    """The release plans as rendered (real values), for a second render."""
    published: Snapshot | None = None
    """Secret-derived positions in their twin form (docs/redaction.md); None: `snapshot`."""
    leaves: frozenset[str] = frozenset()
    """Every decrypted SOPS leaf: the leak guard's seed."""
    basis: Basis | None = None
    """What a head side may reuse of this one (hierarchy deployments only)."""

    @property
    def shown(self) -> Snapshot:
        """What may be published once string redaction has run over it."""
        return self.snapshot if self.published is None else self.published


def plan_twins(
    root: Path,
    *,
    options: SideOptions,
    renderer: TemplateRenderer,
    secrets: SecretsLoader | None = None,
    fast: bool = False,
    reuse: Reuse | None = None,
    stored: SidePlans | None = None,
    builds: SideBuilds | None = None,
) -> PlannedSide:
    """Plan with real secrets and, when any were read, with redacted ones; diff the twins.

    `fast` (a hierarchy source alone): plan the twin only of the deployments that read
    SOPS files, the rest equals the real plan; `reuse` (fast too): take the deployments
    whose inputs the change leaves alone from the base side instead of planning them;
    `stored` (fast too): take deployments from the plan cache, and store what is planned;
    `builds`: what was built for this side already (its discovered fleet).
    """
    decoder = secrets if isinstance(secrets, SopsDecoder) else None
    recording = RecordingSecrets(secrets or NoSecrets())
    taking = _Taking(reuse, stored)
    choosing = Choosing(options.selection, taking.skip)
    builds = SideBuilds() if builds is None else builds  # the twin takes the real plan's
    planned = plan_side(
        root,
        options=options,
        renderer=renderer,
        secrets=recording,
        decoder=decoder,
        select=choosing,
        builds=builds,
    )
    reused = frozenset(choosing.skipped - taking.stored.keys())
    real, reused_twins = planned, Plan()
    if choosing.skipped:
        reused_twins = reuse.twins(reused) if reuse is not None else Plan()
        parts = [
            (reused, reuse.plans(reused) if reuse is not None else Plan()),
            (taking.stored, Plan(releases=tuple(r for rs in taking.stored.values() for r in rs))),
            (choosing.seen, planned),
        ]
        real = replace(planned, releases=assemble(choosing.seen, parts))
    inherited = reused & reuse.basis.secret_keys if reuse is not None else frozenset()
    # Secrets of object sets (SOPS files that are objects) are paired where they are read.
    objects = frozenset(real.replacements)
    # A release may also read a Secret a build decrypted (a Flux Kustomization's), which
    # no secrets loader sees.
    secrets_read = recording.used or bool(real.replacements and real.releases)
    needed = twin_keys(planned, choosing, recording) if secrets_read else set()
    if stored is not None:
        _store(stored, choosing, planned, needed, frozenset(recording.leaves))
    if not secrets_read and not inherited:
        return PlannedSide(real, real, dict(real.replacements), objects, choosing.seen, reused)
    only = needed if fast else None
    twin = Plan()
    if secrets_read:
        twin = _twin_plan(root, options, renderer, recording, decoder, only=only, builds=builds)
    if fast:
        parts = [(reused, reused_twins), (needed, twin), (choosing.seen, real)]
        errors = twin.errors if secrets_read else real.errors
        twin = replace(twin, releases=assemble(choosing.seen, parts), errors=errors)
    replacements = twin_replacements(real, twin, reused)
    leaves = frozenset(recording.leaves) | objects
    secret_keys = frozenset(needed) | inherited if fast else frozenset(choosing.seen)
    return PlannedSide(
        real, twin, replacements, leaves, choosing.seen, reused, secret_keys, recording.used
    )


@dataclass
class _Taking:
    """Which selected deployments are not planned: reused from the base side, or stored."""

    reuse: Reuse | None
    cache: SidePlans | None
    stored: dict[DeploymentKey, tuple[ReleasePlan, ...]] = field(default_factory=dict)

    def skip(self, cluster: Cluster, deployment: DeploymentDir) -> bool:
        """Taken from the base side or the plan cache (the base side first)."""
        if self.reuse is not None and self.reuse.reusable(cluster, deployment):
            return True
        found = self.cache.lookup(cluster, deployment) if self.cache is not None else None
        if found is None:
            return False
        self.stored[(cluster.path, deployment.name)] = found
        return True


def _store(
    cache: SidePlans,
    choosing: Choosing,
    planned: Plan,
    secret: set[DeploymentKey],
    leaves: frozenset[str],
) -> None:
    """Store the deployments just planned that no secret reached and that did not fail."""
    skipped = secret | choosing.skipped | failed_keys(planned.errors)
    safe = secret_free(planned, planned, leaves)
    for key, releases in by_deployment(planned.releases).items():
        if key in skipped or not all(release.id in safe for release in releases):
            continue
        cluster, deployment = choosing.seen[key]
        cache.save(cluster, deployment, releases)


def _twin_plan(
    root: Path,
    options: SideOptions,
    renderer: TemplateRenderer,
    recording: RecordingSecrets,
    decoder: SopsDecoder | None,
    *,
    only: set[DeploymentKey] | None,
    builds: SideBuilds,
) -> Plan:
    """The redacted twin of every selected deployment, or `only` of those."""
    select: Selector = options.selection
    if only is not None:
        select = Choosing(options.selection, lambda c, d: (c.path, d.name) not in only)
    return plan_side(
        root,
        options=options,
        renderer=renderer,
        secrets=RedactedSecrets(recording.inner),
        decoder=decoder,
        twin=True,
        select=select,
        builds=builds,
    )


ProgressBar = Callable[[int], AbstractContextManager[Callable[[], None]]]
"""Given the number of releases, a context yielding `advance()` (e.g. a terminal bar)."""


def no_bar(total: int) -> AbstractContextManager[Callable[[], None]]:
    """A progress bar that shows nothing."""
    return nullcontext(lambda: None)


def render_side(
    root: Path,
    *,
    options: SideOptions,
    tools: Tools,
    renderer: TemplateRenderer,
    secrets: SecretsLoader | None = None,
    bar: ProgressBar = no_bar,
    fast: bool = False,
    reuse: Reuse | None = None,
    stored: SidePlans | None = None,
) -> SideRender:
    """Plan and render one checkout (`fast`, `reuse`, `stored`: see `plan_twins`)."""
    planned = plan_twins(
        root,
        options=options,
        renderer=renderer,
        secrets=secrets,
        fast=fast,
        reuse=reuse,
        stored=stored,
    )
    return render_planned(root, planned, options=options, tools=tools, bar=bar, reuse=reuse)


def render_planned(
    root: Path,
    planned: PlannedSide,
    *,
    options: SideOptions,
    tools: Tools,
    bar: ProgressBar = no_bar,
    reuse: Reuse | None = None,
    identical: frozenset[DeploymentKey] = frozenset(),
) -> SideRender:
    """Render a planned side; the deployments `identical` are left unrendered on both
    sides (reviewer/unrendered.py), those `reuse` took are the base side's renders (without
    `reuse`, those are rendered here)."""
    plan = refuse_secret_charts(planned.plan, planned.twin)
    apart = identical | (planned.reused if reuse is not None else frozenset())
    fresh = _without(plan, apart)
    with bar(len(fresh.releases)) as advance:
        snapshot = render_plan(
            fresh,
            **_render_args(root, tools),
            progress=lambda _: advance(),
            persist=secret_free(
                planned.plan, planned.twin, (*planned.leaves, *planned.replacements)
            ),
        )
    plans = {**planned.plan.input_plans(), **{r.id: r for r in planned.twin.releases}}
    published = _published(planned, plan, snapshot, apart, lambda p: _render(p, root, tools))
    taken = planned.reused - identical
    if reuse is not None and taken:
        # They have the chart and values of releases the base side rendered.
        tools.cache.reused += len(_only(plan, taken).releases)
        snapshot = _with(snapshot, reuse.rendered(taken))
        if published is not None:
            published = _with(published, reuse.published(taken))
    if identical:
        unchanged = unrendered.stand_ins(plan.releases, identical, root)
        tools.cache.identical += len(unchanged)
        snapshot = _with(snapshot, unchanged)
        published = _with(published, unchanged) if published is not None else None
    inner = expand_side(
        root,
        real=snapshot,
        shown=published or snapshot,
        inputs={rid: release.inputs for rid, release in plans.items()},
        render=lambda found: _render(found, root, tools),
        options=options.nested,
    )
    if inner.real or inner.shown:
        snapshot, published = inner.merged(snapshot, published or snapshot)
        plans.update({release.id: release for release in inner.plans})
    return SideRender(
        snapshot,
        planned.replacements,
        plans,
        real=tuple(plan.releases),
        published=published,
        leaves=planned.leaves,
        basis=basis_of(planned, snapshot, published) if planned.seen else None,
    )


def basis_of(
    planned: PlannedSide, snapshot: Snapshot | None = None, published: Snapshot | None = None
) -> Basis:
    """What a head side may reuse of this one (without `snapshot`: its plans only)."""
    return Basis(planned.plan, planned.twin, planned.seen, snapshot, published, planned.secret_keys)


def _published(
    planned: PlannedSide,
    plan: Plan,
    snapshot: Snapshot,
    apart: frozenset[DeploymentKey],
    render: Callable[[Plan], Snapshot],
) -> Snapshot | None:
    """The secret-derived positions of `snapshot` in their twin form; None: no secrets."""
    if not planned.has_secrets:
        return None
    # The unfiltered plan: a refused chart reference is told from the twin.
    published = publish_twins(
        _without(planned.plan, apart),
        _without(planned.twin, apart),
        snapshot,
        render,
    )
    # Object sets have no twin: their secrets are in the replacement map already.
    releases = sorted((*published.releases, *plan.objects), key=lambda r: r.id)
    return replace(published, releases=tuple(releases))


def _with(snapshot: Snapshot, taken: Sequence[RenderedRelease]) -> Snapshot:
    """`snapshot` with the releases taken from the base side, in release order."""
    releases = sorted((*snapshot.releases, *taken), key=lambda r: r.id)
    return replace(snapshot, releases=tuple(releases))


def _without(plan: Plan, reused: frozenset[DeploymentKey]) -> Plan:
    """`plan` without the deployments taken from the base side (rendered there already)."""
    if not reused:
        return plan
    return replace(
        plan,
        releases=tuple(r for r in plan.releases if key_of(r.id) not in reused),
        errors=tuple(e for e in plan.errors if (e.cluster, e.deployment) not in reused),
    )


def _only(plan: Plan, keys: frozenset[DeploymentKey]) -> Plan:
    """`plan`'s releases of the deployments `keys`."""
    return replace(plan, releases=tuple(r for r in plan.releases if key_of(r.id) in keys))


def _render_args(root: Path, tools: Tools) -> dict[str, Any]:
    return {"root": root, "fetcher": tools.fetcher, "pool": tools.pool, "cache": tools.cache}


def _render(plan: Plan, root: Path, tools: Tools) -> Snapshot:
    return render_plan(plan, **_render_args(root, tools))
