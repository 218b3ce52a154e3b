"""The tooling of one run: the Helm engine's render pool and the chart fetcher."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from reviewer.charts import ChartFetcher, Credentials
from reviewer.config import RepoConfig
from reviewer.engine import make_engine
from reviewer.limits import LimitFlags, Limits
from reviewer.proc import Programs
from reviewer.render import RenderCache
from reviewer.render_cache import DEFAULT_MAX_MIB, RenderStore, plans_dir
from reviewer.sandbox import SandboxPool
from reviewer.workers import Pool


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
    render_cache: Path | None = None
    """The persistent render cache (docs/cache.md); None: renders are kept for this run only."""
    render_cache_mib: int = DEFAULT_MAX_MIB
    """Its size bound, enforced when the run ends (least recently used entries go first)."""
    programs: Programs = field(default_factory=Programs)
    """What external programs may see of the environment (read at the edge)."""

    def limits_with(self, settings: RepoConfig) -> Limits:
        """The render limits: command line, else the base side's `.reviewer.yaml`."""
        return self.limits.over(settings.limits)


@dataclass(frozen=True)
class Tools:
    """What renders one run's releases; both sides of a diff share it, caches included."""

    pool: Pool
    fetcher: ChartFetcher
    cache: RenderCache = field(default_factory=RenderCache)
    plans: RenderStore | None = None
    """The plan cache (reviewer/plan_cache.py), beside the render cache; None without one."""


@contextmanager
def open_tooling(tooling: Tooling, settings: RepoConfig | None = None) -> Iterator[Tools]:
    """The render pool and the chart fetcher for one run, closed afterwards.

    `settings` (the base side's `.reviewer.yaml`) give the render limits and chart hosts.
    """
    settings = settings or RepoConfig()
    limits = tooling.limits_with(settings)
    engine = make_engine(tooling.helm_engine, binary=tooling.helm_binary)
    pool: Pool = SandboxPool(engine, jobs=tooling.jobs, binary=tooling.helm_binary, limits=limits)
    store = plans = None
    if tooling.render_cache is not None:
        # A limit decides whether a render succeeds: entries made under other limits differ.
        size = tooling.render_cache_mib * 1024 * 1024
        store = RenderStore(tooling.render_cache, max_bytes=size, context=repr(limits))
        plans = RenderStore(plans_dir(tooling.render_cache), max_bytes=size, context=repr(limits))
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
            yield Tools(pool, fetcher, RenderCache(store=store, programs=tooling.programs), plans)
    finally:
        pool.close()
        engine.close()
        for kept in (store, plans):
            # Listing every entry costs a stat each: only a run that wrote some can be over.
            if kept is not None and kept.written:
                kept.trim()


@contextmanager
def _cache_dir(given: Path | None) -> Iterator[Path]:
    """`given`, or a throwaway directory removed when the run ends."""
    if given is not None:
        yield given
        return
    with tempfile.TemporaryDirectory(prefix="reviewer-charts-") as temporary:
        yield Path(temporary)
