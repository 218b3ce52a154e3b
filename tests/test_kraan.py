"""Kraan layers: AddonsLayers over directories, labels, moves and duplicates."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from reviewer import yamlio
from reviewer.diff.pairing import find_release_moves
from reviewer.errors import ConfigError
from reviewer.model import ReleaseId
from reviewer.sources import kraan


def write(root: Path, files: Mapping[str, Any]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yamlio.dump(content), encoding="utf-8")


def layer(name: str, path: str, version: str = "0.1.0") -> dict[str, Any]:
    return {
        "apiVersion": "kraan.io/v1alpha1",
        "kind": "AddonsLayer",
        "metadata": {"name": name},
        "spec": {
            "version": version,
            "source": {"name": "addons", "namespace": "gitops-system", "path": path},
            "prereqs": {"dependsOn": []},
        },
    }


def release(name: str, **extra: Any) -> dict[str, Any]:
    metadata = {"name": name, "namespace": "apps", **extra.pop("metadata", {})}
    spec = {"chart": {"spec": {"chart": name}}, **extra}
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": metadata,
        "spec": spec,
    }


def read_layers(root: Path, *names: str) -> list[kraan.Layer]:
    layers = []
    for name in names:
        source = f"layers/{name}.yaml"
        document = yamlio.read_mapping(root / source, source=source)
        assert kraan.is_addons_layer(document)
        layers.append(kraan.decode_layer(document, source=source))
    return layers


def test_layer_objects_are_labelled_as_kraan_labels_them(tmp_path: Path) -> None:
    repository = {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "HelmRepository",
        "metadata": {"name": "charts", "namespace": "apps"},
        "spec": {"url": "http://127.0.0.1/"},
    }
    write(
        tmp_path,
        {
            "layers/base.yaml": layer("base", "./addons/base", version="1.2.3"),
            "addons/base/a/podinfo.yaml": release(
                "podinfo",
                suspend=True,
                values={"x": 1},
                metadata={"annotations": {"kraan.updateVersion": "true"}},
            ),
            "addons/base/repo.yaml": repository,
            "addons/base/config.yaml": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "ignored"},
            },
        },
    )
    objects = kraan.layer_objects(tmp_path, read_layers(tmp_path, "base"))
    assert [(o.file, o.document["kind"]) for o in objects] == [
        ("addons/base/a/podinfo.yaml", "HelmRelease"),
        ("addons/base/repo.yaml", "HelmRepository"),
    ]
    podinfo = objects[0].document
    assert podinfo["metadata"]["labels"] == {"kraan/layer": "base"}
    assert "suspend" not in podinfo["spec"]
    assert podinfo["spec"]["values"] == {"x": 1, "kraanVersion": "1.2.3"}
    assert objects[1].document["metadata"]["labels"] == {"kraan/layer": "base"}


def test_layer_with_a_kustomization_is_built_with_kustomize(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "layers/apps.yaml": layer("apps", "./addons/apps"),
            "addons/apps/kustomization.yaml": {"resources": ["podinfo.yaml"], "namePrefix": "k-"},
            "addons/apps/podinfo.yaml": release("podinfo"),
        },
    )
    objects = kraan.layer_objects(tmp_path, read_layers(tmp_path, "apps"))
    assert [o.identity for o in objects] == [("HelmRelease", "apps", "k-podinfo")]
    assert objects[0].file == "addons/apps"


def test_same_helmrelease_in_two_layers_is_an_error_naming_both_files(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "layers/base.yaml": layer("base", "./addons/base"),
            "layers/apps.yaml": layer("apps", "./addons/apps"),
            "addons/base/podinfo.yaml": release("podinfo"),
            "addons/apps/copy.yaml": release("podinfo"),
        },
    )
    with pytest.raises(ConfigError) as caught:
        kraan.layer_objects(tmp_path, read_layers(tmp_path, "base", "apps"))
    message = str(caught.value)
    assert "addons/base/podinfo.yaml" in message
    assert "addons/apps/copy.yaml" in message
    assert "also included in layer" in message


def test_a_helmrelease_that_changes_layer_is_a_move(tmp_path: Path) -> None:
    base_side, head_side = tmp_path / "base", tmp_path / "head"
    for side, home in ((base_side, "base"), (head_side, "apps")):
        write(
            side,
            {
                "layers/base.yaml": layer("base", "./addons/base"),
                "layers/apps.yaml": layer("apps", "./addons/apps"),
                f"addons/{home}/podinfo.yaml": release("podinfo"),
                "addons/base/stays.yaml": release("stays"),
                "addons/apps/notes.yaml": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "notes"},
                },
            },
        )
    base = kraan.layer_objects(base_side, read_layers(base_side, "base", "apps"))
    head = kraan.layer_objects(head_side, read_layers(head_side, "base", "apps"))
    assert kraan.layer_moves(base, head) == [
        kraan.LayerMove("HelmRelease", "apps", "podinfo", base_layer="base", head_layer="apps")
    ]
    assert sorted(kraan.grouped_by_layer(head)) == ["apps", "base"]
    # At the release level the same pair is a move, not a deletion and an addition.
    old = [ReleaseId("addons", "base", "apps/podinfo"), ReleaseId("addons", "base", "apps/stays")]
    new = [ReleaseId("addons", "apps", "apps/podinfo"), ReleaseId("addons", "base", "apps/stays")]
    assert find_release_moves(old, new) == [(old[0], new[0])]


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"version": "1", "source": {"path": "addons"}}, "spec.source.path"),
        ({"version": "1", "source": {"path": "./x", "kind": "Bucket"}}, "spec.source.kind"),
        ({"source": {"path": "./x"}}, "spec.version"),
    ],
)
def test_invalid_layers_name_the_field(spec: dict[str, Any], field: str) -> None:
    document = {
        "apiVersion": "kraan.io/v1alpha1",
        "kind": "AddonsLayer",
        "metadata": {"name": "l"},
        "spec": spec,
    }
    with pytest.raises(ConfigError, match=field):
        kraan.decode_layer(document, source="layers/l.yaml")
