"""A Flux Kustomization's spec (kustomize.toolkit.fluxcd.io/v1), decoded once at the edge.

Errors name the declaring file and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reviewer import kustomize_flux
from reviewer.errors import ConfigError
from reviewer.sources import flux_artifacts

API_GROUP = "kustomize.toolkit.fluxcd.io"
_STRATEGIES = ("WithVariables", "Always")
# Sources whose content is not this checkout: spec.path is relative to an artifact (pushed
# to a registry, or assembled by an ArtifactGenerator) or to a bucket, never to the checkout.
_UNSUPPORTED_SOURCES = ("ExternalArtifact", "OCIRepository", "Bucket")
_NO_ARTIFACTS: flux_artifacts.Artifacts = {}


@dataclass(frozen=True)
class SubstituteReference:
    """One `spec.postBuild.substituteFrom` entry."""

    kind: str
    name: str
    optional: bool = False


@dataclass(frozen=True)
class PostBuild:
    """`spec.postBuild`: inline variables, their sources, and the strategy."""

    substitute: Mapping[str, str] = field(default_factory=dict)
    substitute_from: tuple[SubstituteReference, ...] = ()
    always: bool = False


@dataclass(frozen=True)
class FluxKustomization:
    """A decoded Flux Kustomization and the file that declares it."""

    name: str
    namespace: str
    source: str
    path: str
    fields: kustomize_flux.FluxFields
    post_build: PostBuild | None = None
    decryption: bool = False
    common_labels: Mapping[str, str] = field(default_factory=dict)
    common_annotations: Mapping[str, str] = field(default_factory=dict)
    depends_on: tuple[tuple[str, str], ...] = ()
    """`spec.dependsOn` as (namespace, name); the namespace defaults to the Kustomization's."""
    source_ref: str = ""
    """`spec.sourceRef` as `<kind> <namespace>/<name>`, for messages."""

    @property
    def identity(self) -> tuple[str, str]:
        """(namespace, name): how Flux names a Kustomization."""
        return (self.namespace, self.name)


def is_kustomization(document: Mapping[str, Any]) -> bool:
    """Whether `document` is a Flux Kustomization (not a kustomize kustomization file)."""
    api_version = str(document.get("apiVersion", ""))
    return document.get("kind") == "Kustomization" and api_version.startswith(f"{API_GROUP}/")


def decode(
    document: Mapping[str, Any],
    *,
    source: str,
    artifacts: flux_artifacts.Artifacts = _NO_ARTIFACTS,
) -> FluxKustomization:
    """A Flux Kustomization from its document; errors name `source` and the field. A path
    in one of `artifacts` (ExternalArtifacts of this repository) becomes a repository path."""
    metadata = _mapping(document.get("metadata"), source, "metadata")
    spec = _mapping(document.get("spec"), source, "spec")
    name = _string(metadata.get("name"), source, "metadata.name", required=True)
    namespace = _string(metadata.get("namespace"), source, "metadata.namespace") or "default"
    path = _string(spec.get("path"), source, "spec.path") or "./"
    directory = _artifact_directory(spec.get("sourceRef"), source, namespace, artifacts)
    if directory is not None:
        path = flux_artifacts.in_repository(directory, path, source=source)
    fields = kustomize_flux.FluxFields(
        target_namespace=_string(spec.get("targetNamespace"), source, "spec.targetNamespace"),
        name_prefix=_string(spec.get("namePrefix"), source, "spec.namePrefix"),
        name_suffix=_string(spec.get("nameSuffix"), source, "spec.nameSuffix"),
        patches=tuple(_patches(spec.get("patches"), source)),
        images=tuple(_mappings(spec.get("images"), source, "spec.images")),
        components=tuple(
            _string(entry, source, f"spec.components[{index}]", required=True)
            for index, entry in enumerate(_list(spec.get("components"), source, "spec.components"))
        ),
        ignore_missing_components=bool(spec.get("ignoreMissingComponents", False)),
    )
    common = _mapping(spec.get("commonMetadata"), source, "spec.commonMetadata")
    return FluxKustomization(
        name=name,
        namespace=namespace,
        source=source,
        path=path,
        fields=fields,
        post_build=_post_build(spec.get("postBuild"), source),
        decryption=spec.get("decryption") is not None,
        common_labels=_strings(common.get("labels"), source, "spec.commonMetadata.labels"),
        common_annotations=_strings(
            common.get("annotations"), source, "spec.commonMetadata.annotations"
        ),
        depends_on=_depends_on(spec.get("dependsOn"), source, namespace),
        source_ref=_source_ref(spec.get("sourceRef"), namespace),
    )


def _source_ref(value: Any, namespace: str) -> str:
    reference = value if isinstance(value, Mapping) else {}
    other = reference.get("namespace") or namespace
    return f"{reference.get('kind', 'GitRepository')} {other}/{reference.get('name', '')}"


def _artifact_directory(
    value: Any, source: str, namespace: str, artifacts: flux_artifacts.Artifacts
) -> str | None:
    """The repository directory an ExternalArtifact `sourceRef` shows (None for a source
    whose paths are the repository's). A source whose paths are not paths of this
    repository is refused, never built from a directory that happens to share its name."""
    reference = _mapping(value, source, "spec.sourceRef")
    kind = reference.get("kind")
    if kind not in _UNSUPPORTED_SOURCES:
        return None
    key = (str(reference.get("namespace") or namespace), str(reference.get("name")))
    found = artifacts.get(key) if kind == "ExternalArtifact" else None
    if isinstance(found, ConfigError):
        raise found
    if found is not None:
        return found
    what = f"{kind} {key[0]}/{key[1]}" if kind != "Bucket" else kind
    raise ConfigError(
        source,
        f"{what} is not supported: spec.path is relative to that artifact, not to this repository",
        field="spec.sourceRef.kind",
        hint=_ARTIFACT_HINT if kind == "ExternalArtifact" else _GIT_HINT,
    )


_ARTIFACT_HINT = (
    "an ExternalArtifact is read from an ArtifactGenerator below the source's paths that "
    "copies whole directories of this repository into it"
)
_GIT_HINT = "point sourceRef at the GitRepository of this repository to review it"


def _depends_on(value: Any, source: str, namespace: str) -> tuple[tuple[str, str], ...]:
    found = []
    for index, entry in enumerate(_mappings(value, source, "spec.dependsOn")):
        where = f"spec.dependsOn[{index}]"
        name = _string(entry.get("name"), source, f"{where}.name", required=True)
        other = _string(entry.get("namespace"), source, f"{where}.namespace")
        found.append((other or namespace, name))
    return tuple(found)


def _post_build(value: Any, source: str) -> PostBuild | None:
    if value is None:
        return None
    post_build = _mapping(value, source, "spec.postBuild")
    strategy = post_build.get("substituteStrategy", "WithVariables")
    if strategy not in _STRATEGIES:
        raise ConfigError(
            source,
            f"must be one of {', '.join(_STRATEGIES)}",
            field="spec.postBuild.substituteStrategy",
        )
    references = []
    field_name = "spec.postBuild.substituteFrom"
    for index, entry in enumerate(_mappings(post_build.get("substituteFrom"), source, field_name)):
        where = f"{field_name}[{index}]"
        kind = entry.get("kind")
        if kind not in ("ConfigMap", "Secret"):
            raise ConfigError(source, "kind must be ConfigMap or Secret", field=f"{where}.kind")
        references.append(
            SubstituteReference(
                kind=kind,
                name=_string(entry.get("name"), source, f"{where}.name", required=True),
                optional=bool(entry.get("optional", False)),
            )
        )
    return PostBuild(
        substitute=_strings(post_build.get("substitute"), source, "spec.postBuild.substitute"),
        substitute_from=tuple(references),
        always=strategy == "Always",
    )


def _patches(value: Any, source: str) -> list[Mapping[str, Any]]:
    patches = _mappings(value, source, "spec.patches")
    for index, patch in enumerate(patches):
        if not isinstance(patch.get("patch"), str):
            raise ConfigError(source, "must hold an inline patch", field=f"spec.patches[{index}]")
    return patches


def _mapping(value: Any, source: str, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(source, "must be a mapping", field=where)
    return value


def _list(value: Any, source: str, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(source, "must be a list", field=where)
    return value


def _mappings(value: Any, source: str, where: str) -> list[Mapping[str, Any]]:
    entries = _list(value, source, where)
    for index, entry in enumerate(entries):
        _mapping(entry, source, f"{where}[{index}]")
    return entries


def _strings(value: Any, source: str, where: str) -> dict[str, str]:
    mapping = _mapping(value, source, where)
    for key, entry in mapping.items():
        if not isinstance(entry, str):
            raise ConfigError(source, "values must be strings", field=f"{where}.{key}")
    return {str(key): entry for key, entry in mapping.items()}


def _string(value: Any, source: str, where: str, *, required: bool = False) -> Any:
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise ConfigError(source, "must be a non-empty string", field=where)
    return value
