"""Every Flux Kustomization of a source, each built once (`flux_kustomization_build`).

Kustomizations are read from the YAML files below the source's paths and from what
their builds produce; the ConfigMaps and Secrets there are what `substituteFrom`
finds (`flux_kustomization_vars`). Duplicates and `dependsOn` loops are errors of the
Kustomizations concerned.

The HelmReleases a Kustomization produces are handed on with `helmreleases_in`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from reviewer import kustomize_flux, yamlio
from reviewer.errors import ConfigError, ReviewerError
from reviewer.helmreleases.patch_files import patch_files
from reviewer.kustomize import DEFAULT_TIMEOUT
from reviewer.sources import flux_kustomization_vars as fkv
from reviewer.sources.flux_artifacts import Artifacts, find_artifacts
from reviewer.sources.flux_kustomization_build import Built, build
from reviewer.sources.flux_kustomization_sops import ObjectDecryptor
from reviewer.sources.flux_kustomization_spec import (
    FluxKustomization,
    decode,
    is_kustomization,
)

HELMRELEASE_GROUP = "helm.toolkit.fluxcd.io"


def helmreleases_in(objects: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The HelmReleases among built objects: the boundary to the HelmRelease half of `flux`."""
    return [
        document
        for document in objects
        if document.get("kind") == "HelmRelease"
        and str(document.get("apiVersion", "")).startswith(f"{HELMRELEASE_GROUP}/")
    ]


# --- every Kustomization of a source -------------------------------------------------------


@dataclass(frozen=True)
class Result:
    """One Kustomization and what it built, or why it could not be built."""

    kustomization: FluxKustomization
    built: Built = field(default_factory=lambda: Built(()))
    error: ReviewerError | None = None

    @property
    def file(self) -> str:
        """The repository file that declares it (a parent's build names it in `source`)."""
        return self.kustomization.source.split(" (", 1)[0]


def find_in_files(root: Path, paths: Sequence[str]) -> list[Result]:
    """The Flux Kustomizations in the YAML files below `paths` (charts and hidden dirs
    skipped); one that does not decode is a result with its error."""
    documents = _documents_below(root, paths)
    return _kustomizations_in(documents, find_artifacts(documents))


def _kustomizations_in(
    documents: Sequence[tuple[str, dict[str, Any]]], artifacts: Artifacts
) -> list[Result]:
    return [
        _decoded(document, source, artifacts)
        for source, document in documents
        if is_kustomization(document)
    ]


def _decoded(document: Mapping[str, Any], source: str, artifacts: Artifacts) -> Result:
    try:
        return Result(decode(document, source=source, artifacts=artifacts))
    except ReviewerError as error:
        metadata = document.get("metadata")
        metadata = metadata if isinstance(metadata, Mapping) else {}
        stand_in = FluxKustomization(
            name=str(metadata.get("name") or source),
            namespace=str(metadata.get("namespace") or "default"),
            source=source,
            path="",
            fields=kustomize_flux.FluxFields(),
        )
        return Result(stand_in, error=error)


def variable_objects_below(root: Path, paths: Sequence[str]) -> fkv.VariableObjects:
    """The ConfigMaps and Secrets below `paths` a `substituteFrom` may read, with their files."""
    return fkv.variable_objects(_documents_below(root, paths))


def build_all(
    root: Path,
    paths: Sequence[str],
    *,
    decryptor: ObjectDecryptor | None = None,
    strict: bool = True,
    kubectl: Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[Result]:
    """Every Kustomization below `paths` and every one their builds produce, each built once.

    A Kustomization a build produces replaces a not yet built copy read from a file
    (the built one carries its parent's substitutions), as the cluster applies it. A
    failure (a strict substitution, a path leaving the repository, a `dependsOn` loop)
    is that Kustomization's alone.
    """
    documents = _documents_below(root, paths)
    variable_objects = fkv.variable_objects(documents)
    artifacts = find_artifacts(documents)
    build_one = partial(
        build,
        root=root,
        lookup=fkv.lookup_in(variable_objects),
        decryptor=decryptor,
        strict=strict,
        kubectl=kubectl,
        timeout=timeout,
    )
    in_files = _unique(_kustomizations_in(documents, artifacts))
    done: dict[tuple[str, str], Result] = {
        r.kustomization.identity: r for r in in_files if r.error is not None
    }
    declared = {r.kustomization.identity: r.file for r in in_files if r.error is None}
    # Roots first: a Kustomization whose file another one builds is applied as built.
    queue = _unbuilt(_roots(in_files), done)
    while queue:
        identity, kustomization = next(iter(queue.items()))
        del queue[identity]
        try:
            built = build_one(kustomization)
        except ReviewerError as error:
            done[identity] = Result(kustomization, error=error)
        else:
            files = built.files | fkv.substitute_from_files(kustomization, variable_objects)
            done[identity] = Result(kustomization, replace(built, files=files))
            for child in _children(kustomization, built, artifacts, declared):
                if child.kustomization.identity in done:
                    continue
                if child.error is not None:
                    done[child.kustomization.identity] = child
                else:
                    queue[child.kustomization.identity] = child.kustomization
        if not queue:
            # Kustomizations in files that no build produced are built as written.
            queue = _unbuilt(in_files, done)
    return _without_loops(list(done.values()))


def _unbuilt(
    results: Sequence[Result], done: Mapping[tuple[str, str], Result]
) -> dict[tuple[str, str], FluxKustomization]:
    """The Kustomizations of `results` not yet done, by identity, to build in this order."""
    return {
        r.kustomization.identity: r.kustomization
        for r in results
        if r.kustomization.identity not in done
    }


def _children(
    parent: FluxKustomization,
    built: Built,
    artifacts: Artifacts,
    declared: Mapping[tuple[str, str], str],
) -> Iterator[Result]:
    """The Kustomizations among the objects `parent` built, decoded one at a time."""
    for document in built.objects:
        if is_kustomization(document):
            child = _decoded(document, f"{parent.source} ({parent.path})", artifacts)
            yield _declared_in(child, declared)


def _declared_in(child: Result, declared: Mapping[tuple[str, str], str]) -> Result:
    """A Kustomization a build produced, named after the file that declares it (when one
    below the paths does), so that its errors point at that file."""
    file = declared.get(child.kustomization.identity)
    if file is None or child.error is not None:
        return child
    return replace(child, kustomization=replace(child.kustomization, source=file))


def _unique(found: list[Result]) -> list[Result]:
    """The same Kustomization in two files is an error naming both (a source is one cluster)."""
    first: dict[tuple[str, str], Result] = {}
    checked = []
    for result in found:
        other = first.setdefault(result.kustomization.identity, result)
        if other is result:
            checked.append(result)
            continue
        namespace, name = result.kustomization.identity
        error = ConfigError(
            result.file,
            f"Kustomization {namespace}/{name} is also defined in {other.file}",
            field="metadata.name",
            hint="a flux source is one cluster: declare one source per cluster directory "
            "in .reviewer.yaml",
        )
        checked.append(Result(result.kustomization, error=error))
    return checked


def _without_loops(results: list[Result]) -> list[Result]:
    """Each Kustomization in a `dependsOn` loop failed: Flux would wait for it forever."""
    known = {r.kustomization.identity: r.kustomization for r in results}
    checked = []
    for result in results:
        loop = dependency_loop(result.kustomization, known)
        if loop is None or result.error is not None:
            checked.append(result)
            continue
        chain = " → ".join(f"{namespace}/{name}" for namespace, name in loop)
        error = ConfigError(
            result.kustomization.source,
            f"dependency loop: {chain}",
            field="spec.dependsOn",
            hint="Flux never applies a Kustomization that waits for itself; remove one dependsOn",
        )
        checked.append(Result(result.kustomization, error=error))
    return checked


def dependency_loop(
    start: FluxKustomization, known: Mapping[tuple[str, str], FluxKustomization]
) -> list[tuple[str, str]] | None:
    """The shortest `dependsOn` chain from `start` back to itself, or None."""
    paths: dict[tuple[str, str], list[tuple[str, str]]] = {start.identity: [start.identity]}
    frontier = [start.identity]
    while frontier:
        following = []
        for identity in frontier:
            for needed in known[identity].depends_on if identity in known else ():
                if needed == start.identity:
                    return [*paths[identity], needed]
                if needed not in paths:
                    paths[needed] = [*paths[identity], needed]
                    following.append(needed)
        frontier = following
    return None


def _roots(found: Sequence[Result]) -> list[Result]:
    def built_by_another(result: Result) -> bool:
        return any(
            other is not result and _under(result.file, other.kustomization.path)
            for other in found
            if other.error is None
        )

    usable = [r for r in found if r.error is None]
    return [r for r in usable if not built_by_another(r)] or usable


def owned_directory(kustomization: FluxKustomization) -> str:
    """`spec.path` as a repository-relative directory (`.` for the whole repository)."""
    directory = kustomization.path.removeprefix("./").strip("/")
    return directory or "."


def _under(file: str, path: str) -> bool:
    directory = path.removeprefix("./").strip("/")
    return not directory or directory == "." or file.startswith(f"{directory}/")


def _documents_below(root: Path, paths: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    for path in paths:
        top = root / path
        if not top.is_dir():
            continue  # the HelmRelease catalog reports a missing path
        files = [file.relative_to(root).as_posix() for file in _yaml_files(root, top)]
        patches = patch_files(root, files)
        for source in files:
            if source in patches:
                continue  # a partial object kustomize merges into another
            file = root / source
            try:
                text = yamlio.read_text(file, source=source)
                documents = yamlio.load_documents(text, source=source)
            except ReviewerError:
                continue  # the HelmRelease catalog reports a file it cannot read
            found.extend((source, document) for document in documents)
    return found


def _yaml_files(root: Path, directory: Path) -> list[Path]:
    if (directory / "Chart.yaml").is_file():
        return []
    files = []
    for child in sorted(directory.iterdir(), key=lambda path: path.name):
        if child.name.startswith(".") or child.is_symlink():
            continue
        if child.is_dir():
            files.extend(_yaml_files(root, child))
        elif child.suffix in (".yaml", ".yml"):
            files.append(child)
    return files
