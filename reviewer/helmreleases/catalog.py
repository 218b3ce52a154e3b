"""The Flux objects below a source's paths: HelmReleases and what they reference.

Every `.yaml`/`.yml` file below the paths is read, except inside Helm charts (a
directory with `Chart.yaml`), hidden directories and files a kustomization file names
as patches. Documents that are not one of
the kinds below are ignored. An object defined twice is an error naming both files.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reviewer import jail, yamlio
from reviewer.decode import Field
from reviewer.errors import ConfigError, ReviewerError
from reviewer.helmreleases import objects, source_objects
from reviewer.helmreleases.objects import HelmRelease, ObjectRef
from reviewer.helmreleases.patch_files import patch_files
from reviewer.helmreleases.source_objects import (
    GitRepository,
    HelmChart,
    HelmRepository,
    OciRepository,
    ValuesObject,
)

_SUFFIXES = (".yaml", ".yml")


@dataclass
class Catalog:
    """Objects by reference, and the files that could not be read (with why)."""

    releases: list[HelmRelease] = field(default_factory=list)
    helm_repositories: dict[ObjectRef, HelmRepository] = field(default_factory=dict)
    oci_repositories: dict[ObjectRef, OciRepository] = field(default_factory=dict)
    git_repositories: dict[ObjectRef, GitRepository] = field(default_factory=dict)
    helm_charts: dict[ObjectRef, HelmChart] = field(default_factory=dict)
    values_objects: dict[ObjectRef, ValuesObject] = field(default_factory=dict)
    errors: list[ReviewerError] = field(default_factory=list)
    _files: dict[ObjectRef, str] = field(default_factory=dict)

    def claim(self, ref: ObjectRef, at: Field) -> None:
        """Record where `ref` is defined; a second definition is an error naming both."""
        first = self._files.get(ref)
        if first is not None:
            raise at.error(f"{ref} is also defined in {first}")
        self._files[ref] = at.file


Document = tuple[str, Mapping[str, Any]]
"""An object that is not a file of its own (the output of a build), and where it came from."""


def collect(
    root: Path,
    paths: tuple[str, ...],
    *,
    namespace: str,
    documents: tuple[Document, ...] = (),
    exclude: tuple[str, ...] = (),
) -> Catalog:
    """Every Flux object below `paths` of the checkout at `root` (files below an `exclude`d
    directory left out), and among `documents`; objects without a namespace are in
    `namespace`."""
    catalog = Catalog()
    for path in paths:
        files = list(_files(root, path))
        patches = patch_files(root, files)
        for source in files:
            if source in patches or any(below(source, directory) for directory in exclude):
                continue
            try:
                _read_file(catalog, root, source, namespace)
            except ReviewerError as error:
                catalog.errors.append(error)
    for origin, document in documents:
        add(catalog, document, Field(origin), namespace)
    return catalog


def below(file: str, directory: str) -> bool:
    """Whether the repository file `file` is inside `directory` (`.`: the whole repository)."""
    return directory == "." or file.startswith(directory.rstrip("/") + "/")


def _files(root: Path, path: str) -> Iterator[str]:
    top = root / path
    if top.is_file():
        yield path
        return
    if not top.is_dir():
        raise ConfigError(path, "not a directory in the repository")
    jail.check_tree(root, top)
    yield from _walk(root, top)


def _walk(root: Path, directory: Path) -> Iterator[str]:
    if (directory / "Chart.yaml").is_file():
        return  # a chart's templates are not objects
    for child in sorted(directory.iterdir()):
        if child.name.startswith("."):
            continue
        if child.is_dir():
            yield from _walk(root, child)
        elif child.suffix in _SUFFIXES and child.is_file():
            yield child.relative_to(root).as_posix()


def _read_file(catalog: Catalog, root: Path, source: str, namespace: str) -> None:
    text = jail.read_text(root, source)
    documents = yamlio.load_documents(text, source=source)
    for number, document in enumerate(documents):
        at = Field(source, (f"document {number + 1}",) if len(documents) > 1 else ())
        add(catalog, document, at, namespace)


def add(catalog: Catalog, document: Mapping[str, Any], at: Field, namespace: str) -> None:
    """Add one document if it is an object of interest; a bad one goes to `catalog.errors`."""
    try:
        _add(catalog, document, at, namespace)
    except ReviewerError as error:
        catalog.errors.append(error)


def _add(catalog: Catalog, document: Mapping[str, Any], at: Field, namespace: str) -> None:
    api_version, kind = document.get("apiVersion"), document.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return
    group = api_version.rpartition("/")[0]
    if group == objects.HELM_GROUP and kind == "HelmRelease":
        release = objects.decode_helmrelease(document, at, namespace=namespace)
        catalog.claim(release.ref, at)
        catalog.releases.append(release)
        return
    if (group, kind) in (("", "ConfigMap"), ("", "Secret")):
        ref = ObjectRef(
            kind, objects.namespace_of(document, at, namespace), objects.name_of(document, at)
        )
        catalog.claim(ref, at)
        catalog.values_objects[ref] = source_objects.decode_values_object(document, at, ref)
        return
    if group != objects.SOURCE_GROUP:
        return
    _add_source(catalog, document, at, namespace, kind)


def _add_source(
    catalog: Catalog, document: Mapping[str, Any], at: Field, namespace: str, kind: str
) -> None:
    if kind not in ("HelmRepository", "OCIRepository", "GitRepository", "HelmChart"):
        return
    ref = ObjectRef(
        kind, objects.namespace_of(document, at, namespace), objects.name_of(document, at)
    )
    catalog.claim(ref, at)
    if kind == "HelmRepository":
        catalog.helm_repositories[ref] = source_objects.decode_helm_repository(document, at, ref)
    elif kind == "OCIRepository":
        catalog.oci_repositories[ref] = source_objects.decode_oci_repository(document, at, ref)
    elif kind == "GitRepository":
        catalog.git_repositories[ref] = source_objects.decode_git_repository(document, at, ref)
    else:
        catalog.helm_charts[ref] = source_objects.decode_helm_chart(document, at, ref)


def _ref(kind: str, document: Mapping[str, Any], at: Field, namespace: str) -> ObjectRef:
    return ObjectRef(
        kind, objects.namespace_of(document, at, namespace), objects.name_of(document, at)
    )
