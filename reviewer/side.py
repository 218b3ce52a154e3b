"""One side of a review: discover → plan → render, for one repository checkout."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reviewer.discover import Cluster, DeploymentDir, HierarchySource, Layout
from reviewer.engine import HelmEngine
from reviewer.gotmpl import TemplateRenderer
from reviewer.plan import Plan, Planner
from reviewer.render import render_plan
from reviewer.snapshot import Snapshot
from reviewer.values import NoSecrets, SecretsLoader, ValuesLoader


@dataclass(frozen=True)
class Selection:
    """Which clusters and deployments to render (empty = all)."""

    clusters: Sequence[str] = ()
    deployments: Sequence[str] = ()

    def __call__(self, cluster: Cluster, deployment: DeploymentDir) -> bool:
        """True when the deployment of that cluster is selected."""
        if self.clusters and not {cluster.path, cluster.name} & set(self.clusters):
            return False
        return not self.deployments or deployment.name in self.deployments


@dataclass
class SideOptions:
    """How to render a side."""

    layout: Layout = field(default_factory=Layout)
    selection: Selection = field(default_factory=Selection)
    display_root: str = "."


def plan_side(
    root: Path,
    *,
    options: SideOptions,
    renderer: TemplateRenderer,
    secrets: SecretsLoader | None = None,
) -> Plan:
    """Discover and resolve every selected release of the checkout at `root`."""
    fleet = HierarchySource(options.layout).discover(root)
    loader = ValuesLoader(root=root, templates=renderer, secrets=secrets or NoSecrets())
    planner = Planner(
        fleet=fleet, loader=loader, renderer=renderer, display_root=options.display_root
    )
    return planner.plan(select=options.selection)


def render_side(
    root: Path,
    *,
    options: SideOptions,
    engine: HelmEngine,
    renderer: TemplateRenderer,
    secrets: SecretsLoader | None = None,
) -> Snapshot:
    """Plan and render one checkout into a snapshot."""
    plan = plan_side(root, options=options, renderer=renderer, secrets=secrets)
    return render_plan(plan, root=root, engine=engine)
