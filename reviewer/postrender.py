"""Post-render: helmfile's `strategicMergePatches`, `jsonPatches` and `transformers`.

A release's patches are decoded once from its template (paths template-relative)
and its `apps[]` entry (paths deployment-relative, appended after the template's,
as ATLAS does). After Helm renders, the locked-down kustomize applies them to the
rendered manifests, before anything is normalised or diffed.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reviewer import decode, jail, kustomize, kustomize_check, yamlio
from reviewer.errors import RenderError
from reviewer.paths import inside

PATCH_FIELDS = ("strategicMergePatches", "jsonPatches", "transformers")
# A chart's crds/ directory (or a subchart's), as Helm names its files.
_CRDS_DIR = re.compile(r"^[^/]+(?:/charts/[^/]+)*/crds/")

FileRenderer = Callable[[str, str], str]
"""(text, repo-relative file) → text: renders a `.gotmpl` patch file like the template."""


@dataclass(frozen=True)
class Patches:
    """What kustomize applies to one release's rendered manifests, in helmfile's order."""

    strategic_merge: tuple[Mapping[str, Any], ...] = ()
    json_patches: tuple[kustomize.JsonPatch, ...] = ()
    transformers: tuple[Mapping[str, Any], ...] = ()
    files: tuple[str, ...] = ()  # repository files they were read from
    source: str = ""  # the file that declared them, for errors
    crds: tuple[Mapping[str, Any], ...] | None = None
    """When set, objects from a chart's crds/ get only these transformers, and objects
    there that are not CRDs are dropped (Flux's helm-controller applies CRDs itself)."""

    def __bool__(self) -> bool:
        return bool(
            self.strategic_merge or self.json_patches or self.transformers or self.crds is not None
        )

    def then(self, more: Patches) -> Patches:
        """These patches followed by `more` (instance-level entries come after the template's)."""
        if not more:
            return self
        return Patches(
            strategic_merge=(*self.strategic_merge, *more.strategic_merge),
            json_patches=(*self.json_patches, *more.json_patches),
            transformers=(*self.transformers, *more.transformers),
            files=(*self.files, *more.files),
            source=self.source or more.source,
        )


NO_PATCHES = Patches()


def decode_patches(
    data: Mapping[str, Any],
    at: decode.Field,
    *,
    root: Path,
    base: str,
    render: FileRenderer | None = None,
) -> Patches:
    """The three patch fields of `data`: inline maps, or file paths relative to `base`.

    `.gotmpl` files are rendered with `render` (the template's context); without
    one they are refused.
    """
    loaded: dict[str, list[tuple[Any, decode.Field]]] = {}
    files: list[str] = []
    for name in PATCH_FIELDS:
        items = decode.optional(data, name, at, decode.sequence, decode.NO_ITEMS)
        loaded[name] = []
        for index, item in enumerate(items):
            where = at.key(name).index(index)
            if isinstance(item, str):
                path = inside(root, base, item, file=where.file, field=where.name)
                files.append(path)
                loaded[name].extend(_read(root, path, where, render))
            else:
                loaded[name].append((decode.mapping(item, where), where))
    for config, where in loaded["transformers"]:
        kustomize_check.check_plugin_config(config, file=where.file, field=where.name)
    return Patches(
        strategic_merge=tuple(_strategic(item, where) for item, where in loaded[PATCH_FIELDS[0]]),
        json_patches=tuple(_json_patch(item, where) for item, where in loaded[PATCH_FIELDS[1]]),
        transformers=tuple(config for config, _ in loaded["transformers"]),
        files=tuple(files),
        source=at.file,
    )


def _read(
    root: Path, path: str, where: decode.Field, render: FileRenderer | None
) -> list[tuple[Any, decode.Field]]:
    jail.resolve_file(root, path)  # refuses escaping symlinks and special files
    text = yamlio.read_text(root / path, source=path)
    if path.endswith(".gotmpl"):
        if render is None:
            raise where.error("a .gotmpl patch file is only rendered when a template names it")
        text = render(text, path)
    documents = yamlio.load_documents(text, source=path, cache=False)
    if not documents:
        raise where.error(f"'{path}' holds no YAML document")
    return [
        (document, decode.Field(path, (f"document {n + 1}",)))
        for n, document in enumerate(documents)
    ]


def _strategic(item: Any, where: decode.Field) -> Mapping[str, Any]:
    patch = decode.mapping(item, where, required=("apiVersion", "kind", "metadata"))
    metadata = decode.mapping(patch["metadata"], where.key("metadata"), required=("name",))
    decode.string(metadata["name"], where.key("metadata").key("name"), empty=False)
    return patch


def _json_patch(item: Any, where: decode.Field) -> kustomize.JsonPatch:
    data = decode.mapping(item, where, allowed=("target", "patch"), required=("target", "patch"))
    target = decode.mapping(data["target"], where.key("target"))
    operations = decode.sequence(data["patch"], where.key("patch"))
    for index, operation in enumerate(operations):
        decode.mapping(operation, where.key("patch").index(index), required=("op", "path"))
    return kustomize.JsonPatch(target=target, operations=tuple(operations))


def digest_data(patches: Patches) -> dict[str, Any]:
    """Everything about `patches` that decides the output, for the render input digest."""
    return {
        "strategicMerge": [dict(patch) for patch in patches.strategic_merge],
        "json": [
            {"target": dict(p.target), "patch": [dict(op) for op in p.operations]}
            for p in patches.json_patches
        ],
        "transformers": [dict(config) for config in patches.transformers],
        "crds": None if patches.crds is None else [dict(config) for config in patches.crds],
    }


def apply(rendered: dict[str, str], patches: Patches) -> dict[str, str]:
    """Rendered templates (path → text) with `patches` applied by the locked-down kustomize.

    Objects keep the template path they came from; NOTES.txt and partials are
    left out, as `manifests` leaves them out.
    """
    if not patches:
        return rendered
    if patches.crds is not None:
        return _apply_sparing_crds(rendered, patches, patches.crds)
    origin: dict[tuple[str, str], str] = {}
    documents: list[dict[str, Any]] = []
    for template in sorted(rendered):
        name = posixpath.basename(template)
        if name == "NOTES.txt" or name.startswith("_"):
            continue
        for body in yamlio.load_documents(rendered[template], source=template, cache=False):
            documents.append(body)
            origin.setdefault(_identity(body), template)
    text = "---\n".join(yamlio.dump(document) for document in documents)
    try:
        patched = kustomize.patch_manifests(
            text,
            strategic_merge=patches.strategic_merge,
            json_patches=patches.json_patches,
            transformers=patches.transformers,
            source=patches.source,
        )
    except RenderError as error:
        raise RenderError(f"{patches.source}: patches: {error.message}") from None
    grouped: dict[str, list[str]] = {}
    for body in yamlio.load_documents(patched, source="kustomize output", cache=False):
        template = origin.get(_identity(body), "kustomize")
        grouped.setdefault(template, []).append(yamlio.dump(body))
    return {template: "---\n".join(texts) for template, texts in grouped.items()}


def _apply_sparing_crds(
    rendered: dict[str, str], patches: Patches, crds: tuple[Mapping[str, Any], ...]
) -> dict[str, str]:
    """Patches on the templates' output; only `crds` on the CRDs of crds/ directories."""
    templates = {path: text for path, text in rendered.items() if not _CRDS_DIR.match(path)}
    result = apply(templates, replace(patches, crds=None))
    definitions = {
        path: _only_crds(path, text) for path, text in rendered.items() if path not in templates
    }
    definitions = {path: text for path, text in definitions.items() if text}
    if definitions:
        result.update(apply(definitions, Patches(transformers=crds, source=patches.source)))
    return result


def _only_crds(template: str, text: str) -> str:
    documents = yamlio.load_documents(text, source=template, cache=False)
    kept = [
        yamlio.dump(body)
        for body in documents
        if body.get("kind") == "CustomResourceDefinition"
        and str(body.get("apiVersion", "")).startswith("apiextensions.k8s.io/")
    ]
    return "---\n".join(kept)


def _identity(body: Mapping[str, Any]) -> tuple[str, str]:
    # Patches may change an object's namespace or labels, never (usually) its kind and name.
    metadata = body.get("metadata") or {}
    return str(body.get("kind", "")), str(
        metadata.get("name", "") if isinstance(metadata, Mapping) else ""
    )
