"""Flux objects as helm-controller and source-controller read them, decoded once.

`HelmRelease` (helm.toolkit.fluxcd.io/v2), the sources its chart comes from
(`HelmRepository`, `OCIRepository`, `GitRepository`, `HelmChart`) and the
`ConfigMap`s and `Secret`s its `valuesFrom` names. A bad field raises
`ConfigError` naming the file, the field and what is allowed, never the value.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reviewer import decode
from reviewer.decode import Field

HELM_GROUP = "helm.toolkit.fluxcd.io"
SOURCE_GROUP = "source.toolkit.fluxcd.io"
DEFAULT_VALUES_KEY = "values.yaml"
CRD_POLICIES = ("Skip", "Create", "CreateReplace")
CHART_SOURCE_KINDS = ("HelmRepository", "GitRepository", "Bucket")
CHART_REF_KINDS = ("OCIRepository", "HelmChart", "ExternalArtifact")
NO_VALUES: Mapping[str, Any] = {}
_NO_LIST: list[Any] = []  # never mutated
_NO_TEXT: dict[str, str] = {}  # never mutated


@dataclass(frozen=True, order=True)
class ObjectRef:
    """A namespaced reference to another object (kind, namespace, name)."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@dataclass(frozen=True)
class ValuesReference:
    """A `valuesFrom` entry: a ConfigMap or Secret key, merged whole or at `target_path`."""

    kind: str
    name: str
    values_key: str = DEFAULT_VALUES_KEY
    target_path: str = ""
    optional: bool = False
    literal: bool = False


@dataclass(frozen=True)
class ChartTemplate:
    """`spec.chart.spec` of a HelmRelease, or `spec` of a HelmChart."""

    chart: str
    version: str
    source: ObjectRef
    values_files: tuple[str, ...] = ()
    ignore_missing_values_files: bool = False


@dataclass(frozen=True)
class KustomizePatch:
    """A post-renderer patch (strategic merge or JSON 6902) and its target selector."""

    patch: str
    target: Mapping[str, str] | None = None


@dataclass(frozen=True)
class KustomizePostRenderer:
    """One `postRenderers[].kustomize`: patches, then image overrides."""

    patches: tuple[KustomizePatch, ...] = ()
    images: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class CrdPolicy:
    """What helm-controller does with a chart's crds/ on install and on upgrade."""

    install: str = "Create"
    upgrade: str = "Skip"


@dataclass(frozen=True)
class HelmRelease:
    """A decoded HelmRelease and the file it was found in."""

    file: str
    name: str
    namespace: str
    chart: ChartTemplate | None
    chart_ref: ObjectRef | None
    release_name: str
    target_namespace: str
    storage_namespace: str
    values: Mapping[str, Any]
    values_from: tuple[ValuesReference, ...]
    post_renderers: tuple[KustomizePostRenderer, ...]
    common_labels: Mapping[str, str]
    common_annotations: Mapping[str, str]
    crds: CrdPolicy
    suspend: bool = False
    skip_schema_validation: bool = False
    """`spec.install.disableSchemaValidation` (the render is an install)."""

    @property
    def ref(self) -> ObjectRef:
        """This release as a reference (for messages)."""
        return ObjectRef("HelmRelease", self.namespace, self.name)


@dataclass(frozen=True)
class HelmRepository:
    """An HTTP(S) chart repository, or an OCI registry with `type: oci`."""

    file: str
    ref: ObjectRef
    url: str
    oci: bool


@dataclass(frozen=True)
class OciRepository:
    """An OCI artifact and its reference: digest > semver (+ filter) > tag (default latest)."""

    file: str
    ref: ObjectRef
    url: str
    tag: str = "latest"
    semver: str = ""
    semver_filter: str = ""
    digest: str = ""


@dataclass(frozen=True)
class GitRepository:
    """A Git source; charts in it are read from the repository under review."""

    file: str
    ref: ObjectRef
    url: str


@dataclass(frozen=True)
class HelmChart:
    """A HelmChart object: a chart template of its own."""

    file: str
    ref: ObjectRef
    spec: ChartTemplate


@dataclass(frozen=True)
class ValuesObject:
    """A ConfigMap or Secret in the repository; `data` is text (Secret data decoded).

    An encrypted Secret keeps no data here: its values are read through the secrets stage.
    """

    file: str
    ref: ObjectRef
    data: Mapping[str, str]
    encrypted: bool = False


def namespace_of(document: Mapping[str, Any], at: Field, default: str) -> str:
    """`metadata.namespace`, else `default` (the namespace Flux would apply it in)."""
    metadata = decode.mapping(document.get("metadata"), at.key("metadata"))
    return decode.optional(metadata, "namespace", at.key("metadata"), decode.string, "") or default


def name_of(document: Mapping[str, Any], at: Field) -> str:
    """`metadata.name` (required, not empty)."""
    metadata = decode.mapping(document.get("metadata"), at.key("metadata"), required=("name",))
    return decode.string(metadata["name"], at.key("metadata").key("name"), empty=False)


def decode_helmrelease(document: Mapping[str, Any], at: Field, *, namespace: str) -> HelmRelease:
    """A `helm.toolkit.fluxcd.io/v2` HelmRelease."""
    api_version = decode.string(document.get("apiVersion"), at.key("apiVersion"))
    if api_version != f"{HELM_GROUP}/v2":
        raise at.key("apiVersion").error(f"must be {HELM_GROUP}/v2 (convert older versions)")
    name = name_of(document, at)
    namespace = namespace_of(document, at, namespace)
    spec_at = at.key("spec")
    spec = decode.mapping(document.get("spec"), spec_at)
    chart, chart_ref = _chart_source(spec, spec_at, namespace)
    target_namespace = decode.optional(spec, "targetNamespace", spec_at, decode.string, "")
    metadata_at = spec_at.key("commonMetadata")
    common = decode.optional_map(spec, "commonMetadata", spec_at)
    decode.mapping(common, metadata_at, allowed=("labels", "annotations"))
    return HelmRelease(
        file=at.file,
        name=name,
        namespace=namespace,
        chart=chart,
        chart_ref=chart_ref,
        release_name=decode.optional(spec, "releaseName", spec_at, _release_name, ""),
        target_namespace=target_namespace,
        storage_namespace=decode.optional(spec, "storageNamespace", spec_at, decode.string, ""),
        values=decode.optional(spec, "values", spec_at, decode.mapping, dict(NO_VALUES)),
        values_from=tuple(
            _values_reference(item, spec_at.key("valuesFrom").index(index))
            for index, item in enumerate(
                decode.optional(spec, "valuesFrom", spec_at, decode.sequence, _NO_LIST)
            )
        ),
        post_renderers=tuple(
            _post_renderer(item, spec_at.key("postRenderers").index(index))
            for index, item in enumerate(
                decode.optional(spec, "postRenderers", spec_at, decode.sequence, _NO_LIST)
            )
        ),
        common_labels=decode.optional(common, "labels", metadata_at, decode.string_map, _NO_TEXT),
        common_annotations=decode.optional(
            common, "annotations", metadata_at, decode.string_map, {}
        ),
        crds=CrdPolicy(
            install=_crd_policy(spec, "install", spec_at, "Create"),
            upgrade=_crd_policy(spec, "upgrade", spec_at, "Skip"),
        ),
        suspend=decode.optional(spec, "suspend", spec_at, decode.boolean, False),
        skip_schema_validation=decode.optional(
            decode.optional_map(spec, "install", spec_at),
            "disableSchemaValidation",
            spec_at.key("install"),
            decode.boolean,
            False,
        ),
    )


def _release_name(value: object, at: Field) -> str:
    name = decode.string(value, at, empty=False)
    if len(name) > 53:
        raise at.error("must be at most 53 characters")
    return name


def _chart_source(
    spec: Mapping[str, Any], at: Field, namespace: str
) -> tuple[ChartTemplate | None, ObjectRef | None]:
    has_chart, has_ref = spec.get("chart") is not None, spec.get("chartRef") is not None
    if has_chart == has_ref:
        raise at.error("needs exactly one of chart and chartRef")
    if has_ref:
        where = at.key("chartRef")
        return None, _reference(spec["chartRef"], where, namespace, CHART_REF_KINDS)
    where = at.key("chart")
    chart = decode.mapping(spec["chart"], where, required=("spec",))
    return chart_template(chart["spec"], where.key("spec"), namespace), None


def chart_template(value: object, at: Field, namespace: str) -> ChartTemplate:
    """A chart template (`chart`, `version`, `sourceRef`, `valuesFiles`, ...)."""
    spec = decode.mapping(value, at, required=("chart", "sourceRef"))
    return ChartTemplate(
        chart=decode.string(spec["chart"], at.key("chart"), empty=False),
        version=decode.optional(spec, "version", at, decode.text, "*"),
        source=_reference(spec["sourceRef"], at.key("sourceRef"), namespace, CHART_SOURCE_KINDS),
        values_files=decode.optional(spec, "valuesFiles", at, decode.strings, ()),
        ignore_missing_values_files=decode.optional(
            spec, "ignoreMissingValuesFiles", at, decode.boolean, False
        ),
    )


def _reference(value: object, at: Field, namespace: str, kinds: tuple[str, ...]) -> ObjectRef:
    data = decode.mapping(value, at, required=("kind", "name"))
    return ObjectRef(
        kind=decode.string(data["kind"], at.key("kind"), choices=kinds),
        namespace=decode.optional(data, "namespace", at, decode.string, "") or namespace,
        name=decode.string(data["name"], at.key("name"), empty=False),
    )


def _values_reference(value: object, at: Field) -> ValuesReference:
    data = decode.mapping(
        value,
        at,
        allowed=("kind", "name", "valuesKey", "targetPath", "optional", "literal"),
        required=("kind", "name"),
    )
    return ValuesReference(
        kind=decode.string(data["kind"], at.key("kind"), choices=("ConfigMap", "Secret")),
        name=decode.string(data["name"], at.key("name"), empty=False),
        values_key=decode.optional(data, "valuesKey", at, decode.string, "") or DEFAULT_VALUES_KEY,
        target_path=decode.optional(data, "targetPath", at, decode.string, ""),
        optional=decode.optional(data, "optional", at, decode.boolean, False),
        literal=decode.optional(data, "literal", at, decode.boolean, False),
    )


def _post_renderer(value: object, at: Field) -> KustomizePostRenderer:
    data = decode.mapping(value, at, allowed=("kustomize",))
    where = at.key("kustomize")
    kustomize = decode.mapping(data.get("kustomize") or {}, where, allowed=("patches", "images"))
    patches = decode.optional(kustomize, "patches", where, decode.sequence, _NO_LIST)
    images = decode.optional(kustomize, "images", where, decode.sequence, _NO_LIST)
    return KustomizePostRenderer(
        patches=tuple(
            _patch(item, where.key("patches").index(i)) for i, item in enumerate(patches)
        ),
        images=tuple(_image(item, where.key("images").index(i)) for i, item in enumerate(images)),
    )


_SELECTOR_FIELDS = ("group", "version", "kind", "name", "namespace")
_SELECTOR_KEYS = (*_SELECTOR_FIELDS, "labelSelector", "annotationSelector")


def _patch(value: object, at: Field) -> KustomizePatch:
    data = decode.mapping(value, at, allowed=("patch", "target"), required=("patch",))
    target = None
    if data.get("target") is not None:
        target = decode.string_map(data["target"], at.key("target"))
        decode.mapping(target, at.key("target"), allowed=_SELECTOR_KEYS)
    return KustomizePatch(decode.string(data["patch"], at.key("patch"), empty=False), target)


def _image(value: object, at: Field) -> Mapping[str, Any]:
    data = decode.mapping(value, at, allowed=("name", "newName", "newTag", "digest"))
    decode.required(data, "name", at, decode.string)
    for key in ("newName", "newTag", "digest"):
        decode.optional(data, key, at, decode.string, "")
    return data


def _crd_policy(spec: Mapping[str, Any], action: str, at: Field, default: str) -> str:
    section = decode.optional_map(spec, action, at)
    return decode.optional(
        section,
        "crds",
        at.key(action),
        lambda value, where: decode.string(value, where, choices=CRD_POLICIES),
        default,
    )


def decode_helm_repository(
    document: Mapping[str, Any], at: Field, ref: ObjectRef
) -> HelmRepository:
    """A HelmRepository: `spec.url`, `spec.type` (default or oci)."""
    spec = decode.mapping(document.get("spec"), at.key("spec"), required=("url",))
    url = decode.string(spec["url"], at.key("spec").key("url"), empty=False)
    kind = decode.optional(
        spec,
        "type",
        at.key("spec"),
        lambda value, where: decode.string(value, where, choices=("default", "oci")),
        "default",
    )
    oci = kind == "oci"
    if oci != url.startswith("oci://"):
        raise at.key("spec").key("url").error("must start with oci:// exactly when type is oci")
    if not oci and not url.startswith(("http://", "https://")):
        raise at.key("spec").key("url").error("must be an http:// or https:// URL")
    return HelmRepository(at.file, ref, url.rstrip("/"), oci)


def decode_oci_repository(document: Mapping[str, Any], at: Field, ref: ObjectRef) -> OciRepository:
    """An OCIRepository: `spec.url` and `spec.ref` (digest, semver, semverFilter, tag)."""
    where = at.key("spec")
    spec = decode.mapping(document.get("spec"), where, required=("url",))
    url = decode.string(spec["url"], where.key("url"), empty=False)
    if not url.startswith("oci://"):
        raise where.key("url").error("must start with oci://")
    reference = decode.optional_map(spec, "ref", where)
    at_ref = where.key("ref")
    decode.mapping(reference, at_ref, allowed=("digest", "semver", "semverFilter", "tag"))
    return OciRepository(
        file=at.file,
        ref=ref,
        url=url.rstrip("/"),
        tag=decode.optional(reference, "tag", at_ref, decode.string, "") or "latest",
        semver=decode.optional(reference, "semver", at_ref, decode.string, ""),
        semver_filter=decode.optional(reference, "semverFilter", at_ref, decode.string, ""),
        digest=decode.optional(reference, "digest", at_ref, decode.string, ""),
    )


def decode_git_repository(document: Mapping[str, Any], at: Field, ref: ObjectRef) -> GitRepository:
    """A GitRepository (its URL is only shown: charts come from this repository)."""
    spec = decode.mapping(document.get("spec"), at.key("spec"))
    url = decode.optional(spec, "url", at.key("spec"), decode.string, "")
    return GitRepository(at.file, ref, url)


def decode_helm_chart(document: Mapping[str, Any], at: Field, ref: ObjectRef) -> HelmChart:
    """A HelmChart object (its spec is a chart template)."""
    return HelmChart(
        at.file, ref, chart_template(document.get("spec"), at.key("spec"), ref.namespace)
    )


def decode_values_object(document: Mapping[str, Any], at: Field, ref: ObjectRef) -> ValuesObject:
    """A ConfigMap (`data`) or Secret (`data` base64, `stringData` over it)."""
    if document.get("sops") is not None:
        return ValuesObject(at.file, ref, {}, encrypted=True)
    if ref.kind == "ConfigMap":
        return ValuesObject(
            at.file, ref, decode.optional(document, "data", at, decode.string_map, _NO_TEXT)
        )
    return ValuesObject(at.file, ref, secret_data(document, at))


def secret_data(document: Mapping[str, Any], at: Field) -> dict[str, str]:
    """The data of a (decrypted) Secret document as text: `data` decoded, `stringData` over it."""
    data = decode.optional(document, "data", at, decode.string_map, _NO_TEXT)
    decoded = {key: _base64_text(text, at.key("data").key(key)) for key, text in data.items()}
    decoded.update(decode.optional(document, "stringData", at, decode.string_map, _NO_TEXT))
    return decoded


def _base64_text(text: str, at: Field) -> str:
    try:
        return base64.b64decode(text, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        raise at.error("must be base64 of UTF-8 text") from None
