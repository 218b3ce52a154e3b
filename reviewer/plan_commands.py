"""Commands a planned release shows to reproduce it locally: `reviewer render`, `helm template`."""

from __future__ import annotations

import functools
import posixpath

from reviewer import capabilities as capabilities_mod
from reviewer.discover import Cluster, DeploymentDir
from reviewer.postrender import Patches
from reviewer.templates import ReleaseSpec
from reviewer.visible import shell_word

# Every release of a fleet quotes the same few words (root, cluster, flags, chart): quoting
# each once instead of per release was a measurable part of planning 10,000 releases.
_quote = functools.lru_cache(maxsize=65536)(shell_word)


def _join(argv: list[str]) -> str:
    """`shell_words`, with each word's quoting remembered."""
    return " ".join([_quote(word) for word in argv])


@functools.lru_cache(maxsize=4096)
def render_command(display_root: str, cluster: str, deployment: str | None = None) -> str:
    """`out=$(mktemp -d) && reviewer render ... --out "$out"`: renders just this deployment
    (or, without one, this cluster or source) locally, into a new private directory
    (POSIX shells)."""
    argv = ["reviewer", "render", display_root, "--cluster", cluster]
    if deployment is not None:
        argv += ["--deployment", deployment]
    # Not a fixed name in the shared temporary directory: another user of the machine could
    # own it (and read what is written there, or make the render refuse to write). `&&`: a
    # failing mktemp must not leave `--out ""`, the current directory.
    return f'out=$(mktemp -d) && {_join(argv)} --out "$out"'


def helm_command(
    display_root: str,
    cluster: Cluster,
    deployment: DeploymentDir,
    release: ReleaseSpec,
    capabilities: capabilities_mod.Capabilities,
    patches: Patches,
) -> str | None:
    """`values=$(mktemp) && reviewer values ... > "$values" && helm template ... -f "$values"`
    for this release."""
    chart = _helm_chart_args(release, display_root)
    if chart is None or patches:
        return None  # patches are applied after Helm: no one helm command does that
    values = _join(
        [
            "reviewer",
            "values",
            display_root,
            "--cluster",
            cluster.path,
            "--deployment",
            deployment.name,
            "--release",
            release.name,
            "--no-redact",
        ]
    )
    helm = _join(
        [
            "helm",
            "template",
            release.name,
            *chart,
            "--namespace",
            release.namespace,
            *_capability_args(capabilities),
        ]
    )
    # A new private file, not a fixed one in /tmp that another user of the machine may
    # own or read (the values are unredacted); not a pipe, so a failing `reviewer values`
    # stops there instead of rendering the chart's defaults.
    return f'values=$(mktemp) && {values} > "$values" && {helm} -f "$values"'


def _helm_chart_args(release: ReleaseSpec, display_root: str) -> list[str] | None:
    """The chart arguments of `helm template` for the release's chart reference."""
    chart = release.chart
    version = ["--version", release.version] if release.version else []
    if chart.local is not None:
        return [posixpath.join(display_root, chart.local)]
    if chart.repository is None:
        return None
    if chart.repository.startswith("oci://"):
        if chart.ref.startswith("oci://"):
            return [chart.ref, *version]
        name = chart.ref.split("/", 1)[1]
        return [f"{chart.repository.rstrip('/')}/{name}", *version]
    return [chart.ref.split("/", 1)[1], "--repo", chart.repository, *version]


def _capability_args(capabilities: capabilities_mod.Capabilities) -> list[str]:
    args = ["--kube-version", capabilities.kube_version] if capabilities.kube_version else []
    if capabilities.api_versions:
        args += ["--api-versions", ",".join(capabilities.api_versions)]
    return args
