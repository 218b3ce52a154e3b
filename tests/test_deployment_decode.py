"""deployment.parse: a deployment.yaml mapping becomes a typed `DeploymentSpec`, or an error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reviewer import deployment
from reviewer.errors import ConfigError

SOURCE = "deployments/c/apps/a/deployment.yaml"


def parse(document: dict[str, Any], tmp_path: Path) -> deployment.DeploymentSpec:
    return deployment.parse(
        document,
        source=SOURCE,
        directory="deployments/c/apps/a",
        root=tmp_path,
        templates={"app", "team/web"},
    )


def test_apps_settings_and_labels_are_typed(tmp_path: Path) -> None:
    spec = parse(
        {
            "settings": {"namespace": "shop", "createNamespace": True},
            "apps": [
                {"template": "/team/web/", "name": "blue", "nameStyle": "suffix"},
                {"template": "app", "labels": {"tier": "web", "rank": 2, "canary": False}},
            ],
        },
        tmp_path,
    )
    assert spec.namespace == "shop"
    blue, app = spec.apps
    assert (blue.template, blue.name, blue.name_style, blue.field) == (
        "team/web",
        "blue",
        "suffix",
        "apps[0]",
    )
    assert (app.name, app.name_style, app.namespace) == ("app", "prefix", None)
    assert app.labels == {"tier": "web", "rank": "2", "canary": "false"}


@pytest.mark.parametrize(
    ("document", "field", "message"),
    [
        ({"apps": []}, "apps", "must be a non-empty list"),
        ({}, "apps", "is required"),
        ({"apps": {"template": "app"}}, "apps", "must be a list"),
        ({"apps": ["app"]}, "apps[0]", "must be a map"),
        ({"apps": [{"name": "x"}]}, "apps[0].template", "is required"),
        ({"apps": [{"template": "app", "name": ""}]}, "apps[0].name", "must not be empty"),
        ({"apps": [{"template": "app", "namespace": 7}]}, "apps[0].namespace", "must be a string"),
        ({"apps": [{"template": "app", "labels": ["a"]}]}, "apps[0].labels", "must be a map"),
        ({"settings": "x", "apps": [{"template": "app"}]}, "settings", "must be a map"),
        (
            {"settings": {"namespace": ["a"]}, "apps": [{"template": "app"}]},
            "settings.namespace",
            "must be a string",
        ),
        ({"app": []}, "app", "unknown field; allowed: apps, settings"),
    ],
)
def test_a_bad_field_is_named(
    tmp_path: Path, document: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse(document, tmp_path)
    assert caught.value.field == field
    assert message in caught.value.message
    assert str(caught.value).startswith(f"{SOURCE}: {field}: ")
