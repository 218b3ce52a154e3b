"""A `flux` source's Kustomizations, planned (docs/flux.md, "In the `flux` kind").

Every Flux Kustomization below the source's paths, and every one a build
produces, is built once (`flux_kustomization.build_all`). Of what it builds:

- the objects other than HelmReleases are one object set, identified by
  (source name, `<namespace>/<name>` of the Kustomization, `kustomization`);
- every object goes to the HelmRelease planner, which plans the HelmReleases
  and finds their chart sources and `valuesFrom` objects among them;
- the files below its `spec.path` are its own: the planner reads none of them,
  so a HelmRelease file a Kustomization includes is planned once, as built (one
  its kustomization leaves out is not applied by Flux, so not planned either).

A Kustomization that fails is an object set with its error, and the
HelmReleases in the files below its path fail with it instead of looking removed.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reviewer import kustomize
from reviewer.errors import ReviewerError
from reviewer.helmreleases import names
from reviewer.helmreleases.catalog import Document, collect
from reviewer.model import ReleaseId, RenderedRelease, Resource
from reviewer.plan import PlanError
from reviewer.plan_commands import render_command
from reviewer.redact import MIN_SUBSTRING_LENGTH
from reviewer.sops import SopsDecoder
from reviewer.sources import flux_kustomization as fks
from reviewer.sources import flux_kustomization_vars as fkv
from reviewer.sources.protocol import PlanContext

KUSTOMIZATION = "kustomization"
"""The release part of a Kustomization's object set identity."""


@dataclass(frozen=True)
class Kustomizations:
    """What a source's Kustomizations contribute to its plan."""

    documents: tuple[Document, ...] = ()
    """Every built object, for the HelmRelease planner, with its origin."""
    owned: tuple[str, ...] = ()
    """Directories built by a Kustomization: the planner leaves their files alone."""
    origins: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Each origin of `documents` → the repository files and directories it stands for."""
    objects: tuple[RenderedRelease, ...] = ()
    inputs: Mapping[ReleaseId, frozenset[str]] = field(default_factory=dict)
    replacements: Mapping[str, str] = field(default_factory=dict)
    """{secret: redacted}: decrypted SOPS Secrets and Secret-sourced variables."""
    errors: tuple[PlanError, ...] = ()
    """The HelmReleases below a failed Kustomization's path, failed with it."""


def plan_kustomizations(
    source: str, paths: Sequence[str], context: PlanContext, *, namespace: str
) -> Kustomizations:
    """Build every Kustomization of the source; on the twin, only what the planner needs
    (secrets in built objects replaced by their redacted form)."""
    results = _built(paths, context)
    if not results:
        return Kustomizations()
    replacements = {
        real: shown for result in results for real, shown in result.built.replacements.items()
    }
    documents: list[Document] = []
    origins: dict[str, frozenset[str]] = {}
    objects: list[RenderedRelease] = []
    inputs: dict[ReleaseId, frozenset[str]] = {}
    errors: list[PlanError] = []
    variables = fks.variable_objects_below(context.root, paths)
    for result in results:
        # What it read, or (failed before reading) the directory it would have built.
        files = frozenset({result.file, *(result.built.files or _owned(result))})
        files |= fkv.substitute_from_files(result.kustomization, variables)
        origin = f"{_directory(result)} (built by Kustomization {_name(result)})"
        origins[origin] = files
        for document in result.built.objects:
            shown = _redacted(document, replacements) if context.twin else document
            documents.append((origin, shown))
        if result.error is not None:
            errors.extend(_stand_ins(source, result, context, namespace))
        rid = ReleaseId(source, _name(result), KUSTOMIZATION)
        if context.twin or not context.select.location(source, rid.deployment):
            continue
        objects.append(_object_set(rid, result, context.display_root))
        inputs[rid] = files
    return Kustomizations(
        documents=tuple(documents),
        owned=tuple(sorted({d for result in results for d in _owned(result)})),
        origins=origins,
        objects=tuple(objects),
        inputs=inputs,
        replacements=replacements,
        errors=tuple(errors),
    )


def _built(paths: Sequence[str], context: PlanContext) -> list[fks.Result]:
    decoder = context.decoder
    decryptor = _Decryptor(decoder) if decoder is not None else None
    kubectl = kustomize.find_kubectl(context.programs.lookup())

    def build() -> list[fks.Result]:
        return fks.build_all(
            context.root,
            paths,
            decryptor=decryptor,
            timeout=context.kustomize_timeout,
            kubectl=kubectl,
        )

    # The real plan builds; the twin (planned right after it) takes the same results.
    key = (str(context.root.resolve()), tuple(paths))
    results: list[fks.Result] = context.builds.build(key, build, twin=context.twin)
    return results


def _name(result: fks.Result) -> str:
    return f"{result.kustomization.namespace}/{result.kustomization.name}"


def _directory(result: fks.Result) -> str:
    return fks.owned_directory(result.kustomization)


def _owned(result: fks.Result) -> tuple[str, ...]:
    # A Kustomization that did not decode has no usable path and owns nothing.
    return (_directory(result),) if result.kustomization.path else ()


def _object_set(rid: ReleaseId, result: fks.Result, display_root: str) -> RenderedRelease:
    reproduce = render_command(display_root, rid.cluster, rid.deployment)
    if result.error is not None:
        return RenderedRelease(
            id=rid, namespace="", error=result.error.render(), reproduce=reproduce
        )
    source = _directory(result)
    resources = tuple(
        Resource.from_body(document, source=source)
        for document in result.built.objects
        if not fks.helmreleases_in([document])
    )
    return RenderedRelease(id=rid, namespace="", resources=resources, reproduce=reproduce)


def _stand_ins(
    source: str, result: fks.Result, context: PlanContext, namespace: str
) -> list[PlanError]:
    """The HelmReleases in the files below a failed Kustomization's path, as failures."""
    directories = _owned(result)
    if not directories or result.error is None:
        return []
    try:
        catalog = collect(context.root, directories, namespace=namespace)
    except ReviewerError:
        return []
    message = f"not rendered: Kustomization {_name(result)} failed ({result.file})"
    return [
        PlanError(
            source,
            release.namespace,
            names.release_name(release),
            message,
            render_command(context.display_root, source, release.namespace),
        )
        for release in catalog.releases
        if context.select.location(source, release.namespace)
    ]


def _redacted(document: dict[str, Any], replacements: Mapping[str, str]) -> dict[str, Any]:
    """`document` with every secret in its strings replaced by its redacted form."""
    if not replacements:
        return document
    pairs = sorted(replacements.items(), key=_longest)
    redacted: dict[str, Any] = _replace(document, pairs)
    data = document.get("data")
    if document.get("kind") == "Secret" and isinstance(data, Mapping):
        # Redacted inside its base64, so the twin's Secret stays valid and its values redacted.
        redacted["data"] = {key: _redacted_base64(value, pairs) for key, value in data.items()}
    return redacted


def _redacted_base64(value: Any, pairs: Sequence[tuple[str, str]]) -> Any:
    try:
        text = base64.b64decode(str(value), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return _replace(value, pairs)
    return base64.b64encode(str(_replace(text, pairs)).encode()).decode()


def _longest(pair: tuple[str, str]) -> int:
    return -len(pair[0])


def _replace(value: Any, pairs: Sequence[tuple[str, str]]) -> Any:
    if isinstance(value, Mapping):
        return {key: _replace(item, pairs) for key, item in value.items()}
    if isinstance(value, list):
        return [_replace(item, pairs) for item in value]
    if isinstance(value, str):
        for real, shown in pairs:
            # As the redactor: short secrets only as whole values, longer ones anywhere.
            if value == real:
                return shown
            if len(real) >= MIN_SUBSTRING_LENGTH:
                value = value.replace(real, shown)
    return value


class _Decryptor:
    """SOPS Secrets from a build, decrypted; with no key (where the keyless mode allows it)
    typed placeholders instead, as for every other SOPS file."""

    def __init__(self, decoder: SopsDecoder) -> None:
        self.decoder = decoder

    def decrypt_object(self, document: Mapping[str, Any], *, source: str) -> dict[str, Any]:
        """The object decrypted, or with placeholders for its encrypted values."""
        return self.decoder.decode_object(document, source=source)
