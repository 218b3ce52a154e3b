"""YAML documents that are not Kubernetes objects (BOSH deployment manifests and others).

They are compared path by path like any object. A BOSH manifest (`name` with
`instance_groups`, `releases` or `stemcells`) is identified by its `name`; list
items are keyed by `name`, stemcells by `alias`, as BOSH ops files address them
(`/instance_groups/name=web/instances`). `((variables))` are kept as written:
they are filled by the BOSH director or CredHub, never by the reviewer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reviewer import yamlio
from reviewer.model import Resource, ResourceKey

BOSH_KIND = "BoshDeployment"
DOCUMENT_KIND = "Document"
_BOSH_FIELDS = ("instance_groups", "releases", "stemcells")
_LIST_KEYS = ("name", "key", "id")


def is_kubernetes(document: Mapping[str, Any]) -> bool:
    """True for a Kubernetes object (it has both `apiVersion` and `kind`)."""
    return bool(document.get("apiVersion")) and bool(document.get("kind"))


def is_bosh(document: Mapping[str, Any]) -> bool:
    """True for a BOSH deployment manifest."""
    name = document.get("name")
    return isinstance(name, str) and any(key in document for key in _BOSH_FIELDS)


def document(body: Mapping[str, Any], *, source: str, index: int) -> Resource:
    """A non-Kubernetes document as a resource: a BOSH manifest by name, else by position."""
    if is_bosh(body):
        key = ResourceKey("", BOSH_KIND, "", str(body["name"]))
    else:
        key = ResourceKey("", DOCUMENT_KIND, "", f"document-{index + 1}")
    return Resource(key=key, api_version="", body=yamlio.normalize(dict(body)), source=source)


def list_keys(path: tuple[object, ...]) -> tuple[str, ...]:
    """Fields that key a list's items at `path` of a BOSH manifest: `alias` for stemcells."""
    if path == ("stemcells",):
        return ("alias", *_LIST_KEYS)
    return _LIST_KEYS
