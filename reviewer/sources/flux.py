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
from dataclasses import dataclass
from pathlib import Path

from reviewer import decode as decoding
from reviewer import yamlio
from reviewer.errors import ReviewerError
from reviewer.helmreleases.objects import HELM_GROUP
from reviewer.helmreleases.planner import FluxInputs, plan_helmreleases
from reviewer.plan import Plan
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

    def describe(self) -> str:
        """`flux 'clusters': clusters/`."""
        return f"{KIND} '{self.name}': {', '.join(path + '/' for path in self.paths)}"

    def plan(self, context: PlanContext) -> Plan:
        """Every selected HelmRelease and Kustomization, planned (the twin plan with secret
        values redacted, and no object sets)."""
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
    """One source per top-level directory holding a HelmRelease or Flux Kustomization file."""
    return [
        Flux(child.name, (child.name,))
        for child in sorted(root.iterdir())
        if child.is_dir() and not child.name.startswith(".") and holds_helmreleases(child)
    ]


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
