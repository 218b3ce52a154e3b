"""The shared data types: identities as reviewers read them, objects keyed from their manifests."""

from __future__ import annotations

import dataclasses

import pytest

from reviewer.errors import ConfigError
from reviewer.model import ReleaseId, RenderedRelease, Resource, ResourceKey, Snapshot


def test_identities_read_as_paths_and_kinds() -> None:
    assert str(ReleaseId("eu/prod-1", "shop", "web")) == "eu/prod-1/shop/web"
    assert str(ResourceKey("apps", "Deployment", "shop", "web")) == "Deployment.apps shop/web"
    assert str(ResourceKey("", "Namespace", "", "shop")) == "Namespace shop"


def test_a_resource_is_keyed_by_api_group_kind_namespace_and_name() -> None:
    body = {"kind": "Deployment", "apiVersion": "apps/v1", "metadata": {"name": "web"}}
    resource = Resource.from_body(body, source="web/templates/deploy.yaml")
    assert resource.key == ResourceKey("apps", "Deployment", "", "web")
    assert resource.api_version == "apps/v1"
    assert resource.text().startswith("apiVersion: apps/v1\nkind: Deployment\n")


@pytest.mark.parametrize(
    ("source", "from_crds"),
    [
        ("web/crds/thing.yaml", True),
        ("web/charts/sub/crds/thing.yaml", True),
        ("web/templates/crds/thing.yaml", False),
    ],
)
def test_objects_from_a_charts_crds_directory_are_marked(source: str, from_crds: bool) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    assert Resource.from_body(body, source=source).from_crds is from_crds


def test_rendered_data_cannot_be_changed_after_it_is_built() -> None:
    release = RenderedRelease(ReleaseId("c", "d", "r"), namespace="ns")
    snapshot = Snapshot(releases=(release,))
    with pytest.raises(dataclasses.FrozenInstanceError):
        release.error = "late"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        snapshot.warnings = ("late",)  # type: ignore[misc]
    assert (release.status, snapshot.failed) == ("rendered", [])


@pytest.mark.parametrize(
    ("body", "field", "expected"),
    [
        ({"kind": "Service", "metadata": 5}, "metadata", "a map"),
        ({"kind": ["Service"], "metadata": {"name": "x"}}, "kind", "a string"),
        ({"apiVersion": 1, "kind": "Service"}, "apiVersion", "a string"),
        ({"kind": "Service", "metadata": {"name": {"a": "s3cr3t"}}}, "metadata.name", "a string"),
        ({"kind": "Service", "metadata": {"namespace": ["x"]}}, "metadata.namespace", "a string"),
        (
            {"kind": "Service", "metadata": {"namespace": False}},
            "metadata.namespace",
            "a string, not a boolean",
        ),
    ],
)
def test_an_object_whose_identity_has_the_wrong_type_is_refused_naming_the_field(
    body: dict[str, object], field: str, expected: str
) -> None:
    """Kubernetes refuses such an object; reviewer once crashed on `metadata: 5` and showed
    Python's spelling of a list (`['Service'] x`) as a kind."""
    with pytest.raises(ConfigError) as refused:
        Resource.from_body(body, source="shop/web/service.yaml")
    message = refused.value.render()
    assert message.startswith(f"shop/web/service.yaml: {field}: must be {expected}")
    assert "s3cr3t" not in message
