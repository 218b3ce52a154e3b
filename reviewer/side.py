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
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from reviewer import config as config_mod
from reviewer.charts import ChartFetcher, Credentials
from reviewer.config import CONFIG_FILE, RepoConfig
from reviewer.discover import Cluster, DeploymentDir, Layout
from reviewer.engine import make_engine
from reviewer.filters import check_selection
from reviewer.gotmpl import TemplateRenderer
from reviewer.limits import LimitFlags, Limits
from reviewer.model import ReleaseId, RenderedRelease, Resource, Snapshot
from reviewer.plan import Plan, ReleasePlan
from reviewer.redact import LeakGuard, Redactor, leaf_texts, redact_tree, replacement_map
from reviewer.refguard import refuse_secret_charts
from reviewer.regenerated import Regeneration, find_regenerated, publishable
from reviewer.render import RenderCache, render_again, render_plan
from reviewer.sandbox import SandboxPool
from reviewer.sops import KeylessMode, SopsDecoder
from reviewer.sources import registry
from reviewer.sources.hierarchy import Hierarchy
from reviewer.sources.protocol import PlanContext, Source
from reviewer.twins import publish_twins
from reviewer.values import NoSecrets, SecretsLoader, Values
from reviewer.workers import Pool


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


@dataclass(frozen=True)
class Tooling:
    """Which Helm engine renders and where charts come from."""

    cache_dir: Path | None = None  # None: a throwaway cache for this run only
    credentials: Credentials = field(default_factory=lambda: Credentials({}, []))
    helm_engine: str = "embedded"
    helm_binary: Path | None = None
    offline: bool = False
    jobs: int = 1
    limits: LimitFlags = field(default_factory=LimitFlags)
    """Render limits given on the command line (they win over `.reviewer.yaml`)."""
    allow_loopback: bool = False
    """Chart repositories on loopback addresses allowed (local use, tests)."""

    def limits_with(self, settings: RepoConfig) -> Limits:
        """The render limits: command line, else the base side's `.reviewer.yaml`."""
        return self.limits.over(settings.limits)


@dataclass(frozen=True)
class Tools:
    """What renders one run's releases; both sides of a diff share it, caches included."""

    pool: Pool
    fetcher: ChartFetcher
    cache: RenderCache = field(default_factory=RenderCache)


@contextmanager
def open_tooling(tooling: Tooling, settings: RepoConfig | None = None) -> Iterator[Tools]:
    """The render pool and the chart fetcher for one run, closed afterwards.

    `settings` (the base side's `.reviewer.yaml`) give the render limits and chart hosts.
    """
    settings = settings or RepoConfig()
    engine = make_engine(tooling.helm_engine, binary=tooling.helm_binary)
    pool: Pool = SandboxPool(
        engine, jobs=tooling.jobs, binary=tooling.helm_binary, limits=tooling.limits_with(settings)
    )
    try:
        with (
            _cache_dir(tooling.cache_dir) as cache_dir,
            ChartFetcher(
                cache_dir=cache_dir,
                offline=tooling.offline,
                credentials=tooling.credentials,
                policy=replace(settings.charts, allow_loopback=tooling.allow_loopback),
            ) as fetcher,
        ):
            yield Tools(pool, fetcher)
    finally:
        pool.close()
        engine.close()


@contextmanager
def _cache_dir(given: Path | None) -> Iterator[Path]:
    """`given`, or a throwaway directory removed when the run ends."""
    if given is not None:
        yield given
        return
    with tempfile.TemporaryDirectory(prefix="reviewer-charts-") as temporary:
        yield Path(temporary)


def plan_side(
    root: Path,
    *,
    options: SideOptions,
    renderer: TemplateRenderer,
    secrets: SecretsLoader | None = None,
    decoder: SopsDecoder | None = None,
    twin: bool = False,
) -> Plan:
    """Plan every selected release and object set of every source of the checkout at `root`.

    `decoder` decrypts SOPS files that are objects themselves (default: `secrets` when it
    is one); `twin` plans the redacted twin, where only Helm values matter.
    """
    if decoder is None and isinstance(secrets, SopsDecoder):
        decoder = secrets
    context = PlanContext(
        root=root,
        renderer=renderer,
        secrets=secrets or NoSecrets(),
        decoder=decoder,
        select=options.selection,
        display_root=options.display_root,
        twin=twin,
    )
    sources = options.sources or (Hierarchy(layout=options.layout),)
    plan = Plan()
    for source in sources:
        found = source.plan(context)
        plan.releases.extend(found.releases)
        plan.errors.extend(found.errors)
        plan.objects.extend(found.objects)
        plan.replacements.update(found.replacements)
        plan.inputs.update(found.inputs)
    return plan


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

    def load(self, path: Path, *, source: str) -> Values:
        """The file's values, unchanged."""
        self.used = True
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
) -> PlannedSide:
    """Plan with real secrets and, when any were read, with redacted ones; diff the twins."""
    decoder = secrets if isinstance(secrets, SopsDecoder) else None
    recording = _Recording(secrets or NoSecrets())
    real = plan_side(root, options=options, renderer=renderer, secrets=recording, decoder=decoder)
    # Secrets of object sets (SOPS files that are objects) are paired where they are read.
    objects = frozenset(real.replacements)
    if not recording.used:
        return PlannedSide(real, real, dict(real.replacements), objects)
    twin = plan_side(
        root,
        options=options,
        renderer=renderer,
        secrets=_RedactedSecrets(recording.inner),
        decoder=decoder,
        twin=True,
    )
    redacted = {release.id: release for release in twin.releases}
    replacements: dict[str, str] = dict(real.replacements)
    for release in real.releases:
        other = redacted.get(release.id)
        if other is not None:
            replacements.update(replacement_map(release.values, other.values))
    return PlannedSide(real, twin, replacements, frozenset(recording.leaves) | objects)


ProgressBar = Callable[[int], AbstractContextManager[Callable[[], None]]]
"""Given the number of releases, a context yielding `advance()` (e.g. a terminal bar)."""


def _no_bar(total: int) -> AbstractContextManager[Callable[[], None]]:
    return nullcontext(lambda: None)


def render_side(
    root: Path,
    *,
    options: SideOptions,
    tools: Tools,
    renderer: TemplateRenderer,
    secrets: SecretsLoader | None = None,
    bar: ProgressBar = _no_bar,
) -> SideRender:
    """Plan and render one checkout."""
    planned = plan_twins(root, options=options, renderer=renderer, secrets=secrets)
    plan = refuse_secret_charts(planned.plan, planned.twin)
    with bar(len(plan.releases)) as advance:
        snapshot = render_plan(
            plan,
            root=root,
            fetcher=tools.fetcher,
            pool=tools.pool,
            cache=tools.cache,
            progress=lambda _: advance(),
        )
    plans = {**planned.plan.input_plans(), **{r.id: r for r in planned.twin.releases}}
    published = None
    if planned.has_secrets:
        # The unfiltered plan: a refused chart reference is told from the twin.
        published = publish_twins(
            planned.plan,
            planned.twin,
            snapshot,
            lambda twin: render_plan(twin, **_render_args(root, tools)),
        )
        # Object sets have no twin: their secrets are in the replacement map already.
        published = replace(
            published,
            releases=tuple(sorted((*published.releases, *plan.objects), key=lambda r: r.id)),
        )
    return SideRender(
        snapshot,
        planned.replacements,
        plans,
        real=tuple(plan.releases),
        published=published,
        leaves=planned.leaves,
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


def redact_snapshot(snapshot: Snapshot, redactor: Redactor) -> Snapshot:
    """A copy of `snapshot` with every object and error message redacted."""
    return Snapshot(
        releases=tuple(_redact_release(release, redactor) for release in snapshot.releases),
        errors=tuple(redactor.redact_text(error) for error in snapshot.errors),
        warnings=snapshot.warnings,
    )


def _redact_release(release: RenderedRelease, redactor: Redactor) -> RenderedRelease:
    resources = tuple(_redact_resource(resource, redactor) for resource in release.resources)
    error = redactor.redact_text(release.error) if release.error is not None else None
    labels = {key: redactor.redact_text(value) for key, value in release.labels.items()}
    return replace(release, resources=resources, error=error, labels=labels)


# --- preparing the sides of one command: render, then redact ------------------------------


@dataclass(frozen=True)
class SideRequest:
    """What a rendering command asks for: options, layout overrides, secrets and tooling."""

    options: SideOptions = field(default_factory=SideOptions)
    definitions: str | None = None
    templates: str | None = None
    secrets: KeylessMode = KeylessMode.FALLBACK
    tooling: Tooling = field(default_factory=Tooling)


SideWatch = Callable[[int, RenderCache], AbstractContextManager[ProgressBar]]
"""Around the rendering of side `i` (with the shared cache): yields its progress bar."""


def _unwatched(index: int, cache: RenderCache) -> AbstractContextManager[ProgressBar]:
    return nullcontext(_no_bar)


@dataclass(frozen=True)
class PreparedSides:
    """Sides rendered and redacted together; `redactor` is theirs (the union of their maps)."""

    config: RepoConfig
    rendered: tuple[SideRender, ...]
    """As rendered: real values, for what must compare unredacted content."""
    redacted: tuple[Snapshot, ...]
    redactor: Redactor
    keyless: str | None
    """The report line saying secrets were not decrypted, if any were not."""
    regeneration: Regeneration = field(default_factory=Regeneration)
    """Fields the last side's charts regenerate on every render (found by rendering twice)."""
    sources: str = ""
    """Which sources were planned, and whether they were declared or detected."""

    @property
    def notes(self) -> tuple[str, ...]:
        """The report's warnings: secrets not decrypted, then what the twin alignment masked."""
        keyless = (self.keyless,) if self.keyless else ()
        found = (w for side in self.redacted for w in side.warnings)
        return tuple(dict.fromkeys((*keyless, *found)))

    def guard(self) -> LeakGuard:
        """The leak guard of the finished redaction (map keys redacted so far are public)."""
        return self.redactor.guard()


def _leaves(rendered: Sequence[SideRender]) -> list[str]:
    return [leaf for side in rendered for leaf in side.leaves]


def prepare_sides(
    roots: Sequence[Path],
    request: SideRequest,
    *,
    config_root: Path,
    marker_key: bytes | None,
    watch: SideWatch = _unwatched,
    unknown_filter: Callable[[str], None] | None = None,
) -> PreparedSides:
    """Render every root with one tool set, then redact all with the union of their maps.

    A secret that a change removes must not leak through the baseline, nor a new one
    through the other side. Settings come from `config_root` (a diff's base side). A filter
    naming nothing fails before rendering; with `unknown_filter` it is only reported there.
    """
    config = config_mod.load(config_root, request.options.config_file)
    layout = config_mod.with_overrides(
        config, definitions=request.definitions, templates=request.templates
    )
    sources = _sources(config, layout, config_root)
    options = replace(request.options, layout=layout, sources=sources)
    selection = options.selection
    hierarchies = [source for source in sources if isinstance(source, Hierarchy)]
    # Filters are checked against a fleet; names of other kinds' sources are not known there.
    if len(hierarchies) == len(sources) == 1:
        check_selection(
            roots,
            hierarchies[0].layout,
            selection.clusters,
            selection.deployments,
            warn=unknown_filter,
        )
    renderer = TemplateRenderer(request.tooling.limits_with(config))
    decoder = SopsDecoder(keyless=request.secrets)
    rendered: list[SideRender] = []
    with open_tooling(request.tooling, config) as tools:
        for index, root in enumerate(roots):
            with watch(index, tools.cache) as bar:
                rendered.append(
                    render_side(
                        root,
                        options=options,
                        tools=tools,
                        renderer=renderer,
                        secrets=decoder,
                        bar=bar,
                    )
                )
        regeneration = _regeneration(roots, rendered, tools)
    replacements = {real: shown for side in rendered for real, shown in side.replacements.items()}
    redactor = Redactor(replacements, key=marker_key, leaves=_leaves(rendered))
    return PreparedSides(
        config=config,
        rendered=tuple(rendered),
        redacted=tuple(redact_snapshot(side.shown, redactor) for side in rendered),
        redactor=redactor,
        keyless=keyless_warning(decoder.keyless_sources),
        regeneration=regeneration,
        sources=registry.describe(sources, detected=not config.sources),
    )


def _sources(config: RepoConfig, layout: Layout, root: Path) -> tuple[Source, ...]:
    """Declared sources (from the base side), else detected ones; the layout given on
    the command line applies to a detected hierarchy."""
    if config.sources:
        return config.sources
    return registry.detect(root, layout)


def _regeneration(
    roots: Sequence[Path], rendered: Sequence[SideRender], tools: Tools
) -> Regeneration:
    """For a pair of sides: render the head's differing releases again and compare."""
    if len(rendered) != 2:
        return Regeneration()
    head = rendered[1]
    plans = {release.id: release for release in head.real}

    def again(ids: Sequence[ReleaseId]) -> dict[ReleaseId, RenderedRelease]:
        wanted = [plans[rid] for rid in ids if rid in plans]
        return render_again(
            wanted, root=roots[1], fetcher=tools.fetcher, pool=tools.pool, cache=tools.cache
        )

    found = find_regenerated(rendered[0].snapshot, head.snapshot, again)
    return publishable(found, head.shown)
