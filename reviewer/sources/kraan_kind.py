"""The `kraan` kind: the HelmReleases of Kraan layers (docs/kraan.md).

The AddonsLayers found below the source's paths name the layers' directories
(reviewer/sources/kraan.py reads them as Kraan's layer applier does). Every
layer's HelmReleases, labelled as Kraan labels them, are planned together with
every layer's HelmRepositories and the GitRepositories the layers read (this
repository, so a chart may be a path in it) by the flux planner, so identities are those of
the `flux` kind (source name, HelmRelease namespace, Helm release name) and the
layer is the release label `kraan/layer`: a HelmRelease that changes layer keeps
its identity, and the reports show the move. A HelmRelease that several layers
include is an error for that release alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from reviewer import kustomize, yamlio
from reviewer.decode import Field
from reviewer.errors import ReviewerError
from reviewer.helmreleases import names, objects
from reviewer.helmreleases.planner import FluxInputs, plan_helmreleases
from reviewer.model import LAYER_LABEL, WHOLE_DEPLOYMENT
from reviewer.plan import Plan, PlanError, ReleasePlan
from reviewer.plan_commands import render_command
from reviewer.sources import kraan
from reviewer.sources.protocol import PlanContext, SourceEntry

KIND = "kraan"
NAMESPACE = "default"
"""Where an object naming no namespace lands (kubectl's default, which Kraan's applier uses)."""
_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Kraan:
    """The layers declared by the AddonsLayers below `paths`."""

    name: str
    paths: tuple[str, ...]

    def describe(self) -> str:
        """`kraan 'layers': layers/`."""
        return f"{KIND} '{self.name}': {', '.join(path + '/' for path in self.paths)}"

    def plan(self, context: PlanContext) -> Plan:
        """Every selected HelmRelease of every layer, planned and labelled with its layer."""
        try:
            layers = kraan.find_layers(context.root, self.paths)
            found, duplicates = kraan.collect_layer_objects(
                context.root,
                layers,
                timeout=context.kustomize_timeout,
                kubectl=kustomize.find_kubectl(context.programs.lookup()),
            )
        except ReviewerError as error:
            reproduce = render_command(context.display_root, self.name)
            failure = PlanError(self.name, WHOLE_DEPLOYMENT, None, error.render(), reproduce)
            return Plan(errors=(failure,))
        planned = plan_helmreleases(
            FluxInputs(
                root=context.root,
                source=self.name,
                paths=(),
                secrets=context.secrets,
                decoder=context.decoder,
                twin=context.twin,
                namespace=NAMESPACE,
                display_root=context.display_root,
                select=context.select.location,
                documents=(
                    *((item.file, item.document) for item in found),
                    *kraan.source_repositories(layers),
                ),
            )
        )
        owners = _owners(found, {layer.name: layer for layer in layers})
        refused = tuple(
            self._refused(duplicate, context)
            for duplicate in duplicates
            if context.select.location(self.name, duplicate.namespace)
        )
        return replace(
            planned,
            releases=tuple(_labelled(release, owners, layers) for release in planned.releases),
            errors=(*planned.errors, *refused),
        )

    def _refused(self, duplicate: kraan.Duplicate, context: PlanContext) -> PlanError:
        """The error of a HelmRelease several layers include, under its release's identity."""
        release = _release_name(duplicate.definitions[0]) or duplicate.name
        return PlanError(
            self.name,
            duplicate.namespace,
            release,
            f"{duplicate.message()} ({kraan.DUPLICATE_HINT})",
            render_command(context.display_root, self.name, duplicate.namespace),
        )


def _owners(
    found: Sequence[kraan.LayerObject], layers: dict[str, kraan.Layer]
) -> dict[tuple[str, str], kraan.Layer]:
    """(HelmRelease namespace, Helm release name) → the layer that includes it."""
    owners: dict[tuple[str, str], kraan.Layer] = {}
    for item in found:
        release = _release_name(item)
        if release is not None:
            owners[(item.identity[1], release)] = layers[item.layer]
    return owners


def _release_name(item: kraan.LayerObject) -> str | None:
    """The Helm release name of a layer's HelmRelease; None for other objects or one the
    planner refuses (it reports why)."""
    if item.document.get("kind") != "HelmRelease":
        return None
    try:
        release = objects.decode_helmrelease(item.document, Field(item.file), namespace=NAMESPACE)
    except ReviewerError:
        return None
    return names.release_name(release)


def _labelled(
    release: ReleasePlan,
    owners: dict[tuple[str, str], kraan.Layer],
    layers: Sequence[kraan.Layer],
) -> ReleasePlan:
    """The release with its layer's label; of the AddonsLayer files, only its layer's is an
    input (another one may stand for the GitRepository the chart comes from)."""
    layer = owners.get((release.id.deployment, release.id.release))
    if layer is None:
        return release
    others = {other.source for other in layers}
    return replace(
        release,
        labels={**release.labels, LAYER_LABEL: layer.name},
        inputs=(release.inputs - others) | {layer.source},
    )


def decode(entry: SourceEntry) -> Kraan:
    """`paths: [<directory holding AddonsLayers>, ...]`; no options."""
    entry.check_options(())
    if not entry.paths:
        raise entry.at.key("paths").error(
            "a kraan source needs at least one directory holding AddonsLayer objects"
        )
    return Kraan(entry.name, entry.paths)


def detect(root: Path) -> Sequence[Kraan]:
    """One source per top-level directory holding an AddonsLayer file."""
    return [
        Kraan(child.name, (child.name,))
        for child in sorted(root.iterdir())
        if child.is_dir()
        and not child.name.startswith(".")
        and not child.is_symlink()
        and _holds_layers(child)
    ]


def claimed(root: Path, source: Kraan) -> set[str]:
    """The directories a detected source covers: its own and its layers' (as `a/b`)."""
    try:
        layers = kraan.find_layers(root, source.paths)
    except ReviewerError:
        layers = []
    return {*source.paths, *(layer.path.removeprefix("./").strip("/") for layer in layers)}


def _holds_layers(directory: Path) -> bool:
    for path in sorted(directory.rglob("*")):
        if any(part.startswith(".") for part in path.relative_to(directory).parts):
            continue
        if path.suffix in _SUFFIXES and path.is_file() and _has_layer(path):
            return True
    return False


def _has_layer(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
        if "AddonsLayer" not in text:
            return False
        documents = yamlio.load_documents(text, source=path.name)
    except (ReviewerError, OSError, UnicodeDecodeError):
        return False
    return any(kraan.is_addons_layer(document) for document in documents)
