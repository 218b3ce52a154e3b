"""Discovery: which clusters exist, their group levels, and which deployments each one gets.

The hierarchical (ATLAS-compatible) layout is the first kind of `Source`; other
kinds (Flux HelmRelease directories, plain manifests) plug in behind the same
Protocol without touching later stages.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from reviewer.errors import RepositoryError

APPS = "apps"
DEPLOYMENT_FILE = "deployment.yaml"
CLUSTER_VALUES = "cluster.values.*"


@dataclass(frozen=True)
class Level:
    """One hierarchy level: the definitions root (global), a group, or the cluster itself."""

    kind: str  # "global" | "group" | "cluster"
    path: str  # repository-relative directory
    label: str  # e.g. "global", "group production", "cluster production/eu-west"


@dataclass(frozen=True)
class DeploymentDir:
    """A deployment definition directory and the level that defines it."""

    name: str
    path: str  # repository-relative directory holding deployment.yaml
    level: Level


@dataclass(frozen=True)
class Cluster:
    """A leaf cluster with its hierarchy levels (outermost first) and deployments."""

    path: str  # cluster path relative to the definitions root, e.g. "production/eu-west"
    levels: tuple[Level, ...]
    deployments: tuple[DeploymentDir, ...]

    @property
    def name(self) -> str:
        """`clusterName`: the last path segment."""
        return self.path.rsplit("/", 1)[-1]

    @property
    def group(self) -> str | None:
        """`clusterGroup`: the path without its last segment; None for standalone clusters."""
        return self.path.rsplit("/", 1)[0] if "/" in self.path else None

    def deployment(self, name: str) -> DeploymentDir | None:
        """The deployment of that name, if the cluster gets it."""
        return next((d for d in self.deployments if d.name == name), None)


@dataclass(frozen=True)
class Layout:
    """Where the hierarchical layout lives inside a repository."""

    definitions: str = "deployments"
    templates: str = "templates"
    variant: str = "default"
    """ATLAS's `atlas.variant` (and `variant` label): several ATLAS setups on one cluster."""


@dataclass(frozen=True)
class Fleet:
    """Everything discovery found in one repository side."""

    root: Path
    layout: Layout
    clusters: tuple[Cluster, ...] = field(default_factory=tuple)
    not_clusters: tuple[str, ...] = ()
    """Directories with `cluster.values.*` but no `apps/` and no cluster below: skipped."""

    def cluster_dir(self, cluster: str) -> str:
        """The repository-relative directory of a cluster path."""
        return f"{self.layout.definitions}/{cluster}"


class Source(Protocol):
    """A kind of repository layout that yields clusters and their deployments."""

    def discover(self, root: Path) -> Fleet:
        """Find every cluster of the repository at `root`."""
        ...


@dataclass(frozen=True)
class HierarchySource:
    """The global → group → cluster → deployment layout of docs/layout.md."""

    layout: Layout = Layout()

    def discover(self, root: Path) -> Fleet:
        """Find leaf clusters below the definitions root and the deployments each one gets."""
        definitions = root / self.layout.definitions
        if not definitions.is_dir():
            raise RepositoryError(
                f"definitions root '{self.layout.definitions}/' not found in {root}",
                hint="pass the repository root, or set the definitions directory",
            )
        global_level = Level("global", self.layout.definitions, "global")
        clusters = _walk(root, definitions, (global_level,))
        if not clusters:
            raise RepositoryError(
                f"no cluster found below '{self.layout.definitions}/'",
                hint="a cluster is a directory with an 'apps/' subdirectory and no cluster below "
                "it; global deployments alone are not deployed anywhere",
            )
        _check_unique_names(clusters)
        skipped = _not_clusters(root, definitions, {c.levels[-1].path for c in clusters})
        return Fleet(root=root, layout=self.layout, clusters=tuple(clusters), not_clusters=skipped)


def _not_clusters(root: Path, definitions: Path, clusters: set[str]) -> tuple[str, ...]:
    """Directories that look like clusters (`cluster.values.*`) but have no `apps/`."""
    found: list[str] = []
    for values in sorted(_cluster_values_files(definitions)):
        directory = values.parent
        path = _relative(root, directory)
        if (directory / APPS).is_dir() or path in found:
            continue
        if any(cluster.startswith(f"{path}/") for cluster in clusters):
            continue  # a group that holds clusters
        if any(part.startswith(".") or part == APPS for part in directory.relative_to(root).parts):
            continue
        found.append(path)
    return tuple(found)


def _cluster_values_files(directory: Path) -> list[Path]:
    """`directory.rglob(CLUSTER_VALUES)` without entering `apps/` or hidden directories,
    whose matches `_not_clusters` drops anyway: a walk of the levels, not of every
    deployment. Like rglob, it does not descend into symlinked directories."""
    return [
        current / entry.name
        for current, entry in _level_entries(directory)
        if fnmatch.fnmatchcase(entry.name, CLUSTER_VALUES)
    ]


def _apps_files(root: Path, layout: Layout) -> list[str]:
    """Every `apps` of the definitions that is no directory (a file, a link to nothing),
    relative to `root`, sorted."""
    return sorted(
        _relative(root, current / entry.name)
        for current, entry in _level_entries(root / layout.definitions)
        if entry.name == APPS and not _is_directory(entry)
    )


def _level_entries(directory: Path) -> Iterator[tuple[Path, os.DirEntry[str]]]:
    """Every entry of `directory` and of the directories below it, neither entering `apps/`
    nor hidden or symlinked directories."""
    pending = [directory]
    while pending:
        current = pending.pop()
        try:
            with os.scandir(current) as scanned:
                entries = list(scanned)
        except OSError:
            continue
        for entry in entries:
            yield current, entry
            if entry.name == APPS or entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                pending.append(current / entry.name)


def discovery_warnings(base_root: Path, head_root: Path, layout: Layout) -> tuple[str, ...]:
    """Why clusters appear or vanish between the sides, and which directories are skipped.

    A cluster directory whose `apps/` empties disappears from the merge result
    (git keeps no empty directories) and every release it got, global and group
    ones included, shows as removed: the reader is told why.
    """
    source = HierarchySource(layout)
    try:
        base, head = source.discover(base_root), source.discover(head_root)
    except RepositoryError:
        return ()  # reported as a failure of that side
    old = {cluster.path for cluster in base.clusters}
    new = {cluster.path for cluster in head.clusters}
    warnings = [_vanished(head, path, head_root) for path in sorted(old - new)]
    warnings.extend(
        f"cluster {path} ({head.cluster_dir(path)}/) exists on the merge result only: "
        "a new cluster, all its releases show as added"
        for path in sorted(new - old)
    )
    explained = {head.cluster_dir(path) for path in old - new}
    warnings.extend(
        f"{directory}/ has {CLUSTER_VALUES} but no {APPS}/ directory, so it is not a cluster "
        f"and nothing is rendered for it (git keeps no empty directories: a cluster with "
        f"no deployment of its own keeps {APPS}/ with a file such as {APPS}/.keep)"
        for directory in head.not_clusters
        if directory not in explained
    )
    said = explained | set(head.not_clusters) | set(_apps_files(base_root, layout))
    warnings.extend(
        f"{path} is not a directory, so no deployment is read from it: every release "
        "it would define is missing on the merge result"
        for path in _apps_files(head_root, layout)
        if path not in said and posixpath.dirname(path) not in said
    )
    return tuple(warnings)


def _vanished(head: Fleet, path: str, head_root: Path) -> str:
    directory = head.cluster_dir(path)
    start = f"cluster {path} ({directory}/) exists on the target branch only: "
    end = "; all its releases, global and group ones included, show as removed"
    apps = head_root / directory / APPS
    if os.path.lexists(apps) and not apps.is_dir():
        return start + f"on the merge result its {APPS} is not a directory" + end
    if directory in head.not_clusters:
        return (
            start + f"on the merge result its {APPS}/ directory is gone (git keeps no empty "
            f"directories, so removing its last own deployment removes {APPS}/), and without "
            f"{APPS}/ it is no longer a cluster" + end + f" (keep {APPS}/.keep to keep the cluster)"
        )
    if not (head_root / directory).is_dir():
        return start + "its directory was removed" + end
    return start + "on the merge result it is no longer a leaf directory with apps/" + end


def _subdirectories(directory: Path) -> list[Path]:
    return [
        directory / name
        for name in _directories_in(directory)
        if name != APPS and not name.startswith(".")
    ]


def _directories_in(directory: Path) -> list[str]:
    """Names of the directories (or links to one, as `Path.is_dir`) in `directory`, sorted."""
    with os.scandir(directory) as entries:
        return sorted(entry.name for entry in entries if _is_directory(entry))


def _is_directory(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:  # a loop of links (ELOOP) is no directory, and no reason to stop
        return False


def _relative(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def _walk(
    root: Path,
    directory: Path,
    levels: tuple[Level, ...],
    apps: dict[str, tuple[DeploymentDir, ...]] | None = None,
) -> list[Cluster]:
    """Clusters below `directory`, whose ancestors' levels are `levels`."""
    apps = {} if apps is None else apps  # each level's deployments, listed once per walk
    clusters: list[Cluster] = []
    definitions = root / Path(levels[0].path)
    for child in _subdirectories(directory):
        path = _relative(definitions, child)
        group = Level("group", _relative(root, child), f"group {path}")
        below = _walk(root, child, (*levels, group), apps)
        if below:
            clusters.extend(below)
        elif (child / APPS).is_dir():
            cluster = Level("cluster", _relative(root, child), f"cluster {path}")
            clusters.append(_cluster(root, path, (*levels, cluster), apps))
    return clusters


def _cluster(
    root: Path, path: str, levels: tuple[Level, ...], apps: dict[str, tuple[DeploymentDir, ...]]
) -> Cluster:
    by_name: dict[str, DeploymentDir] = {}
    for level in levels:  # outermost first: a more specific level overwrites
        listed = apps.get(level.path)
        if listed is None:
            listed = apps[level.path] = _deployments_of(root, level)
        by_name.update((deployment.name, deployment) for deployment in listed)
    deployments = tuple(by_name[name] for name in sorted(by_name))
    return Cluster(path=path, levels=levels, deployments=deployments)


def _deployments_of(root: Path, level: Level) -> tuple[DeploymentDir, ...]:
    """The deployment directories under the level's `apps/`, sorted by name."""
    apps = root / level.path / APPS
    if not apps.is_dir():
        return ()
    return tuple(
        DeploymentDir(name, _relative(root, apps / name), level) for name in _directories_in(apps)
    )


def _check_unique_names(clusters: list[Cluster]) -> None:
    paths: dict[str, list[str]] = {}
    for cluster in clusters:
        paths.setdefault(cluster.name, []).append(cluster.path)
    duplicates = {name: found for name, found in paths.items() if len(found) > 1}
    if duplicates:
        listed = "; ".join(f"'{name}' at {', '.join(found)}" for name, found in duplicates.items())
        raise RepositoryError(
            f"cluster names must be unique across the repository: {listed}",
            hint="rename the leaf directories so every clusterName is unique",
        )
