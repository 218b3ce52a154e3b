"""The core data every stage shares: release and object identities, rendered releases, snapshots.

This module sits at the bottom: planning, rendering, snapshots on disk, diffing
and reporting all import it, and it imports none of them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from reviewer import decode, yamlio
from reviewer.errors import ConfigError

# `<chart>/crds/x.yaml` or `<chart>/charts/<sub>/crds/x.yaml`; a templated
# `templates/crds/x.yaml` is an ordinary template.
_CRDS_DIR = re.compile(r"^[^/]+(?:/charts/[^/]+)*/crds/")
WHOLE_DEPLOYMENT = "*"
"""Release name of a failure that hit a deployment before its releases were known."""
LAYER_LABEL = "kraan/layer"
"""The release label naming the Kraan layer a release belongs to: reports group releases
by it, and a release whose layer differs between the sides moved between layers."""


class ReleaseId(NamedTuple):
    """A release's identity: (cluster path, deployment name, release name); ordered by
    cluster, then deployment, then release."""

    # A tuple, not a dataclass: identities key every per-release map of a review and are
    # sorted again and again (hundreds of thousands of hashes and comparisons in a large
    # fleet), which a tuple does in C.
    cluster: str
    deployment: str
    release: str

    def __str__(self) -> str:
        return f"{self.cluster}/{self.deployment}/{self.release}"


@dataclass(frozen=True, order=True)
class ResourceKey:
    """A rendered object's identity: (API group, kind, namespace, name)."""

    group: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        kind = f"{self.kind}.{self.group}" if self.group else self.kind
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{kind} {where}{self.name}"


@dataclass(frozen=True)
class Resource:
    """One rendered Kubernetes object, normalized (stable key order)."""

    key: ResourceKey
    api_version: str
    body: dict[str, Any]
    source: str = ""

    @classmethod
    def from_body(cls, body: dict[str, Any], *, source: str = "") -> Resource:
        """Build a resource from a parsed manifest; the body is normalized. Identity fields
        of the wrong type (`metadata: 5`, `kind: [Service]`) are a `ConfigError` naming
        `source`: Kubernetes refuses such an object too."""
        metadata = body.get("metadata") or {}
        api_version, kind = _unset(body.get("apiVersion")), _unset(body.get("kind"))
        name = namespace = None
        if isinstance(metadata, dict):
            name, namespace = _unset(metadata.get("name")), _unset(metadata.get("namespace"))
        if not all(type(field) is str for field in (api_version, kind, name, namespace)):
            raise _identity_error(body, source)  # the checks that name the field, only here
        assert isinstance(name, str) and isinstance(namespace, str)  # for the type checker
        assert isinstance(api_version, str) and isinstance(kind, str)
        group = api_version.rpartition("/")[0] if "/" in api_version else ""
        key = ResourceKey(group=group, kind=kind, namespace=namespace, name=name)
        return cls(key=key, api_version=api_version, body=yamlio.normalize(body), source=source)

    @property
    def from_crds(self) -> bool:
        """Shipped in a chart's crds/ directory (rendered as with --include-crds)."""
        return _CRDS_DIR.match(self.source) is not None

    def text(self) -> str:
        """The normalized YAML of this object."""
        return yamlio.dump(self.body)


def _unset(value: object) -> object:
    return "" if value is None else value


def _identity_error(body: dict[str, Any], source: str) -> ConfigError:
    """The error for the first identity field of `body` with the wrong type."""
    at = decode.Field(source or "object")
    metadata = body.get("metadata") or {}
    if not isinstance(metadata, dict):
        return at.key("metadata").error("must be a map")
    for fields, name, where in (
        (body, "apiVersion", at),
        (body, "kind", at),
        (metadata, "namespace", at.key("metadata")),
        (metadata, "name", at.key("metadata")),
    ):
        value = fields.get(name)
        if isinstance(value, bool):  # `namespace: n` or `on`, unquoted: YAML 1.1, as kubectl
            return where.key(name).error("must be a string, not a boolean", hint=_QUOTE_IT)
        if value is not None and not isinstance(value, str):
            return where.key(name).error("must be a string")
    raise AssertionError("no field of the wrong type")


_QUOTE_IT = "YAML reads y, n, yes, no, on, off, true and false unquoted as booleans: quote it"


@dataclass(frozen=True)
class RenderedRelease:
    """The outcome of rendering one release: its objects, or the error that stopped it."""

    id: ReleaseId
    namespace: str
    chart: str = ""
    version: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    resources: tuple[Resource, ...] = ()
    error: str | None = None
    reproduce: str | None = None
    helm_command: str | None = None
    identical: bool = False
    """Not rendered: every input equals the other side's (docs/cache.md, "Not rendered");
    its objects are unknown and the same on both sides."""

    @property
    def status(self) -> str:
        """`rendered`, `error`, or `identical` (not rendered, see `identical`)."""
        if self.error is not None:
            return "error"
        return "identical" if self.identical else "rendered"


@dataclass(frozen=True)
class Snapshot:
    """Every release of one side of a review, in identity order."""

    releases: tuple[RenderedRelease, ...] = ()
    errors: tuple[str, ...] = ()
    """Failures that belong to no single release."""
    warnings: tuple[str, ...] = ()
    """Things the reader must know, e.g. that secrets were not decrypted."""

    def by_id(self) -> dict[ReleaseId, RenderedRelease]:
        """Releases keyed by identity."""
        return {release.id: release for release in self.releases}

    @property
    def failed(self) -> list[RenderedRelease]:
        """Releases that did not render."""
        return [release for release in self.releases if release.error is not None]
