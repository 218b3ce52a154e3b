"""Kraan layers: `AddonsLayer` objects (kraan.io/v1alpha1) that map a layer to a directory.

What Kraan's layer applier does with a layer's directory (`spec.source.path`,
relative to the repository root and starting with `./`): `kustomize build` when
the directory holds a kustomization file, else every YAML file below it
(`kubectl apply -R`); of the objects, HelmReleases and HelmRepositories are
kept and each gets the label `kraan/layer=<layer name>`. HelmReleases also get
`spec.suspend` cleared, and with the annotation `kraan.updateVersion: "true"`
the value `kraanVersion: <layer version>`. The same HelmRelease in two layers is
an error (Kraan: "also included in layer"): `collect_layer_objects` returns such
HelmReleases apart, so the `kraan` kind (kraan_kind.py) fails them alone. Between
the two sides of a review a HelmRelease that changes layer is a move (`layer_moves`).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reviewer import kustomize, kustomize_check, yamlio
from reviewer.errors import ConfigError
from reviewer.model import LAYER_LABEL

API_VERSION = "kraan.io/v1alpha1"
UPDATE_VERSION_ANNOTATION = "kraan.updateVersion"
_KEPT_KINDS = (
    ("helm.toolkit.fluxcd.io/", "HelmRelease"),
    ("source.toolkit.fluxcd.io/", "HelmRepository"),
)
_PATH = re.compile(r"^\./")


@dataclass(frozen=True)
class Layer:
    """One AddonsLayer: its name, version, directory and declaring file."""

    name: str
    version: str
    path: str  # repository-relative, as written (`./...`)
    source: str
    hold: bool = False
    repository: tuple[str, str] | None = None
    """(name, namespace) of the GitRepository the layer reads: the repository under review."""


@dataclass(frozen=True)
class LayerObject:
    """A HelmRelease or HelmRepository of a layer, labelled as Kraan labels it."""

    layer: str
    file: str  # the file (or, for a kustomize-built layer, the directory) it came from
    document: dict[str, Any]

    @property
    def identity(self) -> tuple[str, str, str]:
        """(kind, namespace, name): what Kraan keys a layer's objects by."""
        metadata = self.document.get("metadata") or {}
        namespace = metadata.get("namespace") or "default"
        return (str(self.document.get("kind")), str(namespace), str(metadata.get("name")))


@dataclass(frozen=True)
class LayerMove:
    """A HelmRelease that belongs to another layer on the head side."""

    kind: str
    namespace: str
    name: str
    base_layer: str
    head_layer: str


def is_addons_layer(document: Mapping[str, Any]) -> bool:
    """Whether `document` is a Kraan AddonsLayer."""
    return document.get("apiVersion") == API_VERSION and document.get("kind") == "AddonsLayer"


def decode_layer(document: Mapping[str, Any], *, source: str) -> Layer:
    """An AddonsLayer; errors name `source` and the field."""
    metadata = document.get("metadata") or {}
    spec = document.get("spec") or {}
    if not isinstance(metadata, Mapping) or not isinstance(spec, Mapping):
        raise ConfigError(source, "metadata and spec must be mappings")
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(source, "must be a non-empty string", field="metadata.name")
    layer_source = spec.get("source") or {}
    if not isinstance(layer_source, Mapping):
        raise ConfigError(source, "must be a mapping", field="spec.source")
    kind = layer_source.get("kind", "GitRepository")
    if kind != "GitRepository":
        raise ConfigError(source, "only GitRepository is supported", field="spec.source.kind")
    path = layer_source.get("path")
    if not isinstance(path, str) or not _PATH.match(path):
        raise ConfigError(
            source, "must be a path starting with ./ (Kraan's rule)", field="spec.source.path"
        )
    version = spec.get("version")
    if not isinstance(version, str) or not version:
        raise ConfigError(source, "must be a non-empty string", field="spec.version")
    return Layer(
        name=name,
        version=version,
        path=path,
        source=source,
        hold=spec.get("hold") is True,
        repository=_repository(layer_source),
    )


def _repository(layer_source: Mapping[str, Any]) -> tuple[str, str] | None:
    name, namespace = layer_source.get("name"), layer_source.get("namespace")
    if isinstance(name, str) and name and isinstance(namespace, str) and namespace:
        return name, namespace
    return None


def source_repositories(layers: Sequence[Layer]) -> list[tuple[str, dict[str, Any]]]:
    """The GitRepositories the layers read, as objects (with the AddonsLayer file naming each):
    a HelmRelease's chart from one of them is a chart in the repository under review."""
    found: dict[tuple[str, str], str] = {}
    for layer in sorted(layers, key=lambda layer: layer.name):
        if layer.repository is not None:
            found.setdefault(layer.repository, layer.source)
    return [
        (
            source,
            {
                "apiVersion": "source.toolkit.fluxcd.io/v1",
                "kind": "GitRepository",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {},
            },
        )
        for (name, namespace), source in sorted(found.items())
    ]


def layer_objects(
    root: Path, layers: Sequence[Layer], *, kubectl: Path | None = None
) -> list[LayerObject]:
    """Every layer's HelmReleases and HelmRepositories; a HelmRelease in two layers is an error."""
    found, duplicates = collect_layer_objects(root, layers, kubectl=kubectl)
    if duplicates:
        first = duplicates[0]
        raise ConfigError(first.definitions[1].file, first.message(), hint=DUPLICATE_HINT)
    return found


DUPLICATE_HINT = "a HelmRelease belongs to one AddonsLayer; remove one of the definitions"


@dataclass(frozen=True)
class Duplicate:
    """A HelmRelease that several layers include (Kraan: "also included in layer")."""

    namespace: str
    name: str
    definitions: tuple[LayerObject, ...]
    """Every definition, in layer order (at least two)."""

    def message(self) -> str:
        """Names the HelmRelease and every layer and file that includes it."""
        first, *others = self.definitions
        also = "; ".join(f"also included in layer '{o.layer}' ({o.file})" for o in others)
        return (
            f"HelmRelease {self.namespace}/{self.name} of layer '{first.layer}' "
            f"({first.file}) is {also}"
        )


def collect_layer_objects(
    root: Path,
    layers: Sequence[Layer],
    *,
    kubectl: Path | None = None,
    timeout: float = kustomize.DEFAULT_TIMEOUT,
) -> tuple[list[LayerObject], list[Duplicate]]:
    """Every layer's HelmReleases and HelmRepositories, without the HelmReleases that several
    layers include: those are returned apart, so the other releases can still be planned."""
    found: list[LayerObject] = []
    definitions: dict[tuple[str, str, str], list[LayerObject]] = {}
    for layer in sorted(layers, key=lambda layer: layer.name):
        for item in _read_layer(root, layer, kubectl=kubectl, timeout=timeout):
            found.append(item)
            if item.document.get("kind") == "HelmRelease":
                definitions.setdefault(item.identity, []).append(item)
    duplicates = [
        Duplicate(identity[1], identity[2], tuple(items))
        for identity, items in sorted(definitions.items())
        if len({item.layer for item in items}) > 1
    ]
    refused = {(d.namespace, d.name) for d in duplicates}
    kept = [
        item
        for item in found
        if item.document.get("kind") != "HelmRelease" or item.identity[1:] not in refused
    ]
    return kept, duplicates


def find_layers(root: Path, paths: Sequence[str]) -> list[Layer]:
    """The AddonsLayers in the YAML files below `paths`; a layer name used twice is an error."""
    layers: dict[str, Layer] = {}
    for path in paths:
        directory = root / path
        if not directory.is_dir():
            raise ConfigError(path, "not a directory in the repository")
        for file, document in _files_below(root, directory):
            if not is_addons_layer(document):
                continue
            layer = decode_layer(document, source=file)
            other = layers.get(layer.name)
            if other is not None:
                raise ConfigError(
                    file, f"AddonsLayer '{layer.name}' is also defined in {other.source}"
                )
            layers[layer.name] = layer
    return sorted(layers.values(), key=lambda layer: layer.name)


def layer_moves(base: Iterable[LayerObject], head: Iterable[LayerObject]) -> list[LayerMove]:
    """HelmReleases present on both sides whose layer changed: moves, not delete + add."""
    before = {item.identity: item.layer for item in base if item.identity[0] == "HelmRelease"}
    moves = []
    for item in head:
        old_layer = before.get(item.identity)
        if old_layer is not None and old_layer != item.layer:
            kind, namespace, name = item.identity
            moves.append(LayerMove(kind, namespace, name, old_layer, item.layer))
    return sorted(moves, key=lambda move: (move.namespace, move.name))


def grouped_by_layer(objects: Iterable[LayerObject]) -> dict[str, list[LayerObject]]:
    """Objects by layer name (layers in name order), for the report."""
    groups: dict[str, list[LayerObject]] = {}
    for item in sorted(objects, key=lambda item: (item.layer, item.identity)):
        groups.setdefault(item.layer, []).append(item)
    return groups


def _read_layer(
    root: Path, layer: Layer, *, kubectl: Path | None, timeout: float = kustomize.DEFAULT_TIMEOUT
) -> list[LayerObject]:
    directory = root / layer.path
    where = layer.path.removeprefix("./").rstrip("/") or "."
    if not directory.is_dir():
        raise ConfigError(
            layer.source, "names no directory in the repository", field="spec.source.path"
        )
    if kustomize_check.find_kustomization(directory) is not None:
        text = kustomize.build(root, directory, kubectl=kubectl, timeout=timeout)
        documents = [(where, d) for d in yamlio.load_documents(text, source=where, cache=False)]
    else:
        documents = list(_files_below(root, directory))
    return [
        LayerObject(layer.name, file, _as_kraan_applies(layer, document))
        for file, document in documents
        if _kept(document)
    ]


def _files_below(root: Path, directory: Path) -> Iterable[tuple[str, dict[str, Any]]]:
    real_root = Path(root).resolve()
    for path in sorted(directory.rglob("*")):
        if path.suffix not in (".yaml", ".yml", ".json") or not path.is_file():
            continue
        if not path.resolve().is_relative_to(real_root):
            raise ConfigError(path.name, "path leaves the repository")
        file = path.relative_to(root).as_posix()
        for document in yamlio.load_documents(yamlio.read_text(path, source=file), source=file):
            yield file, document


def _kept(document: Mapping[str, Any]) -> bool:
    api_version = str(document.get("apiVersion", ""))
    return any(
        api_version.startswith(group) and document.get("kind") == kind
        for group, kind in _KEPT_KINDS
    )


def _as_kraan_applies(layer: Layer, document: Mapping[str, Any]) -> dict[str, Any]:
    applied = copy.deepcopy(dict(document))
    metadata = applied.setdefault("metadata", {})
    metadata["labels"] = {**(metadata.get("labels") or {}), LAYER_LABEL: layer.name}
    if applied.get("kind") != "HelmRelease":
        return applied
    spec = applied.setdefault("spec", {})
    spec.pop("suspend", None)  # forced false, and false is omitted
    annotations = metadata.get("annotations") or {}
    if annotations.get(UPDATE_VERSION_ANNOTATION) == "true":
        spec["values"] = {**(spec.get("values") or {}), "kraanVersion": layer.version}
    return applied
