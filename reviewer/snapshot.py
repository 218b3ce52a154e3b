"""Snapshots: the normalized, redacted render of one side, in memory and on disk.

On disk a snapshot is `DIR/<cluster path>/<deployment>/<release>/<kind>-<name>.yaml`
plus `DIR/index.json`, which lists every release with its status and error.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reviewer import yamlio
from reviewer.errors import ReviewerError

INDEX_SCHEMA = "reviewer.snapshot/v1"
# `<chart>/crds/x.yaml` or `<chart>/charts/<sub>/crds/x.yaml`; a templated
# `templates/crds/x.yaml` is an ordinary template.
_CRDS_DIR = re.compile(r"^[^/]+(?:/charts/[^/]+)*/crds/")
WHOLE_DEPLOYMENT = "*"
"""Release name of a failure that hit a deployment before its releases were known."""


@dataclass(frozen=True, order=True)
class ReleaseId:
    """A release's identity: (cluster path, deployment name, release name)."""

    cluster: str
    deployment: str
    release: str

    def __str__(self) -> str:
        return f"{self.cluster}/{self.deployment}/{self.release}"


@dataclass(frozen=True, order=True)
class ResourceKey:
    """A rendered object's identity: (API group, kind, namespace, name)."""

    group: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        kind = f"{self.kind}.{self.group}" if self.group else self.kind
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{kind} {where}{self.name}"


@dataclass(frozen=True)
class Resource:
    """One rendered Kubernetes object, normalized (stable key order)."""

    key: ResourceKey
    api_version: str
    body: dict[str, Any]
    source: str = ""

    @classmethod
    def from_body(cls, body: dict[str, Any], *, source: str = "") -> Resource:
        """Build a resource from a parsed manifest; the body is normalized."""
        api_version = str(body.get("apiVersion", ""))
        metadata = body.get("metadata") or {}
        group = api_version.rpartition("/")[0] if "/" in api_version else ""
        key = ResourceKey(
            group=group,
            kind=str(body.get("kind", "")),
            namespace=str(metadata.get("namespace") or ""),
            name=str(metadata.get("name") or ""),
        )
        return cls(key=key, api_version=api_version, body=yamlio.normalize(body), source=source)

    @property
    def from_crds(self) -> bool:
        """Shipped in a chart's crds/ directory (rendered as with --include-crds)."""
        return _CRDS_DIR.match(self.source) is not None

    def text(self) -> str:
        """The normalized YAML of this object."""
        return yamlio.dump(self.body)


@dataclass
class RenderedRelease:
    """The outcome of rendering one release: its objects, or the error that stopped it."""

    id: ReleaseId
    namespace: str
    chart: str = ""
    version: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    resources: list[Resource] = field(default_factory=list)
    error: str | None = None
    reproduce: str | None = None
    helm_command: str | None = None

    @property
    def status(self) -> str:
        """`rendered` or `error`."""
        return "error" if self.error is not None else "rendered"


@dataclass
class Snapshot:
    """Every release of one side of a review, in identity order."""

    releases: list[RenderedRelease] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """Failures that belong to no single release."""
    warnings: list[str] = field(default_factory=list)
    """Things the reader must know, e.g. that secrets were not decrypted."""

    def by_id(self) -> dict[ReleaseId, RenderedRelease]:
        """Releases keyed by identity."""
        return {release.id: release for release in self.releases}

    @property
    def failed(self) -> list[RenderedRelease]:
        """Releases that did not render."""
        return [release for release in self.releases if release.error is not None]


Guard = Callable[[str, str], None]
"""A leak guard: called with (text, location) before anything is written."""


def _no_guard(text: str, location: str) -> None:
    return None


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _safe_segment(text: str) -> str:
    cleaned = _UNSAFE.sub("_", text).strip("._") or "_"
    return cleaned[:120]


def resource_file_names(resources: Sequence[Resource]) -> list[str]:
    """File names for a release's objects: `<kind>-<name>.yaml`, disambiguated when they clash."""
    plain = [_safe_segment(f"{r.key.kind}-{r.key.name}".lower()) for r in resources]
    counts: dict[str, int] = {}
    for name in plain:
        counts[name] = counts.get(name, 0) + 1
    names: list[str] = []
    used: set[str] = set()
    for resource, base in zip(resources, plain, strict=True):
        name = base
        if counts[base] > 1:
            extra = resource.key.namespace or resource.key.group or "cluster"
            name = _safe_segment(f"{base}-{extra}".lower())
        candidate, n = name, 2
        while candidate in used:
            candidate, n = f"{name}-{n}", n + 1
        used.add(candidate)
        names.append(candidate + ".yaml")
    return names


def release_dir(root: Path, release_id: ReleaseId) -> Path:
    """Where a release's objects are written below a snapshot root."""
    parts = [*release_id.cluster.split("/"), release_id.deployment, release_id.release]
    return root.joinpath(*(_safe_segment(part) for part in parts))


def index_entry(release: RenderedRelease, files: Sequence[str] = ()) -> dict[str, Any]:
    """The `index.json` record of one release; `files` are its objects' file names."""
    return {
        "cluster": release.id.cluster,
        "deployment": release.id.deployment,
        "release": release.id.release,
        "namespace": release.namespace,
        "chart": release.chart,
        "version": release.version,
        "labels": release.labels,
        "status": release.status,
        "resources": len(release.resources),
        "crds": [r.key.name for r in release.resources if r.from_crds],
        "error": release.error,
        "reproduce": release.reproduce,
        "helm": release.helm_command,
        "files": {name: r.source for name, r in zip(files, release.resources, strict=True)},
    }


def _prepare(root: Path) -> None:
    """Empty `root` if it holds an earlier snapshot; never clobber anything else."""
    if root.exists() and any(root.iterdir()):
        if not (root / "index.json").is_file():
            raise ReviewerError(
                f"{root} is not empty and holds no earlier snapshot; refusing to write into it",
                hint="choose a new or empty output directory",
            )
        shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)


def write(snapshot: Snapshot, root: Path, *, guard: Guard = _no_guard) -> None:
    """Write a snapshot below `root`; every text passes `guard` before it is written."""
    _prepare(root)
    entries: list[dict[str, Any]] = []
    for release in snapshot.releases:
        directory = release_dir(root, release.id)
        names = resource_file_names(release.resources)
        if release.resources:
            directory.mkdir(parents=True, exist_ok=True)
        for resource, name in zip(release.resources, names, strict=True):
            text = resource.text()
            path = directory / name
            guard(text, str(path.relative_to(root)))
            path.write_text(text, encoding="utf-8")
        entries.append(index_entry(release, names))
    index = {
        "schema": INDEX_SCHEMA,
        "releases": entries,
        "errors": snapshot.errors,
        "warnings": snapshot.warnings,
    }
    text = json.dumps(index, indent=2, sort_keys=False) + "\n"
    guard(text, "index.json")
    (root / "index.json").write_text(text, encoding="utf-8")


def read(root: Path) -> Snapshot:
    """Load a snapshot written by `write` (e.g. by another CI job)."""
    index_file = root / "index.json"
    if not index_file.is_file():
        raise ReviewerError(f"{root} holds no snapshot (index.json is missing)")
    try:
        index = json.loads(index_file.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        raise ReviewerError(f"{index_file}: not valid JSON") from None
    if not isinstance(index, dict) or index.get("schema") != INDEX_SCHEMA:
        raise ReviewerError(f"{index_file}: not a {INDEX_SCHEMA} index")
    releases = [_read_release(root, entry) for entry in index.get("releases", [])]
    return Snapshot(
        releases=releases,
        errors=[str(e) for e in index.get("errors", [])],
        warnings=[str(w) for w in index.get("warnings", [])],
    )


def _read_release(root: Path, entry: dict[str, Any]) -> RenderedRelease:
    release_id = ReleaseId(str(entry["cluster"]), str(entry["deployment"]), str(entry["release"]))
    directory = release_dir(root, release_id)
    resources = []
    for name, source in (entry.get("files") or {}).items():
        path = directory / _safe_segment(str(name))
        text = path.read_text(encoding="utf-8")
        body = yamlio.load_mapping(text, source=str(path.relative_to(root)))
        resources.append(Resource.from_body(body, source=str(source)))
    return RenderedRelease(
        id=release_id,
        namespace=str(entry.get("namespace") or ""),
        chart=str(entry.get("chart") or ""),
        version=str(entry.get("version") or ""),
        labels={str(k): str(v) for k, v in (entry.get("labels") or {}).items()},
        resources=sorted(resources, key=lambda r: r.key),
        error=entry.get("error"),
        reproduce=entry.get("reproduce"),
        helm_command=entry.get("helm"),
    )
