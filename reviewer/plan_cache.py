"""The plan cache: a hierarchy deployment's plan on disk, by the contents of what it read.

Planning a deployment reads its hierarchy's values files, its deployment.yaml, app
templates and their values, and looks for files that may not exist. Planning is
deterministic in those contents, so a plan is stored with the list of files planning
read or looked for, and taken back when every one of them has the same content (or is
still absent) on the side being planned: an index entry per deployment names the files,
a plan entry keyed by their contents holds the releases (docs/cache.md, "Plans"). A side
index, keyed by the contents of every file of the side, remembers which plan entry each
deployment's files lead to: a side seen before (the same target branch again) reads one
entry instead of an index entry per deployment.

Only deployments no secret reaches are stored (no SOPS file read, as the render cache),
nor those with a planning error, kustomize patches, or a Go template calling a function
whose result changes between runs (`now`, `randAlphaNum`, ...).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import helm_python

from reviewer import capabilities as capabilities_mod
from reviewer import jail
from reviewer.changes import with_parents
from reviewer.discover import Cluster, DeploymentDir
from reviewer.errors import ReviewerError
from reviewer.model import ReleaseId
from reviewer.plan import ReleasePlan
from reviewer.postrender import Patches
from reviewer.render_cache import RenderStore
from reviewer.reuse import planning_reads
from reviewer.templates import ChartRef
from reviewer.unstable import calls_unstable
from reviewer.values import Layer

_VERSION = "reviewer-plan/1"
_ABSENT = "-"


@dataclass
class SidePlans:
    """The plan cache as one side sees it: file contents by repo-relative path."""

    store: RenderStore
    context: str
    """What else decides a plan (layout and settings): part of every key."""
    digests: Mapping[str, str]
    """{file: content digest} of every file of the side; absent paths are not in it."""
    root: Path
    """The side's checkout (its `.gotmpl` inputs are read for unstable functions)."""
    hits: int = 0
    """Deployments whose plan was taken from the cache."""
    _directories: set[str] | None = field(default=None, repr=False)
    _looked_up: dict[tuple[str, str], str | None] = field(default_factory=dict, repr=False)
    """Per deployment: the digest its stored plan is under now (`holds`, then `lookup`)."""
    _unstable_files: dict[str, bool] = field(default_factory=dict, repr=False)
    """Whether each `.gotmpl` file calls an unstable function: every deployment of a fleet
    reads the same template and hierarchy files, so each is scanned once."""
    _side: dict[str, str] | None = field(default=None, repr=False)
    """The side index as stored: {deployment's index key: its plan entry's contents}."""
    learned: dict[str, str] = field(default_factory=dict, repr=False)
    """Plans this run took from the cache or stored, for the side index: {deployment's
    index key: contents} (a planning share sends its own)."""

    def lookup(self, cluster: Cluster, deployment: DeploymentDir) -> tuple[ReleasePlan, ...] | None:
        """The deployment's stored releases when every file its plan read is unchanged."""
        contents = self._stored_contents(cluster, deployment)
        if contents is None:
            return None
        payload = self.store.load_data(contents)
        try:
            layers = [
                Layer(_text(source), _text(level), _mapping(values))
                for source, level, values in payload["layers"]
            ]
            releases = tuple(_release(item, layers) for item in payload["releases"])
        except (KeyError, TypeError, ValueError, IndexError):
            return None
        if not releases:
            return None
        self.hits += 1
        self.learned[self._index_key(cluster, deployment)] = contents
        return releases

    def holds(self, cluster: Cluster, deployment: DeploymentDir) -> bool:
        """Whether a plan is stored for the deployment as its files are now (not loaded)."""
        contents = self._stored_contents(cluster, deployment)
        if contents is None:
            return False
        # Named by the side index: stored by an earlier run of these very files (a stat
        # per deployment is what the side index saves).
        return self._side_index().get(self._index_key(cluster, deployment)) == contents or (
            self.store.holds(contents)
        )

    def _stored_contents(self, cluster: Cluster, deployment: DeploymentDir) -> str | None:
        """The digest of the files the deployment's stored plan read, as they are now."""
        key = (cluster.path, deployment.name)
        if key in self._looked_up:
            return self._looked_up[key]
        index_key = self._index_key(cluster, deployment)
        contents = self._side_index().get(index_key) or self._indexed_contents(index_key)
        self._looked_up[key] = contents
        return contents

    def _indexed_contents(self, index_key: str) -> str | None:
        """The digest of the files the deployment's index entry lists, as they are now."""
        index = self.store.load_data(index_key)
        if isinstance(index, list) and all(isinstance(path, str) for path in index):
            return self._contents(index)
        return None

    def _side_index(self) -> dict[str, str]:
        if self._side is None:
            stored = self.store.load_data(self._side_key)
            valid = isinstance(stored, dict) and all(
                isinstance(contents, str) for contents in stored.values()
            )
            self._side = stored if valid else {}
        return self._side

    @functools.cached_property
    def _side_key(self) -> str:
        # Every file of the side, sorted: made once (forgetting many deployments asks again).
        files = sorted(f"{path}\0{digest}" for path, digest in self.digests.items())
        return _digest(_VERSION, "side", self.context, *files)

    def keep(self) -> None:
        """Store the side index when this run found or stored plans it does not name."""
        side = self._side_index()
        if all(side.get(key) == contents for key, contents in self.learned.items()):
            return
        self._side = {**side, **self.learned}
        self.store.save_data(self._side_key, self._side)

    def save(
        self, cluster: Cluster, deployment: DeploymentDir, releases: Iterable[ReleasePlan]
    ) -> bool:
        """Store a deployment's releases (planned without secrets or errors) if they qualify."""
        found = tuple(releases)
        if not found or not all(_storable(release) for release in found):
            return False
        paths = sorted(set(planning_reads(cluster, deployment, found)))
        contents = self._contents(paths)
        if contents is None or self._unstable(paths):
            return False
        index_key = self._index_key(cluster, deployment)
        stored = self.store.save_data(contents, _deployment_data(found))
        if not (stored and self.store.save_data(index_key, paths)):
            return False
        self.learned[index_key] = contents
        return True

    def forget(self, cluster: Cluster, deployment: DeploymentDir) -> None:
        """Remove every plan the deployment's entries may lead to, its index entry and the
        side index: the next run plans it."""
        index_key = self._index_key(cluster, deployment)
        # The plan may have been stored since the deployment was looked up: whatever the
        # side index, this run and the index entry name is removed.
        named = {
            self._side_index().get(index_key),
            self.learned.pop(index_key, None),
            self._indexed_contents(index_key),
        }
        # The side index goes first: it must not lead a later run to the plan. `keep`
        # writes it again from what this run took or stored.
        self.store.forget(self._side_key)
        self._side = {}
        for contents in named:
            if contents is not None:
                self.store.forget(contents)
        self.store.forget(index_key)
        self._looked_up[(cluster.path, deployment.name)] = None

    def _index_key(self, cluster: Cluster, deployment: DeploymentDir) -> str:
        levels = [[level.kind, level.path, level.label] for level in cluster.levels]
        where = [cluster.path, levels, deployment.name, deployment.path, deployment.level.path]
        return _digest(_VERSION, "index", self.context, repr(where))

    def _contents(self, paths: Iterable[str]) -> str | None:
        """A digest of every path's content (or absence); None when a path is not known to
        be absent (behind a symlinked directory, which hashing does not enter)."""
        parts = []
        for path in paths:
            digest = self.digests.get(path)
            if digest is None and not self._absent(path):
                return None
            parts.append(f"{path}\0{digest or _ABSENT}")
        return _digest(_VERSION, "plan", self.context, *parts)

    def _absent(self, path: str) -> bool:
        if self._directories is None:
            self._directories = {"", *with_parents(self.digests)} - self.digests.keys()
        parent = path.rsplit("/", 1)[0] if "/" in path else ""
        return parent in self._directories

    def _unstable(self, paths: Iterable[str]) -> bool:
        return any(
            path.endswith(".gotmpl") and path in self.digests and self._unstable_file(path)
            for path in paths
        )

    def _unstable_file(self, path: str) -> bool:
        found = self._unstable_files.get(path)
        if found is None:
            try:
                found = calls_unstable(jail.read_text(self.root, path).encode())
            except (ReviewerError, OSError):
                found = True
            self._unstable_files[path] = found
        return found


def _digest(*parts: str) -> str:
    # Go templates render with the Helm SDK compiled in: another one may plan otherwise.
    # surrogateescape: a file name that is not UTF-8 (git allows any bytes) hashes as its bytes.
    text = "\0\0".join((_engine(), *parts))
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


@functools.cache
def _engine() -> str:
    return str(helm_python.helm_sdk_version())


def _storable(release: ReleasePlan) -> bool:
    return (
        not release.patches
        and not release.patches.files
        and release.chart_defaults is None
        and not any(layer.secret for layer in release.layers)
    )


def _deployment_data(releases: Iterable[ReleasePlan]) -> dict[str, Any]:
    """The releases, each values layer written once (releases share the hierarchy's)."""
    layers: dict[int, int] = {}
    table: list[list[Any]] = []
    for release in releases:
        for layer in release.layers:
            if id(layer) not in layers:
                layers[id(layer)] = len(table)
                table.append([layer.source, layer.level, layer.values])
    return {
        "layers": table,
        "releases": [_release_data(release, layers) for release in releases],
    }


def _release_data(release: ReleasePlan, layers: Mapping[int, int]) -> dict[str, Any]:
    return {
        "id": [release.id.cluster, release.id.deployment, release.id.release],
        "namespace": release.namespace,
        "chart": [release.chart.ref, release.chart.local, release.chart.repository],
        "version": release.version,
        "labels": release.labels,
        "values": release.values,
        "layers": [layers[id(layer)] for layer in release.layers],
        "inputs": sorted(release.inputs),
        "skipSchemaValidation": release.skip_schema_validation,
        "templateFile": release.template_file,
        "reproduce": release.reproduce,
        "helmCommand": release.helm_command,
        "kubeVersion": release.capabilities.kube_version,
        "apiVersions": release.capabilities.api_versions,
        "patchesSource": release.patches.source,
    }


def _release(item: Mapping[str, Any], layers: list[Layer]) -> ReleasePlan:
    cluster, deployment, name = (_text(part) for part in item["id"])
    ref, local, repository = item["chart"]
    api_versions = item["apiVersions"]
    return ReleasePlan(
        id=ReleaseId(cluster, deployment, name),
        namespace=_text(item["namespace"]),
        chart=ChartRef(_text(ref), _optional(local), _optional(repository)),
        version=_optional(item["version"]),
        labels=_texts(item["labels"]),
        values=_mapping(item["values"]),
        layers=tuple(layers[index] for index in item["layers"]),
        inputs=frozenset(_paths(item["inputs"])),
        skip_schema_validation=item["skipSchemaValidation"] is True,
        template_file=_text(item["templateFile"]),
        reproduce=_text(item["reproduce"]),
        helm_command=_optional(item["helmCommand"]),
        capabilities=capabilities_mod.Capabilities(
            kube_version=_optional(item["kubeVersion"]),
            api_versions=None if api_versions is None else tuple(map(_text, api_versions)),
        ),
        patches=Patches(source=_text(item["patchesSource"])),
    )


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value


def _texts(value: object) -> dict[str, str]:
    labels = _mapping(value)
    if not all(isinstance(text, str) for text in labels.values()):
        raise TypeError("expected strings")
    return labels


def _paths(value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(path, str) for path in value):
        raise TypeError("expected a list of strings")
    return value


def _optional(value: object) -> str | None:
    return None if value is None else _text(value)


def _mapping(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError("expected a mapping")
    return value
