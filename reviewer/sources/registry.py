"""Source kinds by name, and the sources of a repository: declared or detected."""

from __future__ import annotations

from pathlib import Path

from reviewer.discover import Layout
from reviewer.sources import flux, generated, hierarchy, kraan_kind, manifests
from reviewer.sources.protocol import Source, SourceKind

kinds: dict[str, SourceKind] = {
    hierarchy.KIND: hierarchy,
    manifests.KIND: manifests,
    generated.KIND: generated,
    flux.KIND: flux,
    kraan_kind.KIND: kraan_kind,
}
"""Every kind a `.reviewer.yaml` source may name."""


def detect(root: Path, layout: Layout) -> tuple[Source, ...]:
    """The sources of a repository without declared ones.

    The hierarchy when its definitions root exists or the layout was set (in
    `.reviewer.yaml` or on the command line), as before sources existed; else every
    detected kind; else the hierarchy, whose discovery says what is missing.
    """
    if layout != Layout() or (root / layout.definitions).is_dir():
        return (hierarchy.Hierarchy(layout=layout),)
    found = [source for kind in kinds.values() for source in kind.detect(root)]
    # A directory of HelmReleases is a flux source, not also plain manifests.
    claimed = {path for source in found if isinstance(source, flux.Flux) for path in source.paths}
    claimed |= flux.claimed_directories(root, found)  # also what their Kustomizations build
    found = [
        s for s in found if not (isinstance(s, manifests.Manifests) and set(s.paths) & claimed)
    ]
    # Kraan layers' directories hold HelmReleases too: they are the kraan source's.
    layered = {
        path
        for source in found
        if isinstance(source, kraan_kind.Kraan)
        for path in kraan_kind.claimed(root, source)
    }
    found = [s for s in found if isinstance(s, kraan_kind.Kraan) or not _overlaps(s, layered)]
    return tuple(found) or (hierarchy.Hierarchy(layout=layout),)


def _overlaps(source: Source, directories: set[str]) -> bool:
    """Whether a flux or manifests source's paths hold, or lie in, one of `directories`."""
    if not isinstance(source, (flux.Flux, manifests.Manifests)):
        return False
    return any(
        path == directory or directory.startswith(path + "/") or path.startswith(directory + "/")
        for path in source.paths
        for directory in directories
    )


def describe(sources: tuple[Source, ...], *, detected: bool) -> str:
    """`sources (detected): manifests 'apps': apps/; ...`."""
    how = "detected" if detected else "from .reviewer.yaml"
    return f"sources ({how}): " + "; ".join(source.describe() for source in sources)
