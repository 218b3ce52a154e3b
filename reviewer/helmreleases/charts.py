"""Where a HelmRelease's chart comes from, as a `ChartRef` and version for the fetcher.

`spec.chart.spec` names a chart in a HelmRepository (HTTP index, or an OCI registry
with `type: oci`) or a path in a GitRepository; `spec.chartRef` names an
OCIRepository or a HelmChart object (whose spec is a chart template again).
Versions are resolved by reviewer/charts as source-controller resolves them: an
exact match first, else the highest version the Masterminds constraint allows,
`*` (the default) being the newest stable one. An OCIRepository's reference is its
digest, else its semver range, else its tag (default `latest`).

Charts from a GitRepository are read from the repository under review: Flux would
fetch that repository, which for a review is the checkout itself.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reviewer import jail, yamlio
from reviewer.charts.defaults import ChartDefaults, merge_maps
from reviewer.decode import Field
from reviewer.helmreleases.catalog import Catalog
from reviewer.helmreleases.objects import ChartTemplate, HelmRelease, ObjectRef
from reviewer.paths import inside
from reviewer.templates import ChartRef


@dataclass(frozen=True)
class ChartSource:
    """A release's chart for the fetcher, and the repository files that chose it."""

    chart: ChartRef
    version: str | None
    files: frozenset[str]
    defaults: ChartDefaults | None = None
    """`valuesFiles`: what replaces the chart's values.yaml."""


def chart_source(release: HelmRelease, catalog: Catalog, *, root: Path) -> ChartSource:
    """The chart `release` renders; raises `ConfigError` naming the field that fails."""
    spec = Field(release.file, ("spec",))
    if release.chart is not None:
        return _template(release.chart, catalog, root, spec.key("chart").key("spec"))
    assert release.chart_ref is not None
    at = spec.key("chartRef")
    ref = release.chart_ref
    if ref.kind == "OCIRepository":
        return _oci_repository(ref, catalog, at)
    if ref.kind == "HelmChart":
        chart = catalog.helm_charts.get(ref)
        if chart is None:
            raise _missing(ref, at)
        found = _template(chart.spec, catalog, root, Field(chart.file, ("spec",)))
        return replace(found, files=found.files | {chart.file})
    raise at.key("kind").error(f"{ref.kind} charts cannot be rendered offline")


def _template(template: ChartTemplate, catalog: Catalog, root: Path, at: Field) -> ChartSource:
    ref = template.source
    where = at.key("sourceRef")
    version = template.version if template.version not in ("", "*") else None
    if ref.kind == "HelmRepository":
        repository = catalog.helm_repositories.get(ref)
        if repository is None:
            raise _missing(ref, where)
        files = frozenset({repository.file})
        if repository.oci:
            chart = ChartRef(f"{repository.url}/{template.chart}")
        else:
            chart = ChartRef(f"{ref.name}/{template.chart}", repository=repository.url)
        defaults = None
        if template.values_files:
            defaults = ChartDefaults(template.values_files, template.ignore_missing_values_files)
        return ChartSource(chart, version, files, defaults)
    if ref.kind == "GitRepository":
        git = catalog.git_repositories.get(ref)
        if git is None:
            raise _missing(ref, where)
        local = inside(root, ".", template.chart, file=at.file, field=at.key("chart").name)
        read, defaults = _repository_defaults(template, root, at.key("valuesFiles"))
        return ChartSource(
            ChartRef(local, local=local), None, frozenset({git.file, local, *read}), defaults
        )
    raise where.key("kind").error(f"{ref.kind} charts cannot be rendered offline")


def _repository_defaults(
    template: ChartTemplate, root: Path, at: Field
) -> tuple[tuple[str, ...], ChartDefaults | None]:
    """`valuesFiles` of a chart in this repository: paths from the repository root, merged
    now (source-controller reads them from the GitRepository's root, not the chart's)."""
    if not template.values_files:
        return (), None
    merged: dict[str, Any] = {}
    read: list[str] = []
    for index, name in enumerate(template.values_files):
        path = inside(root, ".", name, file=at.file, field=at.index(index).name)
        if not (root / path).is_file():
            if template.ignore_missing_values_files:
                continue
            raise at.index(index).error(f"file '{path}' does not exist in the repository")
        merged = merge_maps(merged, yamlio.load_mapping(jail.read_text(root, path), source=path))
        read.append(path)
    return tuple(read), ChartDefaults(text=yamlio.dump(merged) if merged else "")


def _oci_repository(ref: ObjectRef, catalog: Catalog, at: Field) -> ChartSource:
    repository = catalog.oci_repositories.get(ref)
    if repository is None:
        raise _missing(ref, at)
    where = Field(repository.file, ("spec", "ref"))
    if repository.digest:
        raise where.key("digest").error("pulling a chart by digest is not supported; use a tag")
    if repository.semver_filter:
        raise where.key("semverFilter").error("is not supported")
    files = frozenset({repository.file})
    if repository.semver:
        return ChartSource(ChartRef(repository.url), repository.semver, files)
    return ChartSource(ChartRef(f"{repository.url}:{repository.tag}"), None, files)


def _missing(ref: ObjectRef, at: Field) -> Exception:
    return at.error(f"{ref} is not defined below the source's paths")
