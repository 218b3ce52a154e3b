"""Stage inputs for unit tests, built through the stages' public entry points.

This is the one place tests take the core types and the diff from, so when they
move between modules only these imports change.
"""

from __future__ import annotations

from pathlib import Path

from conftest import Repo

from reviewer.diff.compare import diff_snapshots
from reviewer.diff.options import DiffOptions
from reviewer.diff.result import ReleaseStatus, SnapshotDiff
from reviewer.discover import HierarchySource, Layout
from reviewer.gotmpl import TemplateRenderer
from reviewer.model import ReleaseId, Resource, ResourceKey
from reviewer.plan import Plan, Planner, ReleasePlan
from reviewer.values import NoSecrets, ValuesLoader

__all__ = [
    "ReleaseId",
    "ReleaseStatus",
    "Resource",
    "ResourceKey",
    "SnapshotDiff",
    "diff_repos",
    "plan_repo",
    "plans_by_id",
]


def plan_repo(root: Path, layout: Layout | None = None) -> Plan:
    """Discover and plan every release of the repository at `root` (no SOPS files)."""
    renderer = TemplateRenderer()
    fleet = HierarchySource(layout or Layout()).discover(root)
    loader = ValuesLoader(root=root, templates=renderer, secrets=NoSecrets())
    return Planner(fleet=fleet, loader=loader, renderer=renderer).plan()


def plans_by_id(root: Path, *, failures: bool = False) -> dict[ReleaseId, ReleasePlan]:
    """The planned releases of `root` by identity; any plan error fails the test unless
    `failures` allows them."""
    plan = plan_repo(root)
    assert failures or plan.errors == (), [error.message for error in plan.errors]
    return {release.id: release for release in plan.releases}


def diff_repos(base: Repo, head: Repo) -> SnapshotDiff:
    """Render both repositories with the embedded engine and diff them (built-in differ)."""
    return diff_snapshots(base.render(), head.render(), options=DiffOptions(differ="builtin"))
