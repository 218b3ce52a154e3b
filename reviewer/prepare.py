"""Preparing the sides of one command: render every side, then redact all with one map.

Settings come from the base side; the sources are declared there or detected.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

from reviewer import config as config_mod
from reviewer import unrendered
from reviewer.changes import Changes
from reviewer.config import RepoConfig
from reviewer.discover import Layout
from reviewer.filters import check_selection
from reviewer.gotmpl import TemplateRenderer
from reviewer.limits import Limits
from reviewer.model import ReleaseId, RenderedRelease, Snapshot
from reviewer.plan_cache import SidePlans
from reviewer.plan_parts import plan_side_in_parts
from reviewer.redact import LeakGuard, Redactor
from reviewer.regenerated import Regeneration, find_regenerated, publishable
from reviewer.render import RenderCache, render_again
from reviewer.reuse import Reuse
from reviewer.side import (
    PlannedSide,
    ProgressBar,
    SideOptions,
    SideRender,
    basis_of,
    no_bar,
    plan_twins,
    render_planned,
    render_side,
)
from reviewer.side_redact import keyless_warning, redact_snapshot
from reviewer.sops import KeylessMode, SopsDecoder
from reviewer.sources import flux, registry
from reviewer.sources.hierarchy import Hierarchy
from reviewer.sources.protocol import Source
from reviewer.tooling import Tooling, Tools, open_tooling


@dataclass(frozen=True)
class SideRequest:
    """What a rendering command asks for: options, layout overrides, secrets and tooling."""

    options: SideOptions = field(default_factory=SideOptions)
    definitions: str | None = None
    templates: str | None = None
    secrets: KeylessMode = KeylessMode.FALLBACK
    tooling: Tooling = field(default_factory=Tooling)
    fast_path: bool = True
    """Plan twins only where SOPS files are read, and reuse the base side's unchanged
    deployments on the head side (`--no-fast-path`: plan and render everything)."""
    render_unchanged: bool = False
    """On the fast path, render deployments whose inputs are the same on both sides too
    (`fail-on-preexisting` needs their failures); by default neither side renders them."""


SideWatch = Callable[[int, RenderCache], AbstractContextManager[ProgressBar]]
"""Around the rendering of side `i` (with the shared cache): yields its progress bar."""


def _unwatched(index: int, cache: RenderCache) -> AbstractContextManager[ProgressBar]:
    return nullcontext(no_bar)


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
    stored_plans: int = 0
    """Deployments (of every side) whose plan was taken from the plan cache."""

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
    changes: Changes | None = None,
) -> PreparedSides:
    """Render every root with one tool set, then redact all with the union of their maps.

    A secret that a change removes must not leak through the baseline, nor a new one
    through the other side. Settings come from `config_root` (a diff's base side). A filter
    naming nothing fails before rendering; with `unknown_filter` it is only reported there.
    With `changes` (between two roots), the head side reuses what the change leaves alone.
    """
    config = config_mod.load(config_root, request.options.config_file)
    options = _side_options(request, config, roots, config_root)
    sources = options.sources
    hierarchies = [source for source in sources if isinstance(source, Hierarchy)]
    # Filters are checked against a fleet; names of other kinds' sources are not known there.
    if len(hierarchies) == len(sources) == 1:
        selection = options.selection
        check_selection(
            roots,
            hierarchies[0].layout,
            selection.clusters,
            selection.deployments,
            warn=unknown_filter,
        )
    limits = request.tooling.limits_with(config)
    renderer = TemplateRenderer(limits)
    decoder = SopsDecoder(keyless=request.secrets, programs=options.programs)
    fast = request.fast_path and len(sources) == len(hierarchies) == 1
    with open_tooling(request.tooling, config) as tools:
        stored = _plan_caches(changes, roots, tools, config, options)
        split = request.tooling.jobs >= 2
        rendering = _Rendering(options, tools, renderer, decoder, stored, limits, split)
        skip = (
            fast
            and not request.render_unchanged
            and changes is not None
            and len(roots) == 2
            and unrendered.skippable(changes, roots, nested=options.nested.expand)
        )
        rendered = (
            rendering.pair(roots, watch=watch, changes=changes)
            if skip and changes is not None
            else rendering.sides(roots, watch=watch, fast=fast, changes=changes)
        )
        regeneration = _regeneration(roots, rendered, tools)
    replacements = {real: shown for side in rendered for real, shown in side.replacements.items()}
    redactor = Redactor(replacements, key=marker_key, leaves=_leaves(rendered))
    return PreparedSides(
        config=config,
        rendered=tuple(rendered),
        redacted=_redact_all(rendered, redactor),
        redactor=redactor,
        keyless=keyless_warning(sorted(decoder.keyless_sources)),
        regeneration=regeneration,
        sources=registry.describe(sources, detected=not config.sources),
        stored_plans=sum(side.hits for side in rendering.stored if side is not None),
    )


def _side_options(
    request: SideRequest, config: RepoConfig, roots: Sequence[Path], config_root: Path
) -> SideOptions:
    """The request's options with the base side's layout, sources and nesting settings."""
    layout = config_mod.with_overrides(
        config, definitions=request.definitions, templates=request.templates
    )
    sources = _sources(config, layout, config_root)
    for root in roots if not config.sources else ():
        sources = (*sources, *flux.added_on(root, sources))  # a cluster the change adds
    return replace(request.options, layout=layout, sources=sources, nested=config.nested)


@dataclass(frozen=True)
class _Rendering:
    """What every side of one command is rendered with."""

    options: SideOptions
    tools: Tools
    renderer: TemplateRenderer
    decoder: SopsDecoder
    stored: tuple[SidePlans | None, ...] = ()
    """Each root's view of the plan cache (fast path with a render cache only)."""
    limits: Limits = field(default_factory=Limits)
    split: bool = False
    """Whether a large side planned from scratch may take two processes (`--jobs` 2+)."""

    def sides(
        self,
        roots: Sequence[Path],
        *,
        watch: SideWatch,
        fast: bool,
        changes: Changes | None,
    ) -> list[SideRender]:
        """Every root rendered in order; the head side of a pair may reuse the base side."""
        rendered: list[SideRender] = []
        for index, root in enumerate(roots):
            reuse = _reuse(rendered, changes, root) if fast and len(roots) == 2 else None
            stored = self._stored(index) if fast else None
            with watch(index, self.tools.cache) as bar:
                side = render_side(
                    root,
                    options=self.options,
                    tools=self.tools,
                    renderer=self.renderer,
                    secrets=self.decoder,
                    bar=bar,
                    fast=fast,
                    reuse=reuse,
                    stored=stored,
                )
            if stored is not None:
                stored.keep()
            rendered.append(side)
        return rendered

    def _stored(self, index: int) -> SidePlans | None:
        return self.stored[index] if index < len(self.stored) else None

    def pair(
        self, roots: Sequence[Path], *, watch: SideWatch, changes: Changes
    ) -> list[SideRender]:
        """Both sides planned first, then rendered without the deployments whose inputs
        the change leaves alone (reviewer/unrendered.py): neither side renders those."""
        base = self._plan(roots[0], stored=self._stored(0))
        head = self._plan(roots[1], Reuse(basis_of(base), changes, roots[1]), self._stored(1))
        identical = head.reused - unrendered.compared(base.plan, head.plan)
        rendered = []
        for index, (root, planned) in enumerate(zip(roots, (base, head), strict=True)):
            with watch(index, self.tools.cache) as bar:
                # The head renders what it took from the base's plan but must show: the
                # shared in-memory cache makes that the base side's render, not a new one.
                side = render_planned(
                    root,
                    planned,
                    options=self.options,
                    tools=self.tools,
                    bar=bar,
                    identical=identical,
                )
            rendered.append(side)
        return rendered

    def _plan(
        self, root: Path, reuse: Reuse | None = None, stored: SidePlans | None = None
    ) -> PlannedSide:
        planned = self._plan_side(root, reuse, stored)
        if stored is not None:
            stored.keep()
        return planned

    def _plan_side(self, root: Path, reuse: Reuse | None, stored: SidePlans | None) -> PlannedSide:
        if self.split:
            return plan_side_in_parts(
                root,
                options=self.options,
                renderer=self.renderer,
                decoder=self.decoder,
                limits=self.limits,
                stored=stored,
                reuse=reuse,
            )
        return plan_twins(
            root,
            options=self.options,
            renderer=self.renderer,
            secrets=self.decoder,
            fast=True,
            reuse=reuse,
            stored=stored,
        )


def _plan_caches(
    changes: Changes | None,
    roots: Sequence[Path],
    tools: Tools,
    config: RepoConfig,
    options: SideOptions,
) -> tuple[SidePlans | None, ...]:
    """Each root's view of the plan cache: with a render cache and both sides' digests."""
    store = tools.plans
    if store is None or changes is None or len(changes.sides) != len(roots):
        return ()
    # Besides the files planning reads: the settings (read from the base side), the
    # layout given on the command line, and the root shown in reproduce commands.
    context = repr((config, options.layout, options.display_root))
    return tuple(
        SidePlans(store, context, digests, root)
        for digests, root in zip(changes.sides, roots, strict=True)
    )


def _reuse(rendered: Sequence[SideRender], changes: Changes | None, root: Path) -> Reuse | None:
    """For the head side (the second): what it may take from the base side."""
    if changes is None or len(rendered) != 1 or rendered[0].basis is None:
        return None
    return Reuse(rendered[0].basis, changes, root)


def _redact_all(rendered: Sequence[SideRender], redactor: Redactor) -> tuple[Snapshot, ...]:
    """Every side redacted; a release the head took from the base is redacted once."""
    done: dict[int, RenderedRelease] = {}  # `rendered` keeps the originals (and ids) alive
    return tuple(redact_snapshot(side.shown, redactor, done=done) for side in rendered)


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
    return publishable(found, head.shown) if found else found
