"""The `flux` kind: Flux HelmReleases and Kustomizations below the source's paths
(docs/flux-helmreleases.md, docs/flux.md).

Each HelmRelease is planned as helm-controller would install it (reviewer/helmreleases)
and rendered by the render stage like every other release. Identities are
(source name, HelmRelease namespace, Helm release name). Each Flux Kustomization is
built as kustomize-controller builds it: its other objects are an object set
(source name, `<namespace>/<name>`, `kustomization`), its HelmReleases are planned
like those in files (reviewer/sources/flux_kustomization_plan.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from reviewer import decode as decoding
from reviewer import yamlio
from reviewer.errors import ReviewerError
from reviewer.helmreleases.objects import HELM_GROUP
from reviewer.helmreleases.planner import FluxInputs, plan_helmreleases
from reviewer.plan import Plan
from reviewer.sources import flux_kustomization as fks
from reviewer.sources.flux_kustomization_plan import plan_kustomizations
from reviewer.sources.flux_kustomization_spec import API_GROUP, is_kustomization
from reviewer.sources.protocol import PlanContext, SourceEntry

KIND = "flux"
OPTIONS = ("namespace",)
DEFAULT_NAMESPACE = "default"
_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Flux:
    """HelmReleases below `paths`; objects naming no namespace are in `namespace`."""

    name: str
    paths: tuple[str, ...]
    namespace: str = DEFAULT_NAMESPACE
    detected: bool = field(default=False, compare=False)
    """Detected, not declared: on a side of the change without its directories (a cluster
    the change adds or removes) it has no releases, where a declared one is an error."""

    def describe(self) -> str:
        """`flux 'clusters': clusters/`."""
        return f"{KIND} '{self.name}': {', '.join(path + '/' for path in self.paths)}"

    def plan(self, context: PlanContext) -> Plan:
        """Every selected HelmRelease and Kustomization, planned (the twin plan with secret
        values redacted, and no object sets)."""
        if self.detected and not any((context.root / path).is_dir() for path in self.paths):
            return Plan(releases=())
        built = plan_kustomizations(self.name, self.paths, context, namespace=self.namespace)
        planned = plan_helmreleases(
            FluxInputs(
                root=context.root,
                source=self.name,
                paths=self.paths,
                secrets=context.secrets,
                decoder=context.decoder,
                twin=context.twin,
                namespace=self.namespace,
                display_root=context.display_root,
                select=context.select.location,
                documents=built.documents,
                exclude=built.owned,
                origins=built.origins,
            )
        )
        return Plan(
            releases=planned.releases,
            errors=(*planned.errors, *built.errors),
            objects=built.objects,
            replacements=built.replacements,
            inputs=built.inputs,
        )


def decode(entry: SourceEntry) -> Flux:
    """`paths: [<directory>, ...]`; option `namespace` (default `default`)."""
    entry.check_options(OPTIONS)
    if not entry.paths:
        raise entry.at.key("paths").error("a flux source needs at least one directory")
    namespace = decoding.optional(
        entry.options,
        "namespace",
        entry.at,
        lambda value, at: decoding.string(value, at, empty=False),
        DEFAULT_NAMESPACE,
    )
    return Flux(entry.name, entry.paths, namespace)


def detect(root: Path) -> Sequence[Flux]:
    """One source per top-level directory holding a HelmRelease or Flux Kustomization file.

    Where a directory's Kustomizations sit in several subdirectories (`clusters/<cluster>/`,
    as `flux bootstrap` lays out a repository of several clusters), one source per
    subdirectory, named after it. A directory some Kustomization builds from
    (`apps/`) is reviewed through that Kustomization, not as a source of its own.
    """
    tops = [
        child.name
        for child in sorted(root.iterdir())
        if child.is_dir() and not child.name.startswith(".") and holds_helmreleases(child)
    ]
    found: list[Flux] = []
    for top in tops:
        clusters = _cluster_directories(root, top)
        if len(clusters) < 2:
            found.append(Flux(top, (top,), detected=True))
        else:
            found.extend(
                Flux(cluster, (f"{top}/{cluster}",), detected=True) for cluster in clusters
            )
    built = built_directories(root, found)
    kept = [source for source in found if _top(source.paths[0]) not in built]
    names = [source.name for source in kept]
    # Two directories with a cluster of the same name: the path tells them apart.
    return [
        source if names.count(source.name) == 1 else replace(source, name=source.paths[0])
        for source in kept
    ]


def added_on(root: Path, sources: Sequence[object]) -> tuple[Flux, ...]:
    """The flux sources detected in the checkout at `root` (the other side of a change)
    that `sources`, detected on the base side, lack: a cluster directory the change adds
    is reviewed, not silently left out. Only next to flux sources detected there."""
    if not any(isinstance(source, Flux) and source.detected for source in sources):
        return ()
    names = {getattr(source, "name", "") for source in sources}
    return tuple(source for source in detect(root) if source.name not in names)


def built_directories(root: Path, sources: Sequence[object]) -> set[str]:
    """The top-level directories the Flux Kustomizations of `sources` build from, outside
    the sources' own directories: reviewed through them, not as sources of their own."""
    built: set[str] = set()
    for source in sources:
        if not isinstance(source, Flux):
            continue
        paths = {
            _top(result.kustomization.path)
            for result in fks.find_in_files(root, source.paths)
            if result.error is None
        }
        built |= paths - {_top(path) for path in source.paths}
    return built - {"", "."}


def claimed_directories(root: Path, sources: Sequence[object]) -> set[str]:
    """Top-level directories the flux `sources` review: theirs, and those their
    Kustomizations build from (not also to be detected as another kind)."""
    own = {_top(path) for source in sources if isinstance(source, Flux) for path in source.paths}
    return own | built_directories(root, sources)


def _cluster_directories(root: Path, top: str) -> list[str]:
    """The subdirectories of `top` holding Flux Kustomization files."""
    return sorted(
        {
            result.file.split("/")[1]
            for result in fks.find_in_files(root, [top])
            if result.file.count("/") >= 2
        }
    )


def _top(path: str) -> str:
    return path.removeprefix("./").strip("/").split("/")[0]


def holds_helmreleases(directory: Path) -> bool:
    """Whether any YAML file below `directory` (outside charts and hidden ones) holds a
    HelmRelease or a Flux Kustomization."""
    if (directory / "Chart.yaml").is_file():
        return False
    for child in sorted(directory.iterdir()):
        if child.name.startswith("."):
            continue
        if child.is_dir() and not child.is_symlink():
            if holds_helmreleases(child):
                return True
        elif child.suffix in _SUFFIXES and child.is_file() and _has_helmrelease(child):
            return True
    return False


def _has_helmrelease(path: Path) -> bool:
    """Whether the file holds a HelmRelease or a Flux Kustomization (which may build some)."""
    try:
        text = path.read_text(encoding="utf-8")
        if "HelmRelease" not in text and API_GROUP not in text:
            return False
        documents = yamlio.load_documents(text, source=path.name)
    except (ReviewerError, OSError, UnicodeDecodeError):
        return False
    return any(
        is_kustomization(document)
        or (
            document.get("kind") == "HelmRelease"
            and str(document.get("apiVersion", "")).startswith(f"{HELM_GROUP}/")
        )
        for document in documents
    )
