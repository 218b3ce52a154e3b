"""Helm's `.Capabilities` per release: Kubernetes version and extra API versions.

A cluster declares them once in `cluster.capabilities.yaml` beside its
`cluster.values.yaml`; a template's top-level `kubeVersion`/`apiVersions` and a
release's own fields win over the cluster's, field by field (a release's
`apiVersions` list replaces the defaults, as in helmfile).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reviewer import decode, jail, yamlio

CLUSTER_FILE = "cluster.capabilities.yaml"
_KEYS = ("kubeVersion", "apiVersions")
# What Helm's --kube-version accepts: a semantic version, with or without the leading v.
_KUBE_VERSION = re.compile(r"^v?([0-9]+\.[0-9]+)(\.[0-9]+)?([-+][0-9A-Za-z.+-]+)?$")
_API_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]*(/[A-Za-z0-9.-]+){0,2}$")


@dataclass(frozen=True)
class Capabilities:
    """What `.Capabilities` a release renders with; None/empty leaves the engine's default."""

    kube_version: str | None = None
    api_versions: tuple[str, ...] | None = None

    def under(self, top: Capabilities) -> Capabilities:
        """These capabilities with every field `top` sets taken from `top`."""
        return Capabilities(
            kube_version=top.kube_version or self.kube_version,
            api_versions=top.api_versions if top.api_versions is not None else self.api_versions,
        )


DEFAULT = Capabilities()


def decode_fields(data: dict[str, Any], at: decode.Field) -> Capabilities:
    """`kubeVersion` and `apiVersions` of a release, template or capabilities file."""
    return Capabilities(
        kube_version=decode.optional(data, "kubeVersion", at, kube_version, None),
        api_versions=decode.optional(data, "apiVersions", at, api_versions, None),
    )


def kube_version(value: object, at: decode.Field) -> str:
    """A Kubernetes version as Helm's `--kube-version` takes it (`v1.29.3`, `1.29`)."""
    text = decode.text(value, at)
    found = _KUBE_VERSION.match(text)
    if not found:
        raise at.error("must be a Kubernetes version such as v1.29.3")
    # Written out in full: the SDK keeps `v1.30` as given, the binary makes it `v1.30.0`.
    major_minor, patch, suffix = found.group(1), found.group(2), found.group(3) or ""
    return f"v{major_minor}{patch or '.0'}{suffix}"


def api_versions(value: object, at: decode.Field) -> tuple[str, ...]:
    """API versions as Helm's `--api-versions` takes them (`group/version[/Kind]`)."""
    found = decode.strings(value, at)
    for index, item in enumerate(found):
        if not _API_VERSION.match(item):
            raise at.index(index).error("must be an API version such as monitoring.coreos.com/v1")
    return found


def load_cluster(root: Path, cluster_dir: str) -> tuple[Capabilities, str | None]:
    """The capabilities declared in a cluster directory, and the file (None when absent)."""
    source = f"{cluster_dir}/{CLUSTER_FILE}"
    path = root / source
    if not path.exists() and not path.is_symlink():
        return DEFAULT, None
    jail.resolve_file(root, source)  # refuses escaping symlinks and special files
    top = decode.Field(source)
    data = decode.mapping(yamlio.read_mapping(path, source=source), top, allowed=_KEYS)
    return decode_fields(data, top), source
