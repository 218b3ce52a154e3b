"""Flux objects as helm-controller reads them, decoded once.

`HelmRelease` (helm.toolkit.fluxcd.io/v2) and its parts; the sources its chart
comes from and the objects its `valuesFrom` names are in
reviewer/helmreleases/source_objects.py. A bad field raises
`ConfigError` naming the file, the field and what is allowed, never the value.
"""

from __future__ import annotations

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
    tests_enabled: bool = False
    """`spec.test.enable`: helm-controller runs the chart's test hooks after a release."""

    @property
    def ref(self) -> ObjectRef:
        """This release as a reference (for messages)."""
        return ObjectRef("HelmRelease", self.namespace, self.name)


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
        tests_enabled=decode.optional(
            decode.optional_map(spec, "test", spec_at),
            "enable",
            spec_at.key("test"),
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
