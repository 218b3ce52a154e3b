"""`.reviewer.yaml`: repository settings read into a `RepoConfig`, bad fields named."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewer import config
from reviewer.discover import Layout
from reviewer.errors import ConfigError
from reviewer.noise import NoiseRules


def write(root: Path, text: str, name: str = ".reviewer.yaml") -> Path:
    (root / name).write_text(text, encoding="utf-8")
    return root


def test_absent_file_gives_the_default_layout_and_no_noise_rules(tmp_path: Path) -> None:
    settings = config.load(tmp_path)
    assert settings.layout == Layout(definitions="deployments", templates="templates")
    assert settings.noise == NoiseRules()  # only the built-in defaults


def test_layout_and_noise_are_read(tmp_path: Path) -> None:
    write(
        tmp_path,
        "definitions: fleet/defs/\ntemplates: tpl\n"
        "noise: {labels: [helm.sh/chart], kinds: [Secret], annotations: [checksum/*]}\n",
    )
    settings = config.load(tmp_path)
    assert settings.layout == Layout(definitions="fleet/defs", templates="tpl")
    assert settings.noise.labels == ("helm.sh/chart",)
    assert settings.noise.annotations == ("checksum/*",)
    assert settings.noise.kinds == ("Secret",)


def test_a_named_settings_file_is_read_and_must_exist(tmp_path: Path) -> None:
    (tmp_path / "ci").mkdir()
    write(tmp_path, "templates: other\n", name="ci/review.yaml")
    assert config.load(tmp_path, "ci/review.yaml").layout.templates == "other"
    with pytest.raises(ConfigError) as failure:
        config.load(tmp_path, "missing.yaml")
    assert failure.value.file == "missing.yaml"


def test_a_settings_file_outside_the_repository_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    write(tmp_path, "templates: t\n", name="outside.yaml")
    with pytest.raises(ConfigError) as failure:
        config.load(root, "../outside.yaml")
    assert failure.value.field == "config"


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("colour: true\n", "colour"),
        ("definitions: /etc\n", "definitions"),
        ("definitions: ../up\n", "definitions"),
        ("templates: ''\n", "templates"),
        ("templates: [a]\n", "templates"),
        ("noise: [labels]\n", "noise"),
        ("noise: {colours: [x]}\n", "noise"),
        ("noise: {labels: notalist}\n", "noise.labels"),
        ("noise: {paths: ['[unclosed']}\n", "noise.paths[0]"),
    ],
)
def test_bad_fields_name_the_file_and_the_field(tmp_path: Path, text: str, field: str) -> None:
    write(tmp_path, text)
    with pytest.raises(ConfigError) as failure:
        config.load(tmp_path)
    assert failure.value.file == ".reviewer.yaml"
    assert failure.value.field == field


def test_malformed_yaml_names_the_file_and_line(tmp_path: Path) -> None:
    write(tmp_path, "templates: t\nnoise: {labels: [a\n")
    with pytest.raises(ConfigError) as failure:
        config.load(tmp_path)
    assert failure.value.file is not None
    assert failure.value.file.startswith(".reviewer.yaml:")


def test_command_line_layout_wins_over_the_file_which_wins_over_defaults(tmp_path: Path) -> None:
    settings = config.load(write(tmp_path, "definitions: defs\ntemplates: tpl\n"))
    assert config.with_overrides(settings, definitions=None, templates=None) == Layout(
        "defs", "tpl"
    )
    assert config.with_overrides(settings, definitions="cli", templates=None) == Layout(
        "cli", "tpl"
    )
    assert config.with_overrides(config.RepoConfig(), definitions=None, templates="t2") == Layout(
        "deployments", "t2"
    )
