"""Releases left unrendered: every input is the same on both sides of a diff.

A one-line pull request leaves almost every deployment's inputs alone. Those
deployments render the same on both sides, so on the fast path neither side
renders them: they are reported unchanged, with their chart, and without an
object count (docs/cache.md, "Not rendered"). That holds only while nothing
they could read besides their planned inputs changed: nested releases
(docs/nested.md) read the repository's Flux source objects and chart
directories, so a change to either renders every release as before.
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from reviewer import jail
from reviewer.changes import Changes
from reviewer.charts.archive import chart_yaml
from reviewer.errors import ReviewerError
from reviewer.model import RenderedRelease
from reviewer.plan import Plan, ReleasePlan
from reviewer.reuse import DeploymentKey, key_of

_FLUX_SOURCES = b"source.toolkit.fluxcd.io"
_CHART_FILE = "Chart.yaml"


def skippable(changes: Changes, roots: Sequence[Path], *, nested: bool) -> bool:
    """Whether unchanged deployments render alike on both sides without rendering them:
    no changed file is part of a chart or defines a Flux source (when `nested` expands)."""
    if not nested:
        return True
    return not any(
        _in_chart(name, changes.known) or _defines_source(roots, name) for name in changes.files
    )


def _in_chart(name: str, known: frozenset[str]) -> bool:
    """A chart archive, or a file of a directory holding a Chart.yaml (a nested release's
    GitRepository may name any chart directory of the repository)."""
    if name.endswith(".tgz") or name.rsplit("/", 1)[-1] == _CHART_FILE:
        return True
    directory = name
    while "/" in directory:
        directory = directory.rsplit("/", 1)[0]
        if f"{directory}/{_CHART_FILE}" in known:
            return True
    return False


def _defines_source(roots: Sequence[Path], name: str) -> bool:
    """Whether either side's file mentions Flux's source API group (unreadable: assume so)."""
    for root in roots:
        try:
            path = jail.resolve_file(root, name)
            if path.is_file() and _mentions(path, _FLUX_SOURCES):
                return True
        except (ReviewerError, OSError):
            return True
    return False


def _mentions(path: Path, marker: bytes) -> bool:
    """Whether the file holds `marker`, read in blocks (a pull request may add a huge file)."""
    tail = b""
    with path.open("rb") as stream:
        while block := stream.read(1 << 20):
            if marker in tail + block:
                return True
            tail = block[-(len(marker) - 1) :]
    return False


def compared(base: Plan, head: Plan) -> set[DeploymentKey]:
    """Deployments holding a sibling of a release the change adds (the same deployment and
    release name on another cluster, on both sides): the report compares the added
    release with its siblings' objects, so they are rendered."""
    old = {release.id for release in base.releases}
    both = {release.id for release in head.releases} & old
    added = {
        (release.id.deployment, release.id.release)
        for release in head.releases
        if release.id not in old
    }
    return {key_of(rid) for rid in both if (rid.deployment, rid.release) in added}


def stand_ins(
    releases: Iterable[ReleasePlan], keys: frozenset[DeploymentKey], root: Path
) -> tuple[RenderedRelease, ...]:
    """The releases of deployments `keys`, unrendered: identity, chart and labels only."""
    labels: dict[str, tuple[str, str]] = {}
    found = []
    for release in releases:
        if key_of(release.id) not in keys:
            continue
        chart, version = _chart_label(release, root, labels)
        found.append(
            RenderedRelease(
                id=release.id,
                namespace=release.namespace,
                chart=chart,
                version=version,
                labels=release.labels,
                reproduce=release.reproduce,
                helm_command=release.helm_command,
                identical=True,
            )
        )
    return tuple(found)


def _chart_label(
    release: ReleasePlan, root: Path, known: dict[str, tuple[str, str]]
) -> tuple[str, str]:
    """Chart name and version as rendering reports them: a local chart's Chart.yaml, else
    the reference's last part and the version asked for."""
    local = release.chart.local
    if local is None:
        return release.chart.ref.rsplit("/", 1)[-1], release.version or ""
    if local not in known:
        known[local] = _local_label(root, local) or (release.chart.ref, release.version or "")
    return known[local]


def _local_label(root: Path, local: str) -> tuple[str, str] | None:
    """(name, version) of a local chart directory or archive; None when unreadable."""
    try:
        path = root / local
        if path.is_dir():
            jail.resolve_file(root, f"{local}/{_CHART_FILE}")
        else:
            path = jail.resolve_file(root, local)
            if jail.archive_problem(path) is not None:
                return None
        metadata = chart_yaml(path, ref=local)
    except (ReviewerError, OSError, tarfile.TarError):
        return None
    name, version = metadata.get("name"), metadata.get("version")
    if not isinstance(name, str) or not isinstance(version, (str, int, float)):
        return None
    return name, str(version)
