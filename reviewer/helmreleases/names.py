"""A HelmRelease's Helm release name and namespace, as helm-controller computes them."""

from __future__ import annotations

import hashlib

from reviewer.helmreleases.objects import HelmRelease

MAX_RELEASE_NAME = 53
_KEPT = 40
_HASH = 12


def shorten(name: str) -> str:
    """helm-controller's ShortenName: past 53 characters, the first 40, `-` and the first
    12 hex digits of the name's sha256."""
    if len(name) <= MAX_RELEASE_NAME:
        return name
    return f"{name[:_KEPT]}-{hashlib.sha256(name.encode()).hexdigest()[:_HASH]}"


def release_name(release: HelmRelease) -> str:
    """`spec.releaseName`, else `[targetNamespace-]name`, shortened."""
    if release.release_name:
        return shorten(release.release_name)
    prefix = f"{release.target_namespace}-" if release.target_namespace else ""
    return shorten(prefix + release.name)


def release_namespace(release: HelmRelease) -> str:
    """The namespace the chart renders into: `spec.targetNamespace`, else the release's own."""
    return release.target_namespace or release.namespace
