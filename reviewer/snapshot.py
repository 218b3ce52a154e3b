"""Snapshots: the normalized, redacted render of one side, in memory and on disk.

On disk a snapshot is `DIR/<cluster path>/<deployment>/<release>/<kind>-<name>.yaml`
plus `DIR/index.json`, which lists every release with its status and error.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from reviewer import yamlio
from reviewer.errors import ConfigError, ReviewerError
from reviewer.model import ReleaseId, RenderedRelease, Resource, ResourceKey, Snapshot

INDEX_SCHEMA = "reviewer.snapshot/v1"


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
    """The `index.json` record of one release; `files` are its objects' file names.

    `documents` (only when there are any) names the YAML documents that are not
    Kubernetes objects (BOSH manifests): their identity is not in their body.
    """
    entry = {
        "cluster": release.id.cluster,
        "deployment": release.id.deployment,
        "release": release.id.release,
        "namespace": release.namespace,
        "chart": release.chart,
        "version": release.version,
        "labels": dict(release.labels),
        "status": release.status,
        "resources": len(release.resources),
        "crds": [r.key.name for r in release.resources if r.from_crds],
        "error": release.error,
        "reproduce": release.reproduce,
        "helm": release.helm_command,
        "files": {name: r.source for name, r in zip(files, release.resources, strict=True)},
    }
    documents = {
        name: f"{r.key.kind}/{r.key.name}"
        for name, r in zip(files, release.resources, strict=True)
        if not r.api_version
    }
    if documents:
        entry["documents"] = documents
    return entry


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
    try:
        _write(snapshot, root, guard)
    except OSError as error:
        where = error.filename or root
        raise ReviewerError(
            f"{where}: cannot write the snapshot ({error.strerror or error})"
        ) from error


def _write(snapshot: Snapshot, root: Path, guard: Guard) -> None:
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
        "errors": list(snapshot.errors),
        "warnings": list(snapshot.warnings),
    }
    text = json.dumps(index, indent=2, sort_keys=False) + "\n"
    guard(text, "index.json")
    (root / "index.json").write_text(text, encoding="utf-8")


def read(root: Path) -> Snapshot:
    """Load a snapshot written by `write` (e.g. by another CI job).

    Raises ConfigError naming `index.json` and the field when the index is malformed.
    """
    index_file = root / "index.json"
    if not index_file.is_file():
        raise ReviewerError(f"{root} holds no snapshot (index.json is missing)")
    source = str(index_file)
    try:
        index = json.loads(index_file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ConfigError(source, "not valid JSON") from None
    if not isinstance(index, dict) or index.get("schema") != INDEX_SCHEMA:
        raise ConfigError(source, f"not a {INDEX_SCHEMA} index")
    entries = _items(index, "releases", source)
    return Snapshot(
        releases=tuple(
            _read_release(root, _mapping(entry, source, f"releases[{n}]"), f"releases[{n}]")
            for n, entry in enumerate(entries)
        ),
        errors=_texts(index, "errors", source),
        warnings=_texts(index, "warnings", source),
    )


def _read_release(root: Path, entry: dict[str, Any], where: str) -> RenderedRelease:
    source = str(root / "index.json")
    fields = _Fields(entry, source, where)
    release_id = ReleaseId(
        fields.text("cluster"), fields.text("deployment"), fields.text("release")
    )
    directory = release_dir(root, release_id)
    documents = fields.table("documents") if "documents" in entry else {}
    resources = [
        _read_resource(root, directory / _safe_segment(name), origin, documents.get(name))
        for name, origin in fields.table("files").items()
    ]
    return RenderedRelease(
        id=release_id,
        namespace=fields.optional("namespace") or "",
        chart=fields.optional("chart") or "",
        version=fields.optional("version") or "",
        labels=fields.table("labels"),
        resources=tuple(sorted(resources, key=lambda r: r.key)),
        error=fields.optional("error"),
        reproduce=fields.optional("reproduce"),
        helm_command=fields.optional("helm"),
        identical=fields.optional("status") == "identical",
    )


def _read_resource(root: Path, path: Path, origin: str, document: str | None) -> Resource:
    name = str(path.relative_to(root))
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        raise ConfigError(name, "listed in index.json but missing or unreadable") from None
    body = yamlio.load_mapping(text, source=name)
    if document is None:
        return Resource.from_body(body, source=origin)
    kind, _, title = document.partition("/")
    key = ResourceKey("", kind, "", title)
    return Resource(key=key, api_version="", body=yamlio.normalize(body), source=origin)


class _Fields:
    """One JSON object of index.json, read field by field; errors name the file and field."""

    def __init__(self, entry: dict[str, Any], source: str, where: str) -> None:
        self._entry, self._source, self._where = entry, source, where

    def _fail(self, name: str, allowed: str) -> ConfigError:
        return ConfigError(self._source, f"must be {allowed}", field=f"{self._where}.{name}")

    def text(self, name: str) -> str:
        """A required string field."""
        value = self._entry.get(name)
        if not isinstance(value, str):
            raise self._fail(name, "a string")
        return value

    def optional(self, name: str) -> str | None:
        """A string field that may be null or absent."""
        value = self._entry.get(name)
        if value is not None and not isinstance(value, str):
            raise self._fail(name, "a string or null")
        return value

    def table(self, name: str) -> dict[str, str]:
        """A map of strings to strings that may be null or absent."""
        value = self._entry.get(name) or {}
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise self._fail(name, "a map of strings")
        return {str(key): item for key, item in value.items()}


def _items(index: dict[str, Any], name: str, source: str) -> list[Any]:
    value = index.get(name) or []
    if not isinstance(value, list):
        raise ConfigError(source, "must be a list", field=name)
    return value


def _texts(index: dict[str, Any], name: str, source: str) -> tuple[str, ...]:
    items = _items(index, name, source)
    for n, item in enumerate(items):
        if not isinstance(item, str):
            raise ConfigError(source, "must be a string", field=f"{name}[{n}]")
    return tuple(items)


def _mapping(value: object, source: str, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(source, "must be an object", field=where)
    return value
