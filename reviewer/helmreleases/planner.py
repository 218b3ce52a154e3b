"""HelmReleases → planned releases for the render stage.

Each HelmRelease becomes a `ReleasePlan` identified by (source name, the
HelmRelease's namespace, its Helm release name): its chart and version, the Helm release
namespace, the values helm-controller would pass, and the post-render
chain. A problem with one HelmRelease becomes a `PlanError` for it alone.

Encrypted Secrets named by `valuesFrom` are read through the secrets stage: on
the real plan decrypted, on the redacted twin with every leaf they contribute
redacted, so the redaction map pairs each secret with its stand-in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from reviewer import capabilities as capabilities_mod
from reviewer import jail
from reviewer.decode import Field
from reviewer.errors import ConfigError, ReviewerError
from reviewer.helmreleases import names, postrender
from reviewer.helmreleases import values as values_mod
from reviewer.helmreleases.catalog import Catalog, Document, collect
from reviewer.helmreleases.charts import chart_source
from reviewer.helmreleases.objects import HelmRelease, ObjectRef, ValuesReference
from reviewer.helmreleases.source_objects import secret_data
from reviewer.model import ReleaseId
from reviewer.plan import Plan, PlanError, ReleasePlan
from reviewer.plan_commands import render_command
from reviewer.sops import SopsDecoder
from reviewer.values import Layer, SecretsLoader

CRD_INSTALL_LABEL = "flux/crds-install"
CRD_UPGRADE_LABEL = "flux/crds-upgrade"
"""Release labels carrying the CRD policy of the chart's crds/ (see docs/sources.md)."""

Located = Callable[[str, str], bool]
"""(source name, HelmRelease namespace) → whether it is selected."""


def _everywhere(cluster: str, deployment: str) -> bool:
    return True


@dataclass(frozen=True)
class FluxInputs:
    """What planning one checkout's HelmReleases needs."""

    root: Path
    source: str
    """The source's name: the first part of every identity it plans."""
    paths: tuple[str, ...]
    secrets: SecretsLoader
    decoder: SopsDecoder | None = None
    twin: bool = False
    namespace: str = "default"
    """The namespace of objects that name none."""
    display_root: str = "."
    select: Located = _everywhere
    documents: tuple[Document, ...] = ()
    """Objects from builds (a Flux Kustomization's output), planned like files' objects."""
    exclude: tuple[str, ...] = ()
    """Directories whose files are not read: a build owns them (its output is in `documents`)."""
    origins: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """The repository files and directories each origin of `documents` stands for."""


def plan_helmreleases(inputs: FluxInputs) -> Plan:
    """Every selected HelmRelease below the paths, planned (or failed) one by one."""
    try:
        catalog = collect(
            inputs.root,
            inputs.paths,
            namespace=inputs.namespace,
            documents=inputs.documents,
            exclude=inputs.exclude,
        )
    except ReviewerError as error:
        return Plan(
            errors=(
                PlanError(
                    inputs.source,
                    "*",
                    None,
                    error.render(),
                    render_command(inputs.display_root, inputs.source),
                ),
            )
        )
    releases: list[ReleasePlan] = []
    errors: list[PlanError] = []
    for problem in catalog.errors:
        errors.append(
            PlanError(
                inputs.source,
                problem.file or "*",
                None,
                problem.render(),
                render_command(inputs.display_root, inputs.source),
            )
        )
    for release in sorted(catalog.releases, key=lambda r: (r.namespace, r.name)):
        if not inputs.select(inputs.source, release.namespace):
            continue
        try:
            releases.append(_plan_release(release, catalog, inputs))
        except ReviewerError as error:
            errors.append(
                PlanError(
                    inputs.source,
                    release.namespace,
                    release.name,
                    error.render(),
                    render_command(inputs.display_root, inputs.source, release.namespace),
                )
            )
    return Plan(releases=tuple(releases), errors=tuple(errors))


def _plan_release(release: HelmRelease, catalog: Catalog, inputs: FluxInputs) -> ReleasePlan:
    chart = chart_source(release, catalog, root=inputs.root)
    lookup = _Lookup(release, catalog, inputs)
    values = values_mod.compose(release, lookup, redact=inputs.twin)
    layers = (*lookup.layers, Layer(release.file, "spec.values", dict(release.values)))
    labels = {CRD_INSTALL_LABEL: release.crds.install, CRD_UPGRADE_LABEL: release.crds.upgrade}
    return ReleasePlan(
        id=ReleaseId(inputs.source, release.namespace, names.release_name(release)),
        namespace=names.release_namespace(release),
        chart=chart.chart,
        version=chart.version,
        labels=labels,
        values=values,
        layers=layers,
        inputs=_repository_files(inputs, {release.file, *chart.files, *lookup.files}),
        skip_schema_validation=release.skip_schema_validation,
        template_file=release.file,
        reproduce=render_command(inputs.display_root, inputs.source, release.namespace),
        helm_command=None,
        capabilities=capabilities_mod.DEFAULT,
        patches=postrender.patches(release),
        chart_defaults=chart.defaults,
    )


class _Lookup:
    """Finds what `valuesFrom` entries name, remembering the files and layers it read."""

    def __init__(self, release: HelmRelease, catalog: Catalog, inputs: FluxInputs) -> None:
        self.release = release
        self.catalog = catalog
        self.inputs = inputs
        self.files: set[str] = set()
        self.layers: list[Layer] = []

    def __call__(self, reference: ValuesReference) -> values_mod.Supplied:
        ref = ObjectRef(reference.kind, self.release.namespace, reference.name)
        found = self.catalog.values_objects.get(ref)
        if found is None:
            raise values_mod.ValuesMissing(key=False)
        self.files.add(found.file)
        if found.encrypted:
            data, keyless = self._decrypted(found.file)
        else:
            data, keyless = dict(found.data), False
        secret = found.encrypted
        if keyless:
            supplied = values_mod.Supplied("", found.file, secret=True, keyless=True)
        elif reference.values_key not in data:
            raise values_mod.ValuesMissing(key=True)
        else:
            supplied = values_mod.Supplied(data[reference.values_key], found.file, secret=secret)
        self.layers.append(self._layer(reference, supplied))
        return supplied

    def _decrypted(self, file: str) -> tuple[dict[str, str], bool]:
        """The Secret's data; on the twin plan decrypted again (the loader redacts whole
        documents, and base64 data must be decoded before its leaves are redacted)."""
        path = jail.resolve_file(self.inputs.root, file)
        loaded: dict[str, Any] = self.inputs.secrets.load(path, source=file)
        keyless = False
        if self.inputs.decoder is not None:
            decoded = self.inputs.decoder.decode(path, source=file)
            loaded, keyless = decoded.values, decoded.keyless
        if keyless:
            return {}, True
        return secret_data(loaded, Field(file)), False

    def _layer(self, reference: ValuesReference, supplied: values_mod.Supplied) -> Layer:
        level = f"valuesFrom {reference.kind} {reference.name}"
        alone = replace(reference, optional=False)
        single = replace(self.release, values={}, values_from=(alone,))
        try:
            shown = values_mod.compose(single, lambda _: supplied, redact=self.inputs.twin)
        except ConfigError:
            shown = {}
        return Layer(supplied.source, level, shown, secret=supplied.secret)


def _repository_files(inputs: FluxInputs, used: set[str]) -> frozenset[str]:
    """The files a release was built from; an origin of a built object as what it stands for."""
    return frozenset(file for origin in used for file in inputs.origins.get(origin, {origin}))
