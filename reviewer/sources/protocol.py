"""The interface between discovery and the later stages: `SourceKind` and `Source`.

A kind (a module) decodes its `.reviewer.yaml` entry into a `Source` and detects
sources in a repository without one. A `Source` plans one checkout into the same
`Plan` every later stage reads: Helm releases to render (`Plan.releases`) and
object sets it built itself (`Plan.objects`), each under a `ReleaseId`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from reviewer import decode
from reviewer.discover import Cluster, DeploymentDir
from reviewer.gotmpl import TemplateRenderer
from reviewer.plan import Plan
from reviewer.proc import Programs
from reviewer.sops import SopsDecoder
from reviewer.values import SecretsLoader


class Selector(Protocol):
    """Which releases to plan: by hierarchy cluster and deployment, or by location."""

    def __call__(self, cluster: Cluster, deployment: DeploymentDir) -> bool:
        """True when the hierarchy deployment of that cluster is selected."""
        ...

    def location(self, cluster: str, deployment: str) -> bool:
        """True when releases at (cluster, deployment) of any other kind are selected."""
        ...


class SideBuilds:
    """What one side's plans build once: the real plan builds, and its redacted twin
    (planned right after it, from the same checkout) takes the same results."""

    def __init__(self) -> None:
        self._built: dict[Hashable, Any] = {}

    def build(self, key: Hashable, run: Callable[[], Any], *, twin: bool) -> Any:
        """`run()`'s result; the twin's is the one the real plan stored under `key`."""
        if not twin or key not in self._built:
            self._built[key] = run()
        return self._built[key]

    def once(self, key: Hashable, run: Callable[[], Any]) -> Any:
        """`run()`'s result, run by whichever plan of the side asks first."""
        return self.build(key, run, twin=True)


@dataclass(frozen=True)
class PlanContext:
    """What a source may use to plan one checkout (never the environment or the network)."""

    root: Path
    renderer: TemplateRenderer
    secrets: SecretsLoader
    """For values files a template merges (a redacted loader on the twin plan)."""
    decoder: SopsDecoder | None
    """For SOPS files that are objects themselves; None: such files stay encrypted."""
    select: Selector
    display_root: str = "."
    twin: bool = False
    """The redacted twin plan: only Helm values matter, object sets are not built again."""
    kustomize_timeout: float = 120.0
    programs: Programs = field(default_factory=Programs)
    """Where kubectl and bwrap are found (the edge's `$REVIEWER_*` overrides and PATH)."""
    builds: SideBuilds = field(default_factory=SideBuilds)
    """Builds shared by the side's real and twin plan (the side creates one for both)."""


COMMON_FIELDS = ("name", "kind", "paths")
"""Fields every source entry may have; the rest are the kind's options."""


@dataclass(frozen=True)
class SourceEntry:
    """One entry of `.reviewer.yaml`'s `sources`: the common fields, options still raw."""

    name: str
    kind: str
    paths: tuple[str, ...]
    options: Mapping[str, Any]
    at: decode.Field

    def check_options(self, allowed: Sequence[str]) -> None:
        """Refuse an option the kind does not know, naming every allowed field."""
        decode.mapping(dict(self.options), self.at, allowed=(*COMMON_FIELDS, *allowed))


class Source(Protocol):
    """A configured source: plans the releases and objects of one checkout."""

    @property
    def name(self) -> str:
        """The source's name (the `cluster` part of the identities it plans)."""
        ...

    def describe(self) -> str:
        """One line for the detection message: kind, name and paths."""
        ...

    def plan(self, context: PlanContext) -> Plan:
        """The releases (to render) and object sets (built) of the checkout at `context.root`."""
        ...


class SourceKind(Protocol):
    """A kind of source, as a plain module with these two functions."""

    def decode(self, entry: SourceEntry) -> Source:
        """The source an entry of `.reviewer.yaml` declares; errors name file and field."""
        ...

    def detect(self, root: Path) -> Sequence[Source]:
        """Sources of this kind found in the repository at `root` (none when absent)."""
        ...
