"""SOPS-encrypted Secrets among a Flux Kustomization's built objects, decrypted as
kustomize-controller decrypts them (when `spec.decryption` is set), and the texts of a
decrypted Secret that must be redacted wherever substitution copies them."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any, Protocol

from reviewer.errors import ConfigError
from reviewer.sources.flux_kustomization_spec import API_GROUP, FluxKustomization

DECRYPT_KEY = f"{API_GROUP}/decrypt"


class ObjectDecryptor(Protocol):
    """Decrypts a SOPS-encrypted object (satisfied by `sops.SopsDecoder`)."""

    def decrypt_object(self, document: Mapping[str, Any], *, source: str) -> dict[str, Any]:
        """The object with its values decrypted."""
        ...


def is_encrypted_secret(document: Mapping[str, Any]) -> bool:
    """A Secret with a top-level `sops` field, as kustomize-controller recognises one."""
    return (
        document.get("kind") == "Secret"
        and document.get("apiVersion") == "v1"
        and "sops" in document
    )


def decrypted(
    kustomization: FluxKustomization,
    document: dict[str, Any],
    decryptor: ObjectDecryptor | None,
) -> dict[str, Any]:
    """A built object decrypted when it is an encrypted Secret (and not opted out)."""
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


def secret_texts(secret: Mapping[str, Any]) -> list[str]:
    """A Secret's values: `stringData`, and `data` both encoded and decoded."""
    texts = [str(value) for value in (secret.get("stringData") or {}).values()]
    for value in (secret.get("data") or {}).values():
        texts.append(str(value))
        try:
            texts.append(base64.b64decode(str(value), validate=True).decode("utf-8"))
        except (binascii.Error, UnicodeDecodeError):
            continue
    return texts
