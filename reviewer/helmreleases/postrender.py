"""helm-controller's post-render chain as built-in kustomize transformers.

First, unless `spec.test.enable`, the chart's test hooks are dropped: an install or
upgrade never creates them, only `helm test` does (and they often carry random names,
which would show as changes on every render). Then, in order: each
`postRenderers[i].kustomize` (its patches with their target
selectors, then its images), then `commonMetadata` labels and annotations on
every object, then the `helm.toolkit.fluxcd.io/name|namespace` labels on every
object (last, so they win over a common label of the same key). The render stage
runs them through the locked-down kustomize after Helm. A chart's crds/ are not
post-rendered: helm-controller applies them itself with the origin labels only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reviewer.helmreleases.objects import HELM_GROUP, HelmRelease, KustomizePostRenderer
from reviewer.postrender import Patches

_METADATA_SPEC = "metadata/{}"
# Helm's test hook annotation values (`test-success` is Helm 2's name, still accepted).
_TEST_HOOKS = "helm.sh/hook in (test,test-success)"
_DROP_TEST_HOOKS: dict[str, Any] = {
    "apiVersion": "builtin",
    "kind": "PatchTransformer",
    "metadata": {"name": "test-hooks"},
    # With a target, kustomize applies the patch to every match whatever its kind and name.
    "patch": "$patch: delete\napiVersion: v1\nkind: Pod\nmetadata:\n  name: test-hook\n",
    "target": {"annotationSelector": _TEST_HOOKS},
}


def origin_labels(release: HelmRelease) -> dict[str, str]:
    """The labels helm-controller puts on every object it renders for `release`."""
    return {f"{HELM_GROUP}/name": release.name, f"{HELM_GROUP}/namespace": release.namespace}


def transformers(release: HelmRelease) -> tuple[dict[str, Any], ...]:
    """The kustomize transformer configs of `release`'s post-render chain, in order."""
    configs: list[dict[str, Any]] = [] if release.tests_enabled else [_DROP_TEST_HOOKS]
    for index, renderer in enumerate(release.post_renderers):
        configs.extend(_kustomize(renderer, index))
    if release.common_labels:
        configs.append(_metadata("LabelTransformer", "labels", release.common_labels, "common"))
    if release.common_annotations:
        configs.append(
            _metadata("AnnotationsTransformer", "annotations", release.common_annotations, "common")
        )
    configs.append(_metadata("LabelTransformer", "labels", origin_labels(release), "origin"))
    return tuple(configs)


def patches(release: HelmRelease) -> Patches:
    """The post-render chain as the `Patches` the render stage applies; the chart's CRDs
    get the origin labels only (helm-controller applies them itself, not post-rendered)."""
    origin = _metadata("LabelTransformer", "labels", origin_labels(release), "origin")
    return Patches(transformers=transformers(release), source=release.file, crds=(origin,))


def _kustomize(renderer: KustomizePostRenderer, index: int) -> list[dict[str, Any]]:
    configs: list[dict[str, Any]] = []
    for number, patch in enumerate(renderer.patches):
        config: dict[str, Any] = {
            "apiVersion": "builtin",
            "kind": "PatchTransformer",
            "metadata": {"name": f"post-renderer-{index}-patch-{number}"},
            "patch": patch.patch,
        }
        if patch.target:
            config["target"] = dict(patch.target)
        configs.append(config)
    for number, image in enumerate(renderer.images):
        configs.append(
            {
                "apiVersion": "builtin",
                "kind": "ImageTagTransformer",
                "metadata": {"name": f"post-renderer-{index}-image-{number}"},
                "imageTag": {key: value for key, value in image.items() if value},
            }
        )
    return configs


def _metadata(kind: str, field: str, entries: Mapping[str, str], name: str) -> dict[str, Any]:
    return {
        "apiVersion": "builtin",
        "kind": kind,
        "metadata": {"name": f"{name}-{field}"},
        field: dict(entries),
        "fieldSpecs": [{"path": _METADATA_SPEC.format(field), "create": True}],
    }
