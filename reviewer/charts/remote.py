"""Where a remote chart lives: a `ChartRef` as a repository or registry and a chart name."""

from __future__ import annotations

from dataclasses import dataclass

from reviewer.templates import ChartRef


@dataclass(frozen=True)
class Remote:
    """A chart in a repository or registry, and how the release named it."""

    ref: str  # as written, for messages
    oci: bool
    source: str  # repository URL, or `oci://host/path` without the chart name
    name: str
    repository: str | None = None  # `repositories:` name, for credentials
    tag: str | None = None  # version written into an oci:// reference

    @property
    def oci_ref(self) -> str:
        """`oci://host/path/name`, the reference a registry client pulls."""
        return f"{self.source}/{self.name}"


def remote_for(chart: ChartRef) -> Remote:
    """Where a release's remote `chart` lives."""
    url = chart.repository or ""
    if chart.ref.startswith("oci://"):
        path, _, last = chart.ref[len("oci://") :].rstrip("/").rpartition("/")
        name, _, tag = last.partition(":")
        return Remote(chart.ref, True, f"oci://{path}", name, tag=tag or None)
    repository, _, name = chart.ref.partition("/")
    if url.startswith(("http://", "https://")):
        return Remote(chart.ref, False, url.rstrip("/"), name, repository)
    # helmfile writes `oci: true` repositories without a scheme.
    source = url.rstrip("/") if url.startswith("oci://") else f"oci://{url.rstrip('/')}"
    return Remote(chart.ref, True, source, name, repository)


def dependency_remote(ref: str, repository: str, name: str) -> Remote:
    """Where a dependency listed with a `repository:` URL lives."""
    return Remote(ref, repository.startswith("oci://"), repository.rstrip("/"), name)
