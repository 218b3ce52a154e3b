"""Regressions found by reviewing a real-world Flux fleet layout (clusters/, apps/base with
overlays patching a HelmRelease, infrastructure/): repositories written here that reproduce
its shapes, the real kustomize and the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import GitRepo
from flux_repo import chart_spec, helm_repository, helmrelease
from test_flux_kustomization_kind import SOURCES, flux_kustomization
from test_secrets import render_out

from reviewer.errors import ExitStatus


def test_a_kustomization_from_an_external_artifact_is_refused_naming_its_source_ref(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = GitRepo(tmp_path / "fleet")
    repo.write(".reviewer.yaml", SOURCES)
    # `./web` is relative to the artifact an ArtifactGenerator assembles; a directory of
    # that name in the checkout must not be built in its place.
    repo.write(
        "clusters/prod/apps.yaml",
        flux_kustomization(
            "apps", path="./web", sourceRef={"kind": "ExternalArtifact", "name": "apps"}
        ),
    )
    repo.write("web/web.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n")
    code, _ = render_out(repo, tmp_path / "out")
    err = capsys.readouterr().err
    assert code == ExitStatus.RENDER_FAILED
    assert (
        "clusters/prod/apps.yaml: spec.sourceRef.kind: ExternalArtifact is not supported: "
        "spec.path is relative to that artifact, not to this repository"
    ) in err
    assert "prod/flux-system/apps/kustomization" in err
