""".reviewer.yaml: a bad setting stops the run with exit 3 naming the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Repo

from reviewer import config
from reviewer.cli import main
from reviewer.errors import ExitStatus


def render(repo: Repo, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[object, str]:
    """Run `reviewer render`: its exit status and standard error."""
    with pytest.raises(SystemExit) as done:
        main(["render", str(repo.root), "--out", str(out)])
    return done.value.code, capsys.readouterr().err


def test_settings_choose_the_layout_and_noise(repo: Repo, tmp_path: Path) -> None:
    repo.write(".reviewer.yaml", "definitions: fleet/\nnoise: {kinds: [Event]}\n")
    settings = config.load(repo.root)
    assert settings.layout.definitions == "fleet"
    assert settings.layout.templates == "templates"
    assert settings.noise.kinds == ("Event",)
    assert config.load(tmp_path) == config.RepoConfig()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("definitons: fleet\n", "definitons: unknown field; allowed: definitions, templates"),
        ("definitions: [a, b]\n", "definitions: must be a string"),
        ("templates: ../elsewhere\n", "templates: must be a relative directory"),
        ("noise: [kinds]\n", "noise: must be a map"),
        ("noise: {kinds: Event}\n", "noise.kinds: must be a list"),
    ],
)
def test_a_bad_setting_exits_3_naming_file_and_field(
    repo: Repo, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    repo.write("deployments/c/apps/a/deployment.yaml", "apps: [{template: app}]\n")
    repo.write(".reviewer.yaml", text)
    code, stderr = render(repo, tmp_path / "out", capsys)
    assert code == ExitStatus.INVALID_REPOSITORY
    assert f"error: .reviewer.yaml: {expected}" in stderr
    assert not (tmp_path / "out" / "index.json").exists()


def test_the_same_repository_renders_without_the_bad_setting(
    repo: Repo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("deployments/c/apps/a/deployment.yaml", "apps: [{template: app}]\n")
    repo.write(".reviewer.yaml", "definitions: deployments\n")
    code, _ = render(repo, tmp_path / "out", capsys)
    assert code == ExitStatus.OK
    index = json.loads((tmp_path / "out" / "index.json").read_text(encoding="utf-8"))
    assert [entry["release"] for entry in index["releases"]] == ["app"]
