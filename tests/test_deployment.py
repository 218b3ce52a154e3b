"""deployment.yaml decoded into a `DeploymentSpec`; every bad field named with its file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reviewer import deployment, yamlio
from reviewer.deployment import DeploymentSpec
from reviewer.errors import ConfigError

SOURCE = "deployments/c1/apps/web/deployment.yaml"
DIRECTORY = "deployments/c1/apps/web"
TEMPLATES = {"app", "platform/ingress"}


def parse(root: Path, text: str) -> DeploymentSpec:
    document: dict[str, Any] = yamlio.load_mapping(text, source=SOURCE)
    return deployment.parse(
        document, source=SOURCE, directory=DIRECTORY, root=root, templates=TEMPLATES
    )


def test_an_app_gets_defaults_for_name_style_and_namespace(tmp_path: Path) -> None:
    spec = parse(tmp_path, "apps: [{template: /platform/ingress/}]\n")
    (app,) = spec.apps
    assert (app.template, app.name, app.name_style, app.namespace) == (
        "platform/ingress",
        "ingress",
        "prefix",
        None,
    )
    assert (app.values, app.secrets, app.labels) == ((), (), {})
    assert spec.namespace is None


def test_values_are_deployment_relative_files_or_inline_maps(tmp_path: Path) -> None:
    spec = parse(
        tmp_path,
        "settings: {namespace: team}\n"
        "apps:\n"
        "  - template: app\n"
        "    name: api\n"
        "    nameStyle: suffix\n"
        "    values: [../../shared.yaml, {replicas: 2}]\n"
        "    secrets: [secret.sops.yaml]\n"
        "    labels: {tier: 1, public: true}\n",
    )
    (app,) = spec.apps
    assert spec.namespace == "team"
    assert (app.name, app.name_style, app.field) == ("api", "suffix", "apps[0]")
    assert [(v.file, v.inline, v.field) for v in app.values] == [
        ("deployments/c1/shared.yaml", None, "apps[0].values[0]"),
        (None, {"replicas": 2}, "apps[0].values[1]"),
    ]
    assert [s.file for s in app.secrets] == ["deployments/c1/apps/web/secret.sops.yaml"]
    assert app.labels == {"tier": "1", "public": "true"}


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("apps: [{template: app}]\nextra: 1\n", "extra"),
        ("apps: []\n", "apps"),
        ("settings: {}\n", "apps"),
        ("settings: [a]\napps: [{template: app}]\n", "settings"),
        ("settings: {namespace: 3}\napps: [{template: app}]\n", "settings.namespace"),
        ("apps: [app]\n", "apps[0]"),
        ("apps: [{name: x}]\n", "apps[0].template"),
        ("apps: [{template: app}, {template: apps}]\n", "apps[1].template"),
        ("apps: [{template: app, name: Web_1}]\n", "apps[0].name"),
        ("apps: [{template: app, nameStyle: infix}]\n", "apps[0].nameStyle"),
        ("apps: [{template: app, namespace: ''}]\n", "apps[0].namespace"),
        ("apps: [{template: app, colour: red}]\n", "apps[0].colour"),
        ("apps: [{template: app, labels: [a]}]\n", "apps[0].labels"),
        ("apps: [{template: app, values: file.yaml}]\n", "apps[0].values"),
        ("apps: [{template: app, values: [/etc/passwd]}]\n", "apps[0].values[0]"),
        ("apps: [{template: app, values: [../../../../../x.yaml]}]\n", "apps[0].values[0]"),
        ("apps: [{template: app, secrets: [{inline: no}]}]\n", "apps[0].secrets[0]"),
    ],
)
def test_bad_fields_name_the_file_and_the_field(tmp_path: Path, text: str, field: str) -> None:
    with pytest.raises(ConfigError) as failure:
        parse(tmp_path, text)
    assert failure.value.file == SOURCE
    assert failure.value.field == field


def test_unknown_template_suggests_close_names(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as failure:
        parse(tmp_path, "apps: [{template: ap}]\n")
    assert failure.value.hint is not None
    assert "app" in failure.value.hint
