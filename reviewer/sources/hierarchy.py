"""The `hierarchy` kind: global → group → cluster → deployment (docs/layout.md).

Identities are (cluster path, deployment, release), as they always were.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reviewer import decode as decoding
from reviewer.discover import HierarchySource, Layout
from reviewer.plan import Plan, Planner
from reviewer.sources.protocol import PlanContext, SourceEntry
from reviewer.values import ValuesLoader

KIND = "hierarchy"
OPTIONS = ("templates", "variant")


@dataclass(frozen=True)
class Hierarchy:
    """A hierarchical layout: its definitions root, app templates and variant."""

    name: str = KIND
    layout: Layout = field(default_factory=Layout)

    def describe(self) -> str:
        """`hierarchy 'fleet': definitions deployments/, templates templates/`."""
        layout = self.layout
        return (
            f"{KIND} '{self.name}': definitions {layout.definitions}/, "
            f"templates {layout.templates}/"
        )

    def plan(self, context: PlanContext) -> Plan:
        """Discover clusters and resolve every selected release (values, chart, labels)."""
        fleet = context.builds.once(
            fleet_key(self.layout), lambda: HierarchySource(self.layout).discover(context.root)
        )
        loader = ValuesLoader(
            root=context.root, templates=context.renderer, secrets=context.secrets
        )
        planner = Planner(
            fleet=fleet, loader=loader, renderer=context.renderer, display_root=context.display_root
        )
        return planner.plan(select=context.select)


def fleet_key(layout: Layout) -> tuple[str, Layout]:
    """Where a side's plans keep the fleet discovered for `layout` (one walk per side)."""
    return (KIND, layout)


def decode(entry: SourceEntry) -> Hierarchy:
    """`paths: [<definitions root>]`, options `templates` and `variant`."""
    at, options = entry.at, entry.options
    entry.check_options(OPTIONS)
    if len(entry.paths) != 1:
        raise at.key("paths").error("a hierarchy source has exactly one path: its definitions root")
    layout = Layout(
        definitions=entry.paths[0],
        templates=decoding.optional(options, "templates", at, decoding.string, Layout.templates),
        variant=decoding.optional(options, "variant", at, decoding.text, Layout.variant),
    )
    return Hierarchy(entry.name, layout)


def detect(root: Path) -> Sequence[Hierarchy]:
    """The default layout when its definitions root (`deployments/`) exists."""
    return [Hierarchy()] if (root / Layout.definitions).is_dir() else []
