"""One Flux Kustomization (kustomize.toolkit.fluxcd.io/v1), built as kustomize-controller builds it.

The order is the controller's: kustomize build of `spec.path` with the spec's
fields written into the kustomization (`kustomize_flux.build_flux`), then per object
SOPS decryption (when `spec.decryption` is set, `flux_kustomization_sops`) and post-build
substitution (`flux_kustomization_vars`), then the owner labels
`kustomize.toolkit.fluxcd.io/name|namespace` and last `commonMetadata`.
Strict substitution is the default, as in kustomize-controller 1.9.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reviewer import kustomize_flux, yamlio
from reviewer.errors import ConfigError
from reviewer.kustomize import DEFAULT_TIMEOUT
from reviewer.redact import redact_tree, replacement_map
from reviewer.sources.flux_kustomization_sops import ObjectDecryptor, decrypted, secret_texts
from reviewer.sources.flux_kustomization_spec import API_GROUP, FluxKustomization
from reviewer.sources.flux_kustomization_vars import (
    ObjectLookup,
    Variables,
    load_variables,
    substitute,
)

OWNER_NAME_LABEL = f"{API_GROUP}/name"
OWNER_NAMESPACE_LABEL = f"{API_GROUP}/namespace"


@dataclass(frozen=True)
class Built:
    """A Kustomization's objects, and {secret: redacted} for the secrets they were built with."""

    objects: tuple[dict[str, Any], ...]
    replacements: Mapping[str, str] = field(default_factory=dict)
    """Decrypted SOPS Secrets' values and Secret-sourced variables, which substitution may
    have copied into any object (a ConfigMap, a HelmRelease's values)."""
    files: frozenset[str] = frozenset()
    """The repository files the build read."""


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
        plain = decrypted(kustomization, document, decryptor)
        result = plain
        if kustomization.post_build is not None:
            result = substitute(
                plain,
                variables.values,
                always=kustomization.post_build.always,
                strict=strict,
                source=kustomization.source,
            )
        if plain is not document:
            # Both forms: the decrypted value, and the one substitution made of it.
            secrets.extend([*secret_texts(plain), *secret_texts(result)])
        built.append(with_metadata(kustomization, result))
    unique = sorted({text for text in secrets if text})
    return Built(tuple(built), replacement_map(unique, redact_tree(unique)), tree.files)


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
