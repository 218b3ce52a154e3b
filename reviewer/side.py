"""One side of a review: discover → plan → render → redact, for one repository checkout.

Each side is planned twice when it uses SOPS: once with the real secrets (fed
to Helm) and once with every secret leaf redacted before merging, so values
derived in `.gotmpl` files are redacted too. Leaves that differ between the
twins form the replacement map applied to the rendered objects.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from reviewer.config import CONFIG_FILE
from reviewer.discover import Cluster, DeploymentDir, Layout
from reviewer.gotmpl import TemplateRenderer
from reviewer.model import ReleaseId, RenderedRelease, Resource, Snapshot
from reviewer.nested_render import NestedOptions, expand_side
from reviewer.plan import Plan, ReleasePlan
from reviewer.proc import Programs
from reviewer.redact import Redactor, leaf_texts, redact_tree, replacement_map
from reviewer.refguard import refuse_secret_charts
from reviewer.render import render_plan
from reviewer.render_cache import secret_free
from reviewer.reuse import (
    Basis,
    Choosing,
    DeploymentKey,
    Reuse,
    assemble,
    failed_keys,
    key_of,
    never,
)
from reviewer.sops import SopsDecoder
from reviewer.sources.hierarchy import Hierarchy
from reviewer.sources.protocol import PlanContext, Selector, Source
from reviewer.tooling import Tools
from reviewer.twins import publish_twins
from reviewer.values import SOPS_SUFFIX, NoSecrets, SecretsLoader, Values


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

    def holds(self, cluster: str) -> bool:
        """True when `cluster` belongs to this shard."""
        digest = hashlib.sha256(cluster.encode()).digest()
        return int.from_bytes(digest[:8], "big") % self.total == self.index - 1


@dataclass(frozen=True)
class Selection:
    """Which clusters and deployments to render (empty = all)."""

    clusters: Sequence[str] = ()
    deployments: Sequence[str] = ()
    shard: Shard | None = None

    def __call__(self, cluster: Cluster, deployment: DeploymentDir) -> bool:
        """True when the deployment of that cluster is selected."""
        if self.shard is not None and not self.shard.holds(cluster.path):
            return False
        if self.clusters and not {cluster.path, cluster.name} & set(self.clusters):
            return False
        return not self.deployments or deployment.name in self.deployments

    def location(self, cluster: str, deployment: str) -> bool:
        """True when releases at (cluster, deployment) of a non-hierarchy source are selected."""
        if self.shard is not None and not self.shard.holds(cluster):
            return False
        if self.clusters and cluster not in self.clusters:
            return False
        return not self.deployments or deployment in self.deployments


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
) -> Plan:
    """Plan every selected release and object set of every source of the checkout at `root`.

    `decoder` decrypts SOPS files that are objects themselves (default: `secrets` when it
    is one); `twin` plans the redacted twin, where only Helm values matter; `select`
    replaces the options' selection.
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


class _RedactedSecrets:
    """The redacted twin of a secrets loader; remembers whether any SOPS file was read."""

    def __init__(self, inner: SecretsLoader) -> None:
        self.inner = inner
        self.used = False

    def load(self, path: Path, *, source: str) -> Values:
        """The file's values with every leaf redacted (keyless placeholders stay readable)."""
        self.used = True
        if isinstance(self.inner, SopsDecoder):
            decoded = self.inner.decode(path, source=source)
            if decoded.keyless:
                return decoded.values
            return _redacted(decoded.values)
        return _redacted(self.inner.load(path, source=source))


def _redacted(values: Values) -> Values:
    redacted: Values = redact_tree(values)
    return redacted


class _Recording:
    """Passes loads through; records whether any SOPS file was read, and every leaf read."""

    def __init__(self, inner: SecretsLoader) -> None:
        self.inner = inner
        self.used = False
        self.leaves: set[str] = set()
        self.sources: set[str] = set()

    def load(self, path: Path, *, source: str) -> Values:
        """The file's values, unchanged."""
        self.used = True
        self.sources.add(source)
        if not isinstance(self.inner, SopsDecoder):
            values = self.inner.load(path, source=source)
            self.leaves.update(leaf_texts(values))
            return values
        decoded = self.inner.decode(path, source=source)
        if not decoded.keyless:  # placeholders are no secrets
            self.leaves.update(_secret_leaves(decoded.values))
        return decoded.values


def _secret_leaves(values: Values) -> list[str]:
    """The leaves of a decrypted file; of a Kubernetes Secret only its data (decoded), as
    its metadata names it in reports and would trip the leak guard."""
    if values.get("apiVersion") != "v1" or values.get("kind") != "Secret":
        return leaf_texts(values)
    data = values.get("data") if isinstance(values.get("data"), dict) else {}
    texts = [_base64_text(text) for text in leaf_texts(data)]
    return [*texts, *leaf_texts(values.get("stringData") or {})]


def _base64_text(text: str) -> str:
    try:
        return base64.b64decode(text, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return text


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
    """What a head side may reuse of this one (fast path only)."""

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
) -> PlannedSide:
    """Plan with real secrets and, when any were read, with redacted ones; diff the twins.

    `fast` (a hierarchy source alone): plan the twin only of the deployments that read
    SOPS files, the rest equals the real plan; `reuse` (fast too): take the deployments
    whose inputs the change leaves alone from the base side instead of planning them.
    """
    decoder = secrets if isinstance(secrets, SopsDecoder) else None
    recording = _Recording(secrets or NoSecrets())
    choosing = Choosing(options.selection, reuse.reusable if reuse is not None else never)
    planned = plan_side(
        root,
        options=options,
        renderer=renderer,
        secrets=recording,
        decoder=decoder,
        select=choosing,
    )
    reused = frozenset(choosing.skipped)
    real, reused_twins = planned, Plan()
    if reuse is not None and reused:
        reused_twins = reuse.twins(reused)
        parts = [(reused, reuse.plans(reused)), (choosing.seen, planned)]
        real = replace(planned, releases=assemble(choosing.seen, parts))
    inherited = reused & reuse.basis.secret_keys if reuse is not None else frozenset()
    # Secrets of object sets (SOPS files that are objects) are paired where they are read.
    objects = frozenset(real.replacements)
    if real.replacements and real.releases:
        recording.used = True  # a release may read a Secret a build decrypted (Flux Kustomization)
    if not recording.used and not inherited:
        return PlannedSide(real, real, dict(real.replacements), objects, choosing.seen, reused)
    needed = _secret_keys(planned, choosing, recording)
    twin = _twin_plan(root, options, renderer, recording, decoder, only=needed if fast else None)
    if fast:
        parts = [(reused, reused_twins), (needed, twin), (choosing.seen, real)]
        errors = twin.errors if recording.used else real.errors
        twin = replace(twin, releases=assemble(choosing.seen, parts), errors=errors)
    redacted = {release.id: release for release in twin.releases}
    replacements: dict[str, str] = dict(real.replacements)
    for release in real.releases:
        other = redacted.get(release.id)
        # The base side's map holds the pairs of the deployments taken from it.
        if other is not None and other is not release and key_of(release.id) not in reused:
            replacements.update(replacement_map(release.values, other.values))
    leaves = frozenset(recording.leaves) | objects
    secret_keys = frozenset(needed) | inherited if fast else frozenset(choosing.seen)
    return PlannedSide(real, twin, replacements, leaves, choosing.seen, reused, secret_keys)


def _twin_plan(
    root: Path,
    options: SideOptions,
    renderer: TemplateRenderer,
    recording: _Recording,
    decoder: SopsDecoder | None,
    *,
    only: set[DeploymentKey] | None,
) -> Plan:
    """The redacted twin of every selected deployment, or `only` of those."""
    if not recording.used:
        return Plan()
    select: Selector = options.selection
    if only is not None:
        select = Choosing(options.selection, lambda c, d: (c.path, d.name) not in only)
    return plan_side(
        root,
        options=options,
        renderer=renderer,
        secrets=_RedactedSecrets(recording.inner),
        decoder=decoder,
        twin=True,
        select=select,
    )


def _secret_keys(planned: Plan, choosing: Choosing, recording: _Recording) -> set[DeploymentKey]:
    """Planned deployments whose twin may differ from the real plan: those that read a SOPS
    file, failed, or planned no release (a template may branch on a secret)."""
    if not recording.used:
        return set()
    keys = failed_keys(planned.errors)
    with_releases: set[DeploymentKey] = set()
    for release in planned.releases:
        key = key_of(release.id)
        with_releases.add(key)
        if _reads_secrets(release, recording.sources):
            keys.add(key)
    keys |= {key for key in choosing.seen if key not in with_releases}
    return keys - choosing.skipped


def _reads_secrets(release: ReleasePlan, sources: set[str]) -> bool:
    if not release.inputs.isdisjoint(sources):
        return True
    return any(layer.secret or layer.source.endswith(SOPS_SUFFIX) for layer in release.layers)


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
) -> SideRender:
    """Plan and render one checkout (`fast`, `reuse`: see `plan_twins`)."""
    planned = plan_twins(
        root, options=options, renderer=renderer, secrets=secrets, fast=fast, reuse=reuse
    )
    plan = refuse_secret_charts(planned.plan, planned.twin)
    fresh = _without(plan, planned.reused)
    with bar(len(fresh.releases)) as advance:
        snapshot = render_plan(
            fresh,
            root=root,
            fetcher=tools.fetcher,
            pool=tools.pool,
            cache=tools.cache,
            progress=lambda _: advance(),
            persist=secret_free(
                planned.plan, planned.twin, (*planned.leaves, *planned.replacements)
            ),
        )
    plans = {**planned.plan.input_plans(), **{r.id: r for r in planned.twin.releases}}
    published = None
    if planned.has_secrets:
        # The unfiltered plan: a refused chart reference is told from the twin.
        published = publish_twins(
            _without(planned.plan, planned.reused),
            _without(planned.twin, planned.reused),
            snapshot,
            lambda twin: render_plan(twin, **_render_args(root, tools)),
        )
        # Object sets have no twin: their secrets are in the replacement map already.
        published = replace(
            published,
            releases=tuple(sorted((*published.releases, *plan.objects), key=lambda r: r.id)),
        )
    if reuse is not None and planned.reused:
        # They have the chart and values of releases the base side rendered.
        tools.cache.reused += len(plan.releases) - len(fresh.releases)
        snapshot = _with(snapshot, reuse.rendered(planned.reused))
        if published is not None:
            published = _with(published, reuse.published(planned.reused))
    inner = expand_side(
        root,
        real=snapshot,
        shown=published or snapshot,
        inputs={rid: release.inputs for rid, release in plans.items()},
        render=lambda found: render_plan(found, **_render_args(root, tools)),
        options=options.nested,
    )
    if inner.real or inner.shown:
        snapshot, published = inner.merged(snapshot, published or snapshot)
        plans.update({release.id: release for release in inner.plans})
    basis = None
    if fast:
        basis = Basis(
            planned.plan, planned.twin, planned.seen, snapshot, published, planned.secret_keys
        )
    return SideRender(
        snapshot,
        planned.replacements,
        plans,
        real=tuple(plan.releases),
        published=published,
        leaves=planned.leaves,
        basis=basis,
    )


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


def _render_args(root: Path, tools: Tools) -> dict[str, Any]:
    return {"root": root, "fetcher": tools.fetcher, "pool": tools.pool, "cache": tools.cache}


def _redact_resource(resource: Resource, redactor: Redactor) -> Resource:
    # Without secrets only Secret data needs masking; other objects stay as they are.
    if not redactor.has_secrets and resource.key.kind not in ("Secret", "List"):
        return resource
    return Resource.from_body(redactor.redact_manifest(resource.body), source=resource.source)


KEYLESS_FIX = (
    "to decrypt, give sops a key: SOPS_AGE_KEY_FILE=path/to/keys.txt or SOPS_AGE_KEY "
    "(or the KMS/PGP credentials the files name)"
)
_NAMED_FILES = 5


def keyless_warning(sources: list[str]) -> str | None:
    """The report line saying secrets were not decrypted, naming the files and the fix."""
    if not sources:
        return None
    named = ", ".join(sources[:_NAMED_FILES])
    if len(sources) > _NAMED_FILES:
        named += f" and {len(sources) - _NAMED_FILES} more"
    return (
        f"secrets were not decrypted (no usable SOPS key) in {len(sources)} file(s) ({named}): "
        f"secret values render as placeholders and their changes are not visible; {KEYLESS_FIX}"
    )


def redact_snapshot(
    snapshot: Snapshot, redactor: Redactor, *, done: dict[int, RenderedRelease] | None = None
) -> Snapshot:
    """A copy of `snapshot` with every object and error message redacted.

    `done`: releases redacted before, by `id()` of the original (the caller keeps the
    originals alive); a release found there is not redacted again.
    """
    done = {} if done is None else done
    releases = []
    for release in snapshot.releases:
        redacted = done.get(id(release))
        if redacted is None:
            redacted = done[id(release)] = _redact_release(release, redactor)
        releases.append(redacted)
    return Snapshot(
        releases=tuple(releases),
        errors=tuple(redactor.redact_text(error) for error in snapshot.errors),
        warnings=snapshot.warnings,
    )


def _redact_release(release: RenderedRelease, redactor: Redactor) -> RenderedRelease:
    resources = tuple(_redact_resource(resource, redactor) for resource in release.resources)
    error = redactor.redact_text(release.error) if release.error is not None else None
    labels = {key: redactor.redact_text(value) for key, value in release.labels.items()}
    return replace(release, resources=resources, error=error, labels=labels)
