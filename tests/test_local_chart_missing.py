"""A local chart that does not exist is named by its repository path, not the checkout's."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import GitRepo
from flux_repo import chart_spec, helmrelease
from test_secrets import render_out

from reviewer import yamlio
from reviewer.errors import ExitStatus


def _git_repository() -> str:
    return yamlio.dump(
        {
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "GitRepository",
            "metadata": {"name": "fleet", "namespace": "apps"},
            "spec": {"url": "https://git.invalid/fleet", "interval": "10m"},
        }
    )


def test_missing_chart_directory_is_named_relative_to_the_repository(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = GitRepo(tmp_path / "fleet")
    repo.write("clusters/prod/source.yaml", _git_repository())
    repo.write(
        "clusters/prod/app.yaml",
        helmrelease("web", chart=chart_spec("./charts/missing", "fleet", kind="GitRepository")),
    )
    repo.commit("fleet")
    code, text = render_out(repo, tmp_path / "out")
    err = capsys.readouterr().err
    assert code == ExitStatus.RENDER_FAILED, err
    errors = [line for line in (text + err).splitlines() if "charts/missing" in line]
    assert any("chart 'charts/missing': chart not found" in line for line in errors), errors
    # The error names no checkout: neither where it lives nor a temporary copy.
    assert not [line for line in errors if "/tmp/" in line and "reviewer render" not in line]
