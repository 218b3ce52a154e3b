"""The repository's Flux source objects a nested release's chart needs (docs/nested.md).

A HelmRelease in a release's output may name a HelmRepository, OCIRepository,
GitRepository or HelmChart that the output lacks; the checkout's YAML files are indexed
for them once (charts and hidden directories skipped, first definition wins).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reviewer import jail, yamlio
from reviewer.errors import ReviewerError
from reviewer.sources import nested

_SOURCE_GROUP = "source.toolkit.fluxcd.io/"
_SOURCE_KINDS = ("HelmRepository", "OCIRepository", "GitRepository", "HelmChart")
_REPOSITORY_NAMESPACE = "default"
"""The namespace of a repository's source object that names none (as the `flux` kind)."""


@dataclass
class RepositorySources:
    """Flux source objects defined in the checkout, indexed on first use (first wins)."""

    root: Path
    _found: dict[tuple[str, str, str], tuple[str, Mapping[str, Any]]] | None = field(
        default=None, repr=False
    )

    def lookup(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The object (kind, namespace, name), if the repository defines it."""
        found = self.document(kind, namespace, name)
        return None if found is None else found[1]

    def document(
        self, kind: str, namespace: str, name: str
    ) -> tuple[str, Mapping[str, Any]] | None:
        """(file, object with its namespace filled in), if the repository defines it."""
        if self._found is None:
            self._found = dict(_index(self.root))
        return self._found.get((kind, namespace, name))

    def chart_sources(
        self, release: Mapping[str, Any], output: Sequence[Mapping[str, Any]], namespace: str
    ) -> list[tuple[str, Mapping[str, Any]]]:
        """The repository's source objects the chart needs and the output lacks."""
        wanted = nested.chart_source(release, namespace=namespace_of(release, namespace))
        found: list[tuple[str, Mapping[str, Any]]] = []
        while wanted is not None and not _in_output(wanted, output, namespace):
            document = self.document(*wanted)
            if document is None:
                break
            found.append(document)
            # A HelmChart takes its chart from a source of its own.
            wanted = _helm_chart_source(document[1], wanted)
        return found


def readable(document: Mapping[str, Any]) -> bool:
    """A source object, or a ConfigMap/Secret a `valuesFrom` may name (not a HelmRelease)."""
    api_version, kind = str(document.get("apiVersion", "")), document.get("kind")
    if api_version == "v1":
        return kind in ("ConfigMap", "Secret")
    return api_version.startswith(_SOURCE_GROUP) and kind in _SOURCE_KINDS


def _in_output(
    wanted: tuple[str, str, str], output: Sequence[Mapping[str, Any]], namespace: str
) -> bool:
    kind, source_namespace, name = wanted
    return any(
        readable(document)
        and document.get("kind") == kind
        and name_of(document) == name
        and namespace_of(document, namespace) == source_namespace
        for document in output
    )


def _helm_chart_source(
    document: Mapping[str, Any], wanted: tuple[str, str, str]
) -> tuple[str, str, str] | None:
    if wanted[0] != "HelmChart":
        return None
    spec = document.get("spec")
    reference = spec.get("sourceRef") if isinstance(spec, Mapping) else None
    if not isinstance(reference, Mapping) or not reference.get("kind"):
        return None
    return (str(reference["kind"]), wanted[1], str(reference.get("name", "")))


def name_of(document: Mapping[str, Any]) -> str:
    """`metadata.name`, or "" when it has none."""
    metadata = document.get("metadata")
    return str(metadata.get("name", "")) if isinstance(metadata, Mapping) else ""


def namespace_of(document: Mapping[str, Any], default: str) -> str:
    """`metadata.namespace`, or `default` when it names none."""
    metadata = document.get("metadata")
    found = metadata.get("namespace") if isinstance(metadata, Mapping) else None
    return str(found or default)


def _index(root: Path) -> Iterator[tuple[tuple[str, str, str], tuple[str, Mapping[str, Any]]]]:
    seen: set[tuple[str, str, str]] = set()
    for source in _files(root, root):
        for document in _documents(root, source):
            if not readable(document) or str(document.get("apiVersion")) == "v1":
                continue
            namespace = namespace_of(document, _REPOSITORY_NAMESPACE)
            key = (str(document.get("kind")), namespace, name_of(document))
            if key in seen:
                continue
            seen.add(key)
            metadata = dict(document.get("metadata") or {})
            metadata["namespace"] = namespace
            yield key, (source, {**document, "metadata": metadata})


def _documents(root: Path, source: str) -> list[dict[str, Any]]:
    try:
        text = jail.read_text(root, source)
        if _SOURCE_GROUP not in text:
            return []
        return yamlio.load_documents(text, source=source, cache=False)
    except (ReviewerError, OSError, UnicodeDecodeError):
        return []


def _files(root: Path, directory: Path) -> Iterator[str]:
    if (directory / "Chart.yaml").is_file():
        return  # a chart's templates are not objects
    for child in sorted(directory.iterdir()):
        if child.name.startswith(".") or child.is_symlink():
            continue
        if child.is_dir():
            yield from _files(root, child)
        elif child.suffix in (".yaml", ".yml") and child.is_file():
            yield child.relative_to(root).as_posix()
