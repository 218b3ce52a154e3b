"""The `manifests` kind: trees of plain YAML, built with kustomize where a kustomization is.

Each directory holding a kustomization file is one object set, built by the
locked-down kustomize (reviewer/kustomize.py) and not descended into; every
other `.yaml`/`.yml` file is one object set of its own. Identities are
(source name, directory, file name or `kustomization`), the directory relative
to the source's path (to the repository when the source has several paths), so
an object moving between files of one source shows as a move. Documents that
are not Kubernetes objects (BOSH manifests) are compared path by path.

SOPS-encrypted files (a top-level `sops` map), and Secrets with one that a
kustomization emits, are decrypted for the object set and their secret leaves go
to the redaction map, like every other secret.
"""

from __future__ import annotations

import base64
import binascii
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reviewer import jail, kustomize, kustomize_check, yamlio
from reviewer.errors import ConfigError, ReviewerError
from reviewer.model import WHOLE_DEPLOYMENT, ReleaseId, RenderedRelease, Resource
from reviewer.plan import Plan
from reviewer.plan_commands import render_command
from reviewer.redact import redact_tree, replacement_map
from reviewer.sops import SopsDecoder, SopsError, SopsFailure, keyless_placeholders
from reviewer.sources import bosh
from reviewer.sources.protocol import PlanContext, SourceEntry

KIND = "manifests"
OPTIONS: tuple[str, ...] = ()
KUSTOMIZATION = "kustomization"
"""The release name of a directory built with kustomize."""
_SUFFIXES = (".yaml", ".yml")
_ENCRYPTED_PREFIX = "ENC["


@dataclass(frozen=True)
class Manifests:
    """Plain manifests below `paths` (repository-relative directories)."""

    name: str
    paths: tuple[str, ...]

    def describe(self) -> str:
        """`manifests 'apps': apps/`."""
        return f"{KIND} '{self.name}': {', '.join(path + '/' for path in self.paths)}"

    def plan(self, context: PlanContext) -> Plan:
        """Every object set below the paths (not again for the redacted twin)."""
        if context.twin:
            return Plan()
        return plan_tree(self.name, self.paths, context)


def decode(entry: SourceEntry) -> Manifests:
    """`paths: [<directory>, ...]`; no other options."""
    entry.check_options(OPTIONS)
    if not entry.paths:
        raise entry.at.key("paths").error("a manifests source needs at least one directory")
    return Manifests(entry.name, entry.paths)


def detect(root: Path) -> Sequence[Manifests]:
    """One source per top-level directory holding Kubernetes objects or BOSH manifests."""
    found: list[Manifests] = []
    for child in sorted(root.iterdir()):
        if child.name.startswith(".") or child.is_symlink() or not child.is_dir():
            continue
        if _holds_manifests(child):
            found.append(Manifests(child.name, (child.name,)))
    return found


def _holds_manifests(directory: Path) -> bool:
    """True when the tree holds manifests and no Helm chart (symlinks are not followed)."""
    found = False
    for path in _walk(directory):
        if path.name == "Chart.yaml":
            return False
        found = found or (path.suffix in _SUFFIXES and _looks_like_manifest(path))
    return found


def _walk(directory: Path) -> Iterator[Path]:
    """Regular files below `directory`, hidden entries and symlinks skipped."""
    for child in sorted(directory.iterdir()):
        if child.name.startswith(".") or child.is_symlink():
            continue
        if child.is_dir():
            yield from _walk(child)
        elif child.is_file():
            yield child


def _looks_like_manifest(path: Path) -> bool:
    if kustomize_check.find_kustomization(path.parent) is not None:
        return True
    try:
        documents = yamlio.load_documents(path.read_text(encoding="utf-8"), source=path.name)
    except (ReviewerError, OSError, UnicodeDecodeError):
        return False
    return any(bosh.is_kubernetes(doc) or bosh.is_bosh(doc) for doc in documents)


# --- planning -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Unit:
    """One object set: a kustomization directory or a single file."""

    directory: str
    """The identity's directory (relative to the source's path)."""
    release: str
    path: str
    """The directory or file, relative to the repository."""


def plan_tree(name: str, paths: Sequence[str], context: PlanContext) -> Plan:
    """Build every selected object set below `paths` of `context.root`."""
    objects: list[RenderedRelease] = []
    replacements: dict[str, str] = {}
    inputs: dict[ReleaseId, frozenset[str]] = {}
    for path in paths:
        directory = context.root / path
        if not directory.is_dir():
            error = ConfigError(path, "not a directory in the repository", field=f"source {name}")
            failure = RenderedRelease(
                id=ReleaseId(name, path, WHOLE_DEPLOYMENT),
                namespace="",
                error=error.render(),
                reproduce=render_command(context.display_root, name, path),
            )
            objects.append(failure)
            continue
        top = context.root / path if len(paths) == 1 else context.root
        for unit in _units(context.root, directory, top):
            if context.select.location(name, unit.directory):
                built = _build(name, unit, context, replacements)
                objects.append(built)
                inputs[built.id] = _inputs(context.root, unit)
    return Plan(objects=tuple(objects), replacements=replacements, inputs=inputs)


def _inputs(root: Path, unit: _Unit) -> frozenset[str]:
    """The unit's file or directory and, for a kustomization, every file its tree may load
    (bases outside its directory included): what the blast radius counts."""
    if unit.release != KUSTOMIZATION:
        return frozenset({unit.path})
    walker = kustomize_check.Walker(Path(os.path.realpath(root)))
    try:
        walker.kustomization(root / unit.path, plugins=False)
    except ReviewerError:  # the build failed with this error already
        return frozenset({unit.path})
    loaded = {kustomize_check.display(walker.root, path) for path in walker.loaded}
    return frozenset({unit.path, *loaded})


def _units(root: Path, directory: Path, top: Path) -> Iterator[_Unit]:
    """Object sets below `directory`; their directory is named relative to `top`."""
    relative = directory.relative_to(top).as_posix()
    if kustomize_check.find_kustomization(directory) is not None:
        yield _Unit(relative, KUSTOMIZATION, directory.relative_to(root).as_posix())
        return
    if (directory / "Chart.yaml").is_file():
        return  # a Helm chart, not plain manifests
    for child in sorted(directory.iterdir(), key=lambda path: path.name):
        if child.name.startswith("."):
            continue
        if child.is_dir() and not child.is_symlink():
            yield from _units(root, child, top)
        elif child.suffix in _SUFFIXES and (child.is_file() or _leads_nowhere(child)):
            yield _Unit(relative, child.name, child.relative_to(root).as_posix())


def _leads_nowhere(path: Path) -> bool:
    """A link to nothing, or a loop of links: read, it fails naming the file, where
    skipping it would drop its objects without a word."""
    return path.is_symlink() and not path.is_dir()


def _build(
    name: str, unit: _Unit, context: PlanContext, replacements: dict[str, str]
) -> RenderedRelease:
    release = RenderedRelease(
        id=ReleaseId(name, unit.directory, unit.release),
        namespace="",
        reproduce=render_command(context.display_root, name, unit.directory),
    )
    try:
        if unit.release == KUSTOMIZATION:
            resources = _kustomization(unit, context, replacements)
        else:
            resources = _file(unit, context, replacements)
        _check_unique(resources, source=unit.path)
    except ReviewerError as error:
        return RenderedRelease(
            id=release.id, namespace="", error=error.render(), reproduce=release.reproduce
        )
    return RenderedRelease(
        id=release.id, namespace="", resources=resources, reproduce=release.reproduce
    )


def _file(unit: _Unit, context: PlanContext, replacements: dict[str, str]) -> tuple[Resource, ...]:
    text = jail.read_text(context.root, unit.path)
    documents = yamlio.load_documents(text, source=unit.path)
    if len(documents) == 1 and isinstance(documents[0].get("sops"), Mapping):
        path = jail.resolve_file(context.root, unit.path)
        documents = [_decrypted(path, text, unit.path, context.decoder, replacements)]
    return tuple(_resource(doc, source=unit.path, index=i) for i, doc in enumerate(documents))


def _kustomization(
    unit: _Unit, context: PlanContext, replacements: dict[str, str]
) -> tuple[Resource, ...]:
    output = kustomize.build(
        context.root,
        context.root / unit.path,
        timeout=context.kustomize_timeout,
        kubectl=kustomize.find_kubectl(context.programs.lookup()),
    )
    documents = yamlio.load_documents(output, source=unit.path, cache=False)
    resources: list[Resource] = []
    for index, document in enumerate(documents):
        if isinstance(document.get("sops"), Mapping):
            document = _decrypted_built(document, unit.path, context.decoder, replacements)
        resources.append(_resource(document, source=unit.path, index=index))
    return tuple(resources)


def _resource(document: dict[str, Any], *, source: str, index: int) -> Resource:
    if bosh.is_kubernetes(document):
        return Resource.from_body(document, source=source)
    return bosh.document(document, source=source, index=index)


def _check_unique(resources: Sequence[Resource], *, source: str) -> None:
    seen: set[object] = set()
    for resource in resources:
        if resource.key in seen:
            raise ConfigError(source, f"{resource.key} is defined more than once")
        seen.add(resource.key)


# --- SOPS -----------------------------------------------------------------------------


def _decrypted(
    path: Path,
    text: str,
    source: str,
    decoder: SopsDecoder | None,
    replacements: dict[str, str],
) -> dict[str, Any]:
    """The decrypted document; its encrypted leaves join the redaction map."""
    if decoder is None:
        return keyless_placeholders(text, source=source)
    decoded = decoder.decode(path, source=source)
    if not decoded.keyless:
        encrypted = yamlio.load_mapping(text, source=source)
        replacements.update(secret_replacements(encrypted, decoded.values))
    return decoded.values


def _decrypted_built(
    document: dict[str, Any],
    source: str,
    decoder: SopsDecoder | None,
    replacements: dict[str, str],
) -> dict[str, Any]:
    # sops decrypts files: the built object is written out as kustomize emitted it.
    text = yamlio.dump(document)
    with tempfile.TemporaryDirectory(prefix="reviewer-sops-") as scratch:
        path = Path(scratch, "object.yaml")
        path.write_text(text, encoding="utf-8")
        try:
            return _decrypted(path, text, source, decoder, replacements)
        except SopsError as error:
            if error.failure is not SopsFailure.INTEGRITY:
                raise
            name = (document.get("metadata") or {}).get("name", "")
            raise SopsError(
                source,
                SopsFailure.INTEGRITY,
                detail=f"Secret {name} as the kustomization built it",
                hint="the SOPS MAC covers unencrypted fields too, so a kustomization that "
                "changes an encrypted Secret (namespace, name prefix, labels) breaks it, as "
                "in Flux; set those fields in the Secret itself, or encrypt with "
                "--mac-only-encrypted",
            ) from None


def secret_replacements(encrypted: Any, real: Any) -> dict[str, str]:
    """{real: redacted} for every leaf SOPS encrypted (and the decoded text of Secret data)."""
    leaves: list[Any] = list(_secret_leaves(encrypted, real))
    found = replacement_map(leaves, redact_tree(leaves))
    data = real.get("data") if isinstance(real, Mapping) and real.get("kind") == "Secret" else None
    if isinstance(data, Mapping):
        plain = [_base64_text(value) for value in data.values() if isinstance(value, str)]
        texts = [text for text in plain if text]
        found.update(replacement_map(texts, redact_tree(texts)))
    return found


def _secret_leaves(encrypted: Any, real: Any) -> Iterator[Any]:
    if isinstance(encrypted, Mapping) and isinstance(real, Mapping):
        for key, value in encrypted.items():
            if key != "sops" and key in real:
                yield from _secret_leaves(value, real[key])
    elif isinstance(encrypted, list) and isinstance(real, list):
        for pair in zip(encrypted, real, strict=False):
            yield from _secret_leaves(*pair)
    elif isinstance(encrypted, str) and encrypted.startswith(_ENCRYPTED_PREFIX):
        yield real


def _base64_text(value: str) -> str | None:
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
