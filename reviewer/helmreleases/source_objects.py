"""The objects a HelmRelease reads, decoded once: chart sources and values objects.

The sources its chart comes from (`HelmRepository`, `OCIRepository`,
`GitRepository`, `HelmChart`) and the `ConfigMap`s and `Secret`s its
`valuesFrom` names. A bad field raises `ConfigError` naming the file, the field
and what is allowed, never the value.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reviewer import decode
from reviewer.decode import Field
from reviewer.helmreleases.objects import ChartTemplate, ObjectRef, chart_template

_NO_TEXT: dict[str, str] = {}  # never mutated


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
