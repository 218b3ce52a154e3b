"""Flux Kustomizations (kustomize.toolkit.fluxcd.io/v1), built as kustomize-controller builds them.

The order is the controller's: kustomize build of `spec.path` with the spec's
fields written into the kustomization (`kustomize_flux.build_flux`), then per object
SOPS decryption (when `spec.decryption` is set) and post-build substitution,
then the owner labels `kustomize.toolkit.fluxcd.io/name|namespace` and last
`commonMetadata`. Substitution variables come from `substituteFrom` in order
(later wins; ConfigMaps and Secrets found in the repository by the caller's
lookup) and then the inline `substitute`; newlines are dropped from values.
Strict substitution is the default, as in kustomize-controller 1.9.

The HelmReleases a Kustomization produces are handed on with `helmreleases_in`.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from reviewer import kustomize_flux, yamlio
from reviewer.errors import ConfigError, ReviewerError
from reviewer.helmreleases.patch_files import patch_files
from reviewer.kustomize import DEFAULT_TIMEOUT
from reviewer.redact import redact_tree, replacement_map
from reviewer.sources.envsubst import SubstitutionError, expand
from reviewer.sources.flux_artifacts import Artifacts, find_artifacts
from reviewer.sources.flux_kustomization_spec import (
    API_GROUP,
    FluxKustomization,
    PostBuild,
    decode,
    is_kustomization,
)

SUBSTITUTE_KEY = f"{API_GROUP}/substitute"
DECRYPT_KEY = f"{API_GROUP}/decrypt"
OWNER_NAME_LABEL = f"{API_GROUP}/name"
OWNER_NAMESPACE_LABEL = f"{API_GROUP}/namespace"
HELMRELEASE_GROUP = "helm.toolkit.fluxcd.io"
_VARIABLE_NAME = re.compile(r"^[_A-Za-z][_A-Za-z0-9]*$")

# (kind, namespace, name) -> the ConfigMap or Secret found in the repository, or None.
ObjectLookup = Callable[[str, str, str], Mapping[str, Any] | None]


class ObjectDecryptor(Protocol):
    """Decrypts a SOPS-encrypted object (satisfied by `sops.SopsDecoder`)."""

    def decrypt_object(self, document: Mapping[str, Any], *, source: str) -> dict[str, Any]:
        """The object with its values decrypted."""
        ...


@dataclass(frozen=True)
class Built:
    """A Kustomization's objects, and {secret: redacted} for the secrets they were built with."""

    objects: tuple[dict[str, Any], ...]
    replacements: Mapping[str, str] = field(default_factory=dict)
    """Decrypted SOPS Secrets' values and Secret-sourced variables, which substitution may
    have copied into any object (a ConfigMap, a HelmRelease's values)."""
    files: frozenset[str] = frozenset()
    """The repository files the build read."""


@dataclass(frozen=True)
class Variables:
    """Substitution variables, and which values came from Secrets."""

    values: Mapping[str, str]
    secret_values: tuple[str, ...] = ()


def build(
    kustomization: FluxKustomization,
    root: Path,
    *,
    lookup: ObjectLookup,
    decryptor: ObjectDecryptor | None = None,
    strict: bool = True,
    kubectl: Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> Built:
    """The objects `kustomization` applies, built from the repository at `root`."""
    # Relative to the repository root even when written absolute, as the controller joins it.
    directory = root / kustomization.path.lstrip("/")
    try:
        tree = kustomize_flux.build_flux_tree(
            root,
            directory,
            kustomization.fields,
            source=kustomization.source,
            kubectl=kubectl,
            timeout=timeout,
        )
    except ConfigError as error:
        if error.field != "spec.path" or directory.is_dir() or not kustomization.source_ref:
            raise
        raise ConfigError(
            kustomization.source,
            f"names no directory in the repository (read from {kustomization.source_ref})",
            field="spec.path",
            hint="the review builds spec.path from this checkout: a Kustomization of "
            "another repository or branch cannot be reviewed with it",
        ) from None
    objects = yamlio.load_documents(
        tree.text, source=f"{kustomization.source} (build)", cache=False
    )
    variables = (
        load_variables(kustomization, lookup, decryptor)
        if kustomization.post_build is not None
        else Variables({})
    )
    secrets = list(variables.secret_values)
    built = []
    for document in objects:
        decrypted = _decrypted(kustomization, document, decryptor)
        result = decrypted
        if kustomization.post_build is not None:
            result = substitute(
                decrypted,
                variables.values,
                always=kustomization.post_build.always,
                strict=strict,
                source=kustomization.source,
            )
        if decrypted is not document:
            # Both forms: the decrypted value, and the one substitution made of it.
            secrets.extend([*_secret_texts(decrypted), *_secret_texts(result)])
        built.append(with_metadata(kustomization, result))
    unique = sorted({text for text in secrets if text})
    return Built(tuple(built), replacement_map(unique, redact_tree(unique)), tree.files)


def load_variables(
    kustomization: FluxKustomization, lookup: ObjectLookup, decryptor: ObjectDecryptor | None
) -> Variables:
    """The substitution variables: `substituteFrom` in order, then inline `substitute`."""
    post_build = kustomization.post_build or PostBuild()
    variables: dict[str, str] = {}
    secret_values: list[str] = []
    for index, reference in enumerate(post_build.substitute_from):
        where = f"spec.postBuild.substituteFrom[{index}]"
        found = lookup(reference.kind, kustomization.namespace, reference.name)
        if found is None:
            if reference.optional:
                continue
            raise ConfigError(
                kustomization.source,
                f"{reference.kind} {kustomization.namespace}/{reference.name} "
                "is not in the repository",
                field=where,
                hint="add it under the source's paths, or mark the reference optional: true",
            )
        for key, value in _data(reference.kind, found, decryptor, kustomization, where).items():
            variables[key] = value.replace("\n", "")
            if reference.kind == "Secret":
                secret_values.append(variables[key])
    for key, value in post_build.substitute.items():
        variables[key] = value.replace("\n", "")
    return Variables(variables, tuple(secret_values))


def substitute(
    document: dict[str, Any],
    variables: Mapping[str, str],
    *,
    always: bool,
    strict: bool,
    source: str,
) -> dict[str, Any]:
    """One built object after post-build substitution (on its YAML text, as Flux does)."""
    metadata = document.get("metadata") or {}
    if (metadata.get("labels") or {}).get(SUBSTITUTE_KEY) == "disabled":
        return document
    if (metadata.get("annotations") or {}).get(SUBSTITUTE_KEY) == "disabled":
        return document
    if not variables and not always:
        return document
    what = f"{document.get('kind')}/{metadata.get('name')}"
    for name in variables:
        if not _VARIABLE_NAME.match(name):
            raise ConfigError(
                source,
                f"post build failed for {what}: a variable name is invalid, "
                f"must match '{_VARIABLE_NAME.pattern}'",
                field="spec.postBuild",
            )
    try:
        text = expand(yamlio.dump(document), variables, strict=strict)
    except SubstitutionError as error:
        raise ConfigError(
            source, f"post build failed for {what}: {error.message}", field="spec.postBuild"
        ) from None
    return yamlio.load_mapping(text, source=f"{source} ({what} after substitution)")


def with_metadata(kustomization: FluxKustomization, document: dict[str, Any]) -> dict[str, Any]:
    """The owner labels, then `commonMetadata` (which wins on a shared key), as at apply."""
    metadata = dict(document.get("metadata") or {})
    labels = {
        **(metadata.get("labels") or {}),
        OWNER_NAME_LABEL: kustomization.name,
        OWNER_NAMESPACE_LABEL: kustomization.namespace,
        **kustomization.common_labels,
    }
    metadata["labels"] = labels
    if kustomization.common_annotations:
        metadata["annotations"] = {
            **(metadata.get("annotations") or {}),
            **kustomization.common_annotations,
        }
    return {**document, "metadata": metadata}


def helmreleases_in(objects: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The HelmReleases among built objects: the boundary to the HelmRelease half of `flux`."""
    return [
        document
        for document in objects
        if document.get("kind") == "HelmRelease"
        and str(document.get("apiVersion", "")).startswith(f"{HELMRELEASE_GROUP}/")
    ]


def is_encrypted_secret(document: Mapping[str, Any]) -> bool:
    """A Secret with a top-level `sops` field, as kustomize-controller recognises one."""
    return (
        document.get("kind") == "Secret"
        and document.get("apiVersion") == "v1"
        and "sops" in document
    )


def _decrypted(
    kustomization: FluxKustomization,
    document: dict[str, Any],
    decryptor: ObjectDecryptor | None,
) -> dict[str, Any]:
    if not is_encrypted_secret(document):
        return document
    annotations = (document.get("metadata") or {}).get("annotations") or {}
    if str(annotations.get(DECRYPT_KEY, "")).lower() == "disabled":
        return document
    name = (document.get("metadata") or {}).get("name")
    if not kustomization.decryption:
        raise ConfigError(
            kustomization.source,
            f"Secret/{name} is SOPS encrypted, configuring decryption is required",
            field="spec.decryption",
        )
    if decryptor is None:
        raise ConfigError(kustomization.source, f"Secret/{name}: no SOPS decryptor available")
    return decryptor.decrypt_object(document, source=f"{kustomization.source} Secret/{name}")


def _secret_texts(secret: Mapping[str, Any]) -> list[str]:
    texts = [str(value) for value in (secret.get("stringData") or {}).values()]
    for value in (secret.get("data") or {}).values():
        texts.append(str(value))
        try:
            texts.append(base64.b64decode(str(value), validate=True).decode("utf-8"))
        except (binascii.Error, UnicodeDecodeError):
            continue
    return texts


def _data(
    kind: str,
    found: Mapping[str, Any],
    decryptor: ObjectDecryptor | None,
    kustomization: FluxKustomization,
    where: str,
) -> dict[str, str]:
    if kind == "ConfigMap":
        return {str(key): str(value) for key, value in (found.get("data") or {}).items()}
    if is_encrypted_secret(found):
        if decryptor is None:
            raise ConfigError(kustomization.source, "no SOPS decryptor available", field=where)
        found = decryptor.decrypt_object(found, source=f"{kustomization.source} {where}")
    values: dict[str, str] = {}
    for key, value in (found.get("data") or {}).items():
        try:
            values[str(key)] = base64.b64decode(str(value), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise ConfigError(
                kustomization.source, f"Secret key '{key}' is not base64 text", field=where
            ) from None
    # The API server merges stringData into data.
    values.update({str(key): str(value) for key, value in (found.get("stringData") or {}).items()})
    return values


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
    artifacts = find_artifacts(documents)
    found = []
    for source, document in documents:
        if is_kustomization(document):
            found.append(_decoded(document, source, artifacts))
    return found


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


def repository_lookup(root: Path, paths: Sequence[str]) -> ObjectLookup:
    """ConfigMaps and Secrets in the YAML files below `paths`, for `substituteFrom`."""
    return _lookup_in(_variable_objects(root, paths))


def _lookup_in(
    objects: Mapping[tuple[str, str, str], tuple[str, Mapping[str, Any]]],
) -> ObjectLookup:
    def lookup(kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        found = objects.get((kind, namespace, name))
        return None if found is None else found[1]

    return lookup


def _variable_objects(
    root: Path, paths: Sequence[str]
) -> dict[tuple[str, str, str], tuple[str, Mapping[str, Any]]]:
    """(kind, namespace, name) of each ConfigMap and Secret below `paths` → (file, object)."""
    objects: dict[tuple[str, str, str], tuple[str, Mapping[str, Any]]] = {}
    for source, document in _documents_below(root, paths):
        if document.get("apiVersion") == "v1" and document.get("kind") in ("ConfigMap", "Secret"):
            metadata = document.get("metadata") or {}
            key = (document["kind"], metadata.get("namespace") or "default", metadata.get("name"))
            objects.setdefault((str(key[0]), str(key[1]), str(key[2])), (source, document))
    return objects


def _variable_files(
    kustomization: FluxKustomization,
    objects: Mapping[tuple[str, str, str], tuple[str, Mapping[str, Any]]],
) -> frozenset[str]:
    """The files of the `substituteFrom` objects `kustomization` read: inputs of its build."""
    references = kustomization.post_build.substitute_from if kustomization.post_build else ()
    return frozenset(
        objects[key][0]
        for key in ((r.kind, kustomization.namespace, r.name) for r in references)
        if key in objects
    )


def variable_files(root: Path, paths: Sequence[str], kustomization: FluxKustomization) -> set[str]:
    """The files of the ConfigMaps and Secrets its `substituteFrom` reads (as `repository_lookup`
    finds them): inputs of what it builds."""
    post_build = kustomization.post_build or PostBuild()
    wanted = {(r.kind, kustomization.namespace, r.name) for r in post_build.substitute_from}
    files: dict[tuple[str, str, str], str] = {}
    for file, document in _documents_below(root, paths) if wanted else ():
        metadata = document.get("metadata") or {}
        key = (document.get("kind"), metadata.get("namespace") or "default", metadata.get("name"))
        if document.get("apiVersion") == "v1" and key in wanted:
            files.setdefault((str(key[0]), str(key[1]), str(key[2])), file)
    return set(files.values())


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
    variable_objects = _variable_objects(root, paths)
    artifacts = find_artifacts(_documents_below(root, paths))
    lookup = _lookup_in(variable_objects)
    in_files = _unique(find_in_files(root, paths))
    done: dict[tuple[str, str], Result] = {
        r.kustomization.identity: r for r in in_files if r.error is not None
    }
    declared = {r.kustomization.identity: r.file for r in in_files if r.error is None}
    # Roots first: a Kustomization whose file another one builds is applied as built.
    queue = {r.kustomization.identity: r.kustomization for r in _roots(in_files)}
    queue = {identity: k for identity, k in queue.items() if identity not in done}
    while queue:
        identity, kustomization = next(iter(queue.items()))
        del queue[identity]
        try:
            built = build(
                kustomization,
                root,
                lookup=lookup,
                decryptor=decryptor,
                strict=strict,
                kubectl=kubectl,
                timeout=timeout,
            )
        except ReviewerError as error:
            done[identity] = Result(kustomization, error=error)
        else:
            files = built.files | _variable_files(kustomization, variable_objects)
            done[identity] = Result(kustomization, replace(built, files=files))
            for document in built.objects:
                if is_kustomization(document):
                    child = _decoded(
                        document, f"{kustomization.source} ({kustomization.path})", artifacts
                    )
                    child = _declared_in(child, declared)
                    if child.kustomization.identity in done:
                        continue
                    if child.error is not None:
                        done[child.kustomization.identity] = child
                    else:
                        queue[child.kustomization.identity] = child.kustomization
        if not queue:
            # Kustomizations in files that no build produced are built as written.
            queue = {
                r.kustomization.identity: r.kustomization
                for r in in_files
                if r.kustomization.identity not in done
            }
    return _without_loops(list(done.values()))


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
