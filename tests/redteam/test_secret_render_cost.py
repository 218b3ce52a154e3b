"""What rendering twins costs: nothing without SOPS, one extra render per secret-bearing release."""

from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

import pytest
from agekeys import encrypt, isolate_sops_key
from conftest import Repo
from redteam_support import BASE_TEMPLATE, CHART_YAML

from reviewer.prepare import SideRequest, prepare_sides
from reviewer.proc import Programs
from reviewer.render import RenderCache
from reviewer.side import ProgressBar, SideOptions


def engine_renders(root: Path) -> int:
    caches: list[RenderCache] = []

    def watch(index: int, cache: RenderCache) -> AbstractContextManager[ProgressBar]:
        caches.append(cache)
        return nullcontext(lambda total: nullcontext(lambda: None))

    # The environment as the CLI's edge hands it down: sops finds the test's key there.
    request = SideRequest(options=SideOptions(programs=Programs.from_environment(os.environ)))
    prepare_sides((root,), request, config_root=root, marker_key=None, watch=watch)
    (cache,) = caches
    return cache.rendered


@pytest.fixture
def three_releases(tmp_path: Path) -> Repo:
    repo = Repo(tmp_path / "repo")
    repo.write("charts/app/Chart.yaml", CHART_YAML)
    repo.write("charts/app/values.yaml", "db: {user: nobody}\n")
    repo.write("charts/app/templates/base.yaml", BASE_TEMPLATE)
    repo.write("templates/svc/helmfile.yaml", "releases: [{name: svc, chart: ../../charts/app}]\n")
    for cluster in ("a", "b", "c"):
        repo.write(f"deployments/{cluster}/apps/d/deployment.yaml", "apps: [{template: svc}]\n")
        repo.write(f"deployments/{cluster}/cluster.values.yaml", f"where: {cluster}\n")
    return repo


def test_a_fleet_without_sops_renders_each_release_once(three_releases: Repo) -> None:
    assert engine_renders(three_releases.root) == 3


def test_each_release_that_receives_a_secret_renders_once_more(
    three_releases: Repo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    identity = isolate_sops_key(monkeypatch, tmp_path)
    target = three_releases.root / "deployments/a/apps/d"
    encrypt(target, {"db": {"user": "Zq8-Long-Secret"}}, identity, name="values.sops.yaml")
    assert engine_renders(three_releases.root) == 4
