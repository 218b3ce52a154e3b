"""Repository-relative paths: resolved against a base directory, never outside the repository."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reviewer.errors import ConfigError
from reviewer.paths import inside


def test_relative_paths_resolve_against_the_base_directory(tmp_path: Path) -> None:
    assert inside(tmp_path, "a/b", "c.yaml", file="f", field="x") == "a/b/c.yaml"
    assert inside(tmp_path, "a/b", "../c.yaml", file="f", field="x") == "a/c.yaml"
    assert inside(tmp_path, ".", "./a//c.yaml", file="f", field="x") == "a/c.yaml"


@pytest.mark.parametrize(
    ("base", "relative"), [("a", "/etc/passwd"), (".", "../outside.yaml"), ("a", "b/../../../x")]
)
def test_paths_that_leave_the_repository_are_refused(
    tmp_path: Path, base: str, relative: str
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    with pytest.raises(ConfigError) as failure:
        inside(root, base, relative, file="deployment.yaml", field="apps[0].values[0]")
    assert failure.value.file == "deployment.yaml"
    assert failure.value.field == "apps[0].values[0]"


def test_a_symlink_pointing_outside_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (tmp_path / "secret.yaml").write_text("a: 1\n")
    os.symlink(tmp_path / "secret.yaml", root / "link.yaml")
    with pytest.raises(ConfigError, match="leaves the repository"):
        inside(root, ".", "link.yaml", file="f", field="x")


def test_a_symlink_inside_resolves_to_its_target(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "v.yaml").write_text("a: 1\n")
    os.symlink(tmp_path / "real", tmp_path / "alias")
    assert inside(tmp_path, "alias", "v.yaml", file="f", field="x") == "real/v.yaml"
