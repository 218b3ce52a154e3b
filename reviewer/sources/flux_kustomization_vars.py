"""Post-build substitution of a Flux Kustomization's objects, as kustomize-controller does it.

Substitution variables come from `substituteFrom` in order (later wins; ConfigMaps and
Secrets found in the repository by the caller's lookup) and then the inline `substitute`;
newlines are dropped from values. Values read from Secrets are remembered for redaction.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reviewer import yamlio
from reviewer.errors import ConfigError
from reviewer.sources.envsubst import SubstitutionError, expand
from reviewer.sources.flux_kustomization_sops import ObjectDecryptor, is_encrypted_secret
from reviewer.sources.flux_kustomization_spec import API_GROUP, FluxKustomization, PostBuild

SUBSTITUTE_KEY = f"{API_GROUP}/substitute"
_VARIABLE_NAME = re.compile(r"^[_A-Za-z][_A-Za-z0-9]*$")

# (kind, namespace, name) -> the ConfigMap or Secret found in the repository, or None.
ObjectLookup = Callable[[str, str, str], Mapping[str, Any] | None]

# (kind, namespace, name) of a ConfigMap or Secret -> (file, object).
VariableObjects = Mapping[tuple[str, str, str], tuple[str, Mapping[str, Any]]]


@dataclass(frozen=True)
class Variables:
    """Substitution variables, and which values came from Secrets."""

    values: Mapping[str, str]
    secret_values: tuple[str, ...] = ()


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


def lookup_in(objects: VariableObjects) -> ObjectLookup:
    """The `substituteFrom` lookup over the repository's ConfigMaps and Secrets."""

    def lookup(kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        found = objects.get((kind, namespace, name))
        return None if found is None else found[1]

    return lookup


def variable_objects(
    documents: Sequence[tuple[str, dict[str, Any]]],
) -> dict[tuple[str, str, str], tuple[str, Mapping[str, Any]]]:
    """(kind, namespace, name) of each ConfigMap and Secret among (file, object) pairs →
    (file, object)."""
    objects: dict[tuple[str, str, str], tuple[str, Mapping[str, Any]]] = {}
    for source, document in documents:
        if document.get("apiVersion") == "v1" and document.get("kind") in ("ConfigMap", "Secret"):
            metadata = document.get("metadata") or {}
            key = (document["kind"], metadata.get("namespace") or "default", metadata.get("name"))
            objects.setdefault((str(key[0]), str(key[1]), str(key[2])), (source, document))
    return objects


def substitute_from_files(
    kustomization: FluxKustomization, objects: VariableObjects
) -> frozenset[str]:
    """The files of the `substituteFrom` objects `kustomization` read: inputs of its build."""
    references = kustomization.post_build.substitute_from if kustomization.post_build else ()
    return frozenset(
        objects[key][0]
        for key in ((r.kind, kustomization.namespace, r.name) for r in references)
        if key in objects
    )
