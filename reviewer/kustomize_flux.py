"""Flux-style kustomize builds: a Flux Kustomization's spec written into the kustomization.

kustomize-controller writes the spec's fields into the directory's own
kustomization (generated when there is none) rather than layering them on top;
the tree kustomize may load is copied into a scratch directory, then built by
the locked-down runner of reviewer/kustomize.py.
"""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reviewer import kustomize, yamlio
from reviewer.errors import ConfigError
from reviewer.kustomize import DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT
from reviewer.kustomize_check import (
    KUSTOMIZATION_NAMES,
    REMOTE,
    Walker,
    as_list,
    display,
    find_kustomization,
    inside_root,
)


@dataclass(frozen=True)
class FluxFields:
    """What a Flux Kustomization's spec writes into the kustomization it builds."""

    target_namespace: str | None = None
    name_prefix: str | None = None
    name_suffix: str | None = None
    patches: tuple[Mapping[str, Any], ...] = ()
    images: tuple[Mapping[str, Any], ...] = ()
    components: tuple[str, ...] = ()  # relative to the built directory
    ignore_missing_components: bool = False


@dataclass(frozen=True)
class FluxBuild:
    """A build's output, and the repository files it read (relative to the root)."""

    text: str
    files: frozenset[str]


def build_flux(
    root: Path,
    directory: Path,
    fields: FluxFields,
    *,
    source: str,
    timeout: float = DEFAULT_TIMEOUT,
    max_output: int = DEFAULT_MAX_OUTPUT,
    kubectl: Path | None = None,
) -> str:
    """Build `directory` as kustomize-controller does (see `build_flux_tree`); the output."""
    return build_flux_tree(
        root,
        directory,
        fields,
        source=source,
        timeout=timeout,
        max_output=max_output,
        kubectl=kubectl,
    ).text


def build_flux_tree(
    root: Path,
    directory: Path,
    fields: FluxFields,
    *,
    source: str,
    timeout: float = DEFAULT_TIMEOUT,
    max_output: int = DEFAULT_MAX_OUTPUT,
    kubectl: Path | None = None,
) -> FluxBuild:
    """Build `directory` as kustomize-controller does for a Kustomization declared in `source`.

    Like the controller, the spec's fields are written into the directory's own
    kustomization (generated when there is none), not layered on top of it: the
    prefix and namespace replace the file's, patches and components are appended
    and images merge field-wise by name. The tree kustomize may load is copied
    into a scratch directory first, so the checkout is never written.
    """
    root = Path(os.path.realpath(root))
    target = inside_root(root, directory, file=source, field="spec.path")
    if not target.is_dir():
        raise ConfigError(source, "names no directory in the repository", field="spec.path")
    walker = Walker(root)
    existing = find_kustomization(target)
    if existing is not None:
        walker.kustomization(target, plugins=False)
        # A copy: parsed documents are cached and shared.
        document = copy.deepcopy(yamlio.read_mapping(existing, source=display(root, existing)))
        name = existing.name
    else:
        document = _generated_document(root, target, walker)
        name = "kustomization.yaml"
    components = _flux_components(root, target, fields, walker, source=source)
    _write_flux_fields(document, fields, components, generated=existing is None)
    with tempfile.TemporaryDirectory(prefix="reviewer-flux-") as scratch:
        work = Path(scratch)
        mirror = work / "tree"
        _copy_loaded(root, walker.loaded, mirror)
        built = mirror / target.relative_to(root)
        built.mkdir(parents=True, exist_ok=True)
        for other in KUSTOMIZATION_NAMES:
            (built / other).unlink(missing_ok=True)
        (built / name).write_text(yamlio.dump(document), encoding="utf-8")
        text = kustomize.run_kustomize(
            built, work=work, timeout=timeout, max_output=max_output, kubectl=kubectl
        )
    files = frozenset(
        Path(os.path.abspath(path)).relative_to(root).as_posix() for path in walker.loaded
    )
    return FluxBuild(text, files)


def _generated_document(root: Path, target: Path, walker: Walker) -> dict[str, Any]:
    text = kustomize.generate_kustomization(target, root=root)
    document = yamlio.load_mapping(text, source="generated")
    for entry in document.get("resources", []):
        path = target / entry
        if path.is_dir():
            walker.kustomization(path, plugins=False)
        else:
            walker.loaded.add(path)
    return document


def _flux_components(
    root: Path, target: Path, fields: FluxFields, walker: Walker, *, source: str
) -> list[str]:
    found = []
    for index, component in enumerate(fields.components):
        field = f"spec.components[{index}]"
        if Path(component).is_absolute() or REMOTE.search(component):
            raise ConfigError(source, "component path must be local and relative", field=field)
        path = target / component
        if not path.exists() and fields.ignore_missing_components:
            continue
        real = inside_root(root, path, file=source, field=field)
        walker.kustomization(real, plugins=False)
        found.append(component)
    return found


def _write_flux_fields(
    document: dict[str, Any], fields: FluxFields, components: list[str], *, generated: bool
) -> None:
    # The order and rules of fluxcd/pkg kustomize's GenerateManifest.
    if not generated and not document.get("resources"):
        document["buildMetadata"] = ["originAnnotations"]
    if fields.target_namespace is not None:
        document["namespace"] = fields.target_namespace
    if fields.name_prefix is not None:
        document["namePrefix"] = fields.name_prefix
    if fields.name_suffix is not None:
        document["nameSuffix"] = fields.name_suffix
    for index, patch in enumerate(fields.patches):
        if "path" in patch:
            raise ConfigError("spec", "patches must be inline (patch:)", field=f"patches[{index}]")
    document["patches"] = [*as_list(document.get("patches")), *map(dict, fields.patches)]
    document["components"] = [*as_list(document.get("components")), *components]
    document["images"] = merge_images(as_list(document.get("images")), fields.images)
    for key in ("patches", "components", "images"):
        if not document[key]:
            del document[key]


def merge_images(
    existing: Sequence[Mapping[str, Any]], overrides: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """`images` of a kustomization with a Flux Kustomization's merged in, field-wise by name.

    newTag and digest select the version together: setting either replaces both.
    """
    merged = [dict(image) for image in existing]
    for override in overrides:
        found = next((image for image in merged if image.get("name") == override.get("name")), None)
        if found is None:
            merged.append({key: value for key, value in override.items() if value})
            continue
        if override.get("newName"):
            found["newName"] = override["newName"]
        if override.get("newTag") or override.get("digest"):
            for key in ("newTag", "digest"):
                found.pop(key, None)
                if override.get(key):
                    found[key] = override[key]
    return merged


def _copy_loaded(root: Path, loaded: set[Path], mirror: Path) -> None:
    for path in sorted(loaded):
        copy = mirror / Path(os.path.abspath(path)).relative_to(root)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy)
