"""Nested releases: render the HelmReleases a rendered release deploys (docs/nested.md).

After a side renders, every release's output is searched for Flux HelmReleases whose
chart resolves (reviewer/sources/nested.py). Each is planned as the `flux` kind plans a
HelmRelease file (reviewer/helmreleases) and rendered by the same render stage, then its
own output is searched in turn, up to the depth limit. An inner release keeps its
parent's cluster and deployment; its release name is the chain, outermost first, joined
by `nested.SEPARATOR` (`bootstrap`, `apps/middle`, `leaves/leaf`), so it is reported
right under its parent.

Secrets: the expansion runs twice, as planning does (reviewer/twins.py). The twin
expansion starts from each parent's published output (secret-derived positions already
in twin form) with the data of every v1 Secret in it redacted; the real one from the real
output. Inner releases are paired by chain and aligned, so whatever derives from a SOPS
value or from a Secret of the parent's output is published in its twin form. A real
inner release whose chart reference differs from its twin's is never fetched, and one
without a twin is not shown.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from reviewer import decode, jail, yamlio
from reviewer.errors import ConfigError, RenderError, ReviewerError
from reviewer.helmreleases.planner import FluxInputs, plan_helmreleases
from reviewer.model import ReleaseId, RenderedRelease, Snapshot
from reviewer.plan import Plan, ReleasePlan
from reviewer.redact import redact_scalar, redact_tree
from reviewer.sources import nested
from reviewer.twins import align, masked_release

CONFIG_KEY = "nested"
_OPTION_KEYS = ("expand", "depth")
_SOURCE_GROUP = "source.toolkit.fluxcd.io/"
_SOURCE_KINDS = ("HelmRepository", "OCIRepository", "GitRepository", "HelmChart")
_REPOSITORY_NAMESPACE = "default"
"""The namespace of a repository's source object that names none (as the `flux` kind)."""

Render = Callable[[Plan], Snapshot]
"""The render stage, bound to a side's checkout and tools."""


@dataclass(frozen=True)
class NestedOptions:
    """`nested:` of `.reviewer.yaml`: whether to expand, and how deep."""

    expand: bool = True
    depth: int = nested.DEFAULT_DEPTH_LIMIT


def from_mapping(value: object, *, source: str) -> NestedOptions:
    """`nested: {expand: true|false, depth: N}`; both optional."""
    if value is None:
        return NestedOptions()
    at = decode.Field(source, (CONFIG_KEY,))
    data = decode.mapping(value, at, allowed=_OPTION_KEYS)
    return NestedOptions(
        expand=decode.optional(data, "expand", at, decode.boolean, True),
        depth=decode.optional(
            data,
            "depth",
            at,
            lambda v, where: decode.integer(v, where, minimum=1),
            nested.DEFAULT_DEPTH_LIMIT,
        ),
    )


@dataclass(frozen=True)
class Expansion:
    """The inner releases of a side: as rendered, as published, and their plans."""

    real: tuple[RenderedRelease, ...] = ()
    shown: tuple[RenderedRelease, ...] = ()
    plans: tuple[ReleasePlan, ...] = ()
    """The twin plans under the inner identities: values safe to show."""
    notes: tuple[str, ...] = ()

    def merged(self, real: Snapshot, shown: Snapshot) -> tuple[Snapshot, Snapshot]:
        """`real` and `shown` with the inner releases added (each in identity order)."""
        return _with(real, self.real, ()), _with(shown, self.shown, self.notes)


def _with(
    snapshot: Snapshot, releases: tuple[RenderedRelease, ...], notes: tuple[str, ...]
) -> Snapshot:
    every = sorted((*snapshot.releases, *releases), key=lambda r: r.id)
    return replace(snapshot, releases=tuple(every), warnings=(*snapshot.warnings, *notes))


def expand_side(
    root: Path,
    *,
    real: Snapshot,
    shown: Snapshot,
    inputs: Mapping[ReleaseId, frozenset[str]],
    render: Render,
    options: NestedOptions,
) -> Expansion:
    """The inner releases of every rendered release of a side (nothing when turned off)."""
    if not options.expand:
        return Expansion()
    repository = RepositorySources(root)
    twin = _Expander(root, repository, render, inputs, options.depth, twins=None)
    actual = _Expander(root, repository, render, inputs, options.depth, twins=twin.plans)
    published = shown.by_id()
    shown_releases: list[RenderedRelease] = []
    notes: list[str] = []
    for parent in real.releases:
        partner = published.get(parent.id)
        if parent.error is not None or partner is None or partner.error is not None:
            continue
        if not _deploys_helmreleases(parent):
            continue
        twins = twin.expand(partner)
        reals = actual.expand(parent)
        shown_releases += _publish(reals, twins, actual.refused, notes, parent.id)
    return Expansion(
        real=tuple(actual.rendered.values()),
        shown=tuple(shown_releases),
        plans=tuple(twin.plans.values()),
        notes=tuple(notes),
    )


def _deploys_helmreleases(release: RenderedRelease) -> bool:
    return any(nested.is_helmrelease(resource.body) for resource in release.resources)


def _publish(
    reals: dict[ReleaseId, RenderedRelease],
    twins: dict[ReleaseId, RenderedRelease],
    refused: set[ReleaseId],
    notes: list[str],
    parent: ReleaseId,
) -> Iterator[RenderedRelease]:
    hidden = len(set(reals) - set(twins))
    if hidden:
        notes.append(
            f"{parent}: {hidden} nested release(s) not shown: the release's output deploys "
            "them only with the real secret values (a template branches on a secret)"
        )
    for rid, twin in twins.items():
        mine = reals.get(rid)
        if mine is None:
            yield masked_release(twin, _UNPAIRED)
        elif rid in refused:
            yield replace(twin, resources=(), error=_REFUSED)
        else:
            aligned = align(mine, twin)
            if aligned.masked:
                notes.append(
                    f"{rid}: {aligned.masked} object(s) masked: they differ in structure with "
                    "the real and the redacted secret values"
                )
            yield aligned.release


_UNPAIRED = (
    "the parent release deploys this nested release only with redacted secret values "
    "(a template branches on a secret); it is not shown"
)
_REFUSED = (
    "the chart reference or repository URL of this nested release depends on a secret "
    "(a SOPS value or a Secret of its parent's output); it is not fetched"
)


class _Expander:
    """Expands parents on one side of the twins, remembering every inner plan and render."""

    def __init__(
        self,
        root: Path,
        repository: RepositorySources,
        render: Render,
        inputs: Mapping[ReleaseId, frozenset[str]],
        depth: int,
        *,
        twins: dict[ReleaseId, ReleasePlan] | None,
    ) -> None:
        self.root = root
        self.repository = repository
        self.render = render
        self.inputs = inputs
        self.depth = depth
        self.twins = twins
        self.plans: dict[ReleaseId, ReleasePlan] = {}
        self.rendered: dict[ReleaseId, RenderedRelease] = {}
        self.refused: set[ReleaseId] = set()

    def expand(self, parent: RenderedRelease) -> dict[ReleaseId, RenderedRelease]:
        """The inner releases of `parent`, by identity (failures included); the twin side
        reads every Secret of the output redacted."""
        twin = self.twins is None
        output = [_redacted_secret(r.body) if twin else r.body for r in parent.resources]
        tree = nested.expand(
            parent.id.release,
            output,
            lambda chain, release, found: self._render(parent, chain, release, found),
            namespace=parent.namespace,
            repository=self.repository.lookup,
            depth_limit=self.depth,
        )
        found: dict[ReleaseId, RenderedRelease] = {}
        for inner in nested.flatten(tree):
            rid = _inner_id(parent, inner.chain)
            if inner.error is not None:
                self.rendered[rid] = _failed(rid, inner, parent)
            found[rid] = self.rendered[rid]
        return found

    def _render(
        self,
        parent: RenderedRelease,
        chain: tuple[str, ...],
        release: Mapping[str, Any],
        output: Sequence[Mapping[str, Any]],
    ) -> list[dict[str, Any]]:
        rid = _inner_id(parent, chain)
        planned = self._plan(parent, rid, release, output)
        if self.twins is not None:
            self._check_twin(rid, planned)
        self.plans[rid] = replace(planned, id=rid)
        # Rendered under its own identity: the Helm release name is its last part.
        (rendered,) = self.render(Plan(releases=(planned,))).releases
        rendered = replace(rendered, id=rid)
        self.rendered[rid] = rendered
        return [resource.body for resource in rendered.resources]

    def _plan(
        self,
        parent: RenderedRelease,
        rid: ReleaseId,
        release: Mapping[str, Any],
        output: Sequence[Mapping[str, Any]],
    ) -> ReleasePlan:
        origin = f"output of {rid.release.rpartition(nested.SEPARATOR)[0]}"
        documents = [(origin, document) for document in output if _readable(document)]
        documents.append((origin, release))
        documents += self._repository_documents(release, output, parent.namespace)
        plan = plan_helmreleases(
            FluxInputs(
                root=self.root,
                source=parent.id.cluster,
                paths=(),
                secrets=_NoFiles(),
                twin=self.twins is None,
                namespace=parent.namespace,
                documents=tuple(documents),
            )
        )
        if plan.errors:
            raise RenderError(plan.errors[0].message)
        if len(plan.releases) != 1:
            raise RenderError("the HelmRelease could not be planned")
        (planned,) = plan.releases
        files = {name for name in planned.inputs if name != origin}
        return replace(
            planned,
            inputs=frozenset(files | self.inputs.get(parent.id, frozenset())),
            reproduce=parent.reproduce or planned.reproduce,
            helm_command=None,
            template_file=f"nested release {rid.release}",
        )

    def _repository_documents(
        self, release: Mapping[str, Any], output: Sequence[Mapping[str, Any]], namespace: str
    ) -> list[tuple[str, Mapping[str, Any]]]:
        """The repository's source objects the chart needs and the output lacks."""
        wanted = nested.chart_source(release, namespace=_namespace(release, namespace))
        found: list[tuple[str, Mapping[str, Any]]] = []
        while wanted is not None and not _in_output(wanted, output, namespace):
            document = self.repository.document(*wanted)
            if document is None:
                break
            found.append(document)
            # A HelmChart takes its chart from a source of its own.
            wanted = _helm_chart_source(document[1], wanted)
        return found

    def _check_twin(self, rid: ReleaseId, planned: ReleasePlan) -> None:
        assert self.twins is not None
        twin = self.twins.get(rid)
        if twin is None:
            raise RenderError("not rendered: its twin with redacted secret values is missing")
        if _reference(twin) != _reference(planned):
            self.refused.add(rid)
            raise RenderError("not rendered: its chart reference depends on a secret")


def _reference(release: ReleasePlan) -> tuple[object, ...]:
    chart = release.chart
    return (chart.ref, chart.local, chart.repository, release.version)


def _inner_id(parent: RenderedRelease, chain: tuple[str, ...]) -> ReleaseId:
    return ReleaseId(parent.id.cluster, parent.id.deployment, nested.SEPARATOR.join(chain))


def _failed(rid: ReleaseId, inner: nested.InnerRelease, parent: RenderedRelease) -> RenderedRelease:
    namespace = _namespace(inner.release, parent.namespace)
    return RenderedRelease(
        id=rid,
        namespace=namespace,
        error=f"nested release {rid.release}: {inner.error}",
        reproduce=parent.reproduce,
    )


def _readable(document: Mapping[str, Any]) -> bool:
    """A source object, or a ConfigMap/Secret a `valuesFrom` may name (not a HelmRelease)."""
    api_version, kind = str(document.get("apiVersion", "")), document.get("kind")
    if api_version == "v1":
        return kind in ("ConfigMap", "Secret")
    return api_version.startswith(_SOURCE_GROUP) and kind in _SOURCE_KINDS


def _in_output(
    wanted: tuple[str, str, str], output: Sequence[Mapping[str, Any]], namespace: str
) -> bool:
    kind, source_namespace, name = wanted
    return any(
        _readable(document)
        and document.get("kind") == kind
        and _name(document) == name
        and _namespace(document, namespace) == source_namespace
        for document in output
    )


def _helm_chart_source(
    document: Mapping[str, Any], wanted: tuple[str, str, str]
) -> tuple[str, str, str] | None:
    if wanted[0] != "HelmChart":
        return None
    spec = document.get("spec")
    reference = spec.get("sourceRef") if isinstance(spec, Mapping) else None
    if not isinstance(reference, Mapping) or not reference.get("kind"):
        return None
    return (str(reference["kind"]), wanted[1], str(reference.get("name", "")))


def _name(document: Mapping[str, Any]) -> str:
    metadata = document.get("metadata")
    return str(metadata.get("name", "")) if isinstance(metadata, Mapping) else ""


def _namespace(document: Mapping[str, Any], default: str) -> str:
    metadata = document.get("metadata")
    found = metadata.get("namespace") if isinstance(metadata, Mapping) else None
    return str(found or default)


def _redacted_secret(body: dict[str, Any]) -> dict[str, Any]:
    """A v1 Secret with every data value redacted (each parsed as YAML first, so a
    `values.yaml` key stays a map); any other object as it is."""
    if body.get("apiVersion") != "v1" or body.get("kind") != "Secret":
        return body
    texts: dict[str, str] = {}
    for key in ("data", "stringData"):
        entries = body.get(key)
        if not isinstance(entries, Mapping):
            continue
        for name, value in entries.items():
            text = _base64_text(value) if key == "data" else str(value)
            texts[str(name)] = _redacted_text(text)
    redacted = {k: v for k, v in body.items() if k not in ("data", "stringData")}
    redacted["stringData"] = texts
    return redacted


def _base64_text(value: object) -> str:
    try:
        return base64.b64decode(str(value), validate=True).decode("utf-8")
    except ValueError:
        return str(value)


def _redacted_text(text: str) -> str:
    try:
        parsed = yamlio.load_documents(text, source="secret", cache=False)
    except ReviewerError:
        return redact_scalar(text)
    if len(parsed) == 1:
        return yamlio.dump(redact_tree(parsed[0]))
    return redact_scalar(text)


class _NoFiles:
    """Inner releases read no files of the repository through the secrets stage."""

    def load(self, path: Path, *, source: str) -> dict[str, Any]:
        """Refuse: only objects of the parent's output are read."""
        raise ConfigError(source, "a nested release reads no SOPS files")


# --- the repository's source objects -------------------------------------------------


@dataclass
class RepositorySources:
    """Flux source objects defined in the checkout, indexed on first use (first wins)."""

    root: Path
    _found: dict[tuple[str, str, str], tuple[str, Mapping[str, Any]]] | None = field(
        default=None, repr=False
    )

    def lookup(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The object (kind, namespace, name), if the repository defines it."""
        found = self.document(kind, namespace, name)
        return None if found is None else found[1]

    def document(
        self, kind: str, namespace: str, name: str
    ) -> tuple[str, Mapping[str, Any]] | None:
        """(file, object with its namespace filled in), if the repository defines it."""
        if self._found is None:
            self._found = dict(_index(self.root))
        return self._found.get((kind, namespace, name))


def _index(root: Path) -> Iterator[tuple[tuple[str, str, str], tuple[str, Mapping[str, Any]]]]:
    seen: set[tuple[str, str, str]] = set()
    for source in _files(root, root):
        for document in _documents(root, source):
            if not _readable(document) or str(document.get("apiVersion")) == "v1":
                continue
            namespace = _namespace(document, _REPOSITORY_NAMESPACE)
            key = (str(document.get("kind")), namespace, _name(document))
            if key in seen:
                continue
            seen.add(key)
            metadata = dict(document.get("metadata") or {})
            metadata["namespace"] = namespace
            yield key, (source, {**document, "metadata": metadata})


def _documents(root: Path, source: str) -> list[dict[str, Any]]:
    try:
        text = jail.read_text(root, source)
        if _SOURCE_GROUP not in text:
            return []
        return yamlio.load_documents(text, source=source, cache=False)
    except (ReviewerError, OSError, UnicodeDecodeError):
        return []


def _files(root: Path, directory: Path) -> Iterator[str]:
    if (directory / "Chart.yaml").is_file():
        return  # a chart's templates are not objects
    for child in sorted(directory.iterdir()):
        if child.name.startswith(".") or child.is_symlink():
            continue
        if child.is_dir():
            yield from _files(root, child)
        elif child.suffix in (".yaml", ".yml") and child.is_file():
            yield child.relative_to(root).as_posix()
