"""Flux `ArtifactGenerator`s (source.extensions.fluxcd.io) that copy directories of this
repository into `ExternalArtifact`s, as Flux 2.7 lays out a fleet.

An artifact whose copies all keep the repository's layout below one directory
(`@repo/apps/base/**` → `@artifact/base/`, `@repo/apps/staging/**` →
`@artifact/staging/`: the artifact is `apps/` seen from inside) lets a
Kustomization's `spec.path` in the artifact be read as a path of the repository
(`./staging` → `apps/staging`). Any other copy is an error naming the file and the field.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from typing import Any

from reviewer.errors import ConfigError

GROUP = "source.extensions.fluxcd.io"
_RECURSIVE = "/**"

ArtifactKey = tuple[str, str]
"""(namespace, name) of an ExternalArtifact."""

Artifacts = Mapping[ArtifactKey, str | ConfigError]
"""Each artifact: the repository directory it shows (`` for the root), or why not."""


def find_artifacts(
    documents: Iterable[tuple[str, Mapping[str, Any]]],
) -> dict[ArtifactKey, str | ConfigError]:
    """The artifacts the ArtifactGenerators among `documents` (file, object) produce."""
    found: dict[ArtifactKey, str | ConfigError] = {}
    for source, document in documents:
        if document.get("kind") != "ArtifactGenerator":
            continue
        if not str(document.get("apiVersion", "")).startswith(f"{GROUP}/"):
            continue
        metadata = document.get("metadata")
        metadata = metadata if isinstance(metadata, Mapping) else {}
        namespace = str(metadata.get("namespace") or "default")
        spec = document.get("spec")
        spec = spec if isinstance(spec, Mapping) else {}
        aliases = _git_aliases(spec.get("sources"))
        artifacts = spec.get("artifacts")
        for index, artifact in enumerate(artifacts if isinstance(artifacts, list) else ()):
            if not isinstance(artifact, Mapping) or not isinstance(artifact.get("name"), str):
                continue
            where = f"spec.artifacts[{index}]"
            try:
                found[(namespace, artifact["name"])] = _directory(artifact, aliases, source, where)
            except ConfigError as error:
                found[(namespace, artifact["name"])] = error
    return found


def in_repository(directory: str, path: str, *, source: str) -> str:
    """A Kustomization's `spec.path` inside an artifact showing `directory`, as a path of
    the repository; a path leaving the artifact is an error on `spec.path`."""
    inner = posixpath.normpath(path.strip("/") or ".")
    if inner == ".." or inner.startswith("../"):
        raise ConfigError(source, "leaves the ExternalArtifact it is read from", field="spec.path")
    joined = posixpath.normpath(posixpath.join(directory or ".", inner))
    return f"./{joined}" if joined != "." else "./"


def _git_aliases(sources: Any) -> set[str]:
    aliases = set()
    for entry in sources if isinstance(sources, list) else ():
        if isinstance(entry, Mapping) and entry.get("kind") == "GitRepository":
            aliases.add(str(entry.get("alias")))
    return aliases


def _directory(artifact: Mapping[str, Any], aliases: set[str], source: str, where: str) -> str:
    """The one repository directory every copy of `artifact` keeps the layout of."""
    copies = artifact.get("copy")
    prefixes = set()
    for index, copy in enumerate(copies if isinstance(copies, list) else ()):
        at = f"{where}.copy[{index}]"
        if not isinstance(copy, Mapping):
            raise ConfigError(source, "must be a mapping", field=at)
        if copy.get("strategy") not in (None, "Overwrite", "Merge"):
            raise ConfigError(source, "only Overwrite and Merge are supported", field=at)
        origin = _directory_glob(copy.get("from"), aliases, "@", source, f"{at}.from")
        target = _target(copy.get("to"), source, f"{at}.to")
        if target and not (origin == target or origin.endswith(f"/{target}")):
            raise ConfigError(source, _LAYOUT, field=at)
        prefixes.add(origin[: len(origin) - len(target)].rstrip("/"))
    if len(prefixes) != 1:
        raise ConfigError(source, _LAYOUT, field=f"{where}.copy")
    return prefixes.pop()


_LAYOUT = (
    "copies that do not keep the repository's layout below one directory are not supported "
    "(the reviewer builds Kustomizations from the repository's own files)"
)


def _directory_glob(value: Any, aliases: set[str], mark: str, source: str, where: str) -> str:
    """`@<git alias>/<dir>/**` → `<dir>` (`` for the root)."""
    text = value if isinstance(value, str) else ""
    alias, _, rest = text.removeprefix(mark).partition("/")
    if not text.startswith(mark) or alias not in aliases:
        raise ConfigError(source, "must copy from a GitRepository source (@alias/...)", field=where)
    if rest != "**" and not rest.endswith(_RECURSIVE):
        raise ConfigError(
            source, "only whole directories (`@alias/<dir>/**`) are supported", field=where
        )
    return rest.removesuffix("**").strip("/")


def _target(value: Any, source: str, where: str) -> str:
    """`@artifact/<dir>/` → `<dir>` (`` for the artifact's root)."""
    text = value if isinstance(value, str) else ""
    if not (text == "@artifact" or text.startswith("@artifact/")):
        raise ConfigError(source, "must be @artifact/ or a directory below it", field=where)
    rest = text.removeprefix("@artifact").strip("/")
    if "*" in rest or not (text.endswith("/") or not rest):
        raise ConfigError(source, "must name a directory (ending in /)", field=where)
    return rest
