"""The render stage alone: a plan rendered once per distinct input (`reviewer.render`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import DUMP_CHART, Repo
from stages import plan_repo

from reviewer.model import ReleaseId, Snapshot
from reviewer.render import RenderCache, render_plan
from reviewer.tooling import Tooling, Tools, open_tooling

APP = "apps: [{template: app}]\n"


@pytest.fixture
def tools(tmp_path: Path) -> Iterator[Tools]:
    """The embedded engine and a chart fetcher, as one run opens them."""
    with open_tooling(Tooling(cache_dir=tmp_path / "chart-cache")) as opened:
        yield opened


def render(repo: Repo, tools: Tools, cache: RenderCache) -> Snapshot:
    return render_plan(
        plan_repo(repo.root), root=repo.root, fetcher=tools.fetcher, pool=tools.pool, cache=cache
    )


def objects(snapshot: Snapshot, cluster: str) -> list[dict[str, object]]:
    found = snapshot.by_id()[ReleaseId(cluster, "web", "app")]
    assert found.error is None, found.error
    return [resource.body for resource in found.resources]


def test_identical_inputs_render_once_and_each_release_gets_the_objects(
    repo: Repo, tools: Tools
) -> None:
    for cluster in ("a", "b", "c"):
        repo.write(f"deployments/{cluster}/apps/web/deployment.yaml", APP)
    cache = RenderCache()
    snapshot = render(repo, tools, cache)
    # The dump chart sees the cluster only through the atlas context: three distinct inputs.
    assert (cache.rendered, cache.reused) == (3, 0)
    assert [str(release.id) for release in snapshot.releases] == [
        "a/web/app",
        "b/web/app",
        "c/web/app",
    ]
    again = render(repo, tools, cache)
    assert (cache.rendered, cache.reused) == (3, 3), "a second side with the same inputs reuses"
    assert again == snapshot


def test_a_changed_value_renders_again_and_only_that_release(tmp_path: Path, tools: Tools) -> None:
    base = Repo(tmp_path / "base").add_chart().add_template()
    head = Repo(tmp_path / "head").add_chart().add_template()
    for repo in (base, head):
        repo.write("deployments/a/apps/web/deployment.yaml", APP)
        repo.write("deployments/b/apps/web/deployment.yaml", APP)
    head.write("deployments/b/cluster.values.yaml", "replicas: 3\n")
    cache = RenderCache()
    first = render(base, tools, cache)
    second = render(head, tools, cache)
    assert (cache.rendered, cache.reused) == (3, 1)
    assert objects(first, "a") == objects(second, "a")
    assert objects(first, "b") != objects(second, "b")


def test_the_chart_content_is_part_of_the_digest(tmp_path: Path, tools: Tools) -> None:
    base = Repo(tmp_path / "base").add_chart().add_template()
    edited = {**DUMP_CHART, "values.yaml": "extra: from-the-chart\n"}
    head = Repo(tmp_path / "head").add_chart(files=edited).add_template()
    for repo in (base, head):
        repo.write("deployments/a/apps/web/deployment.yaml", APP)
    cache = RenderCache()
    render(base, tools, cache)
    render(head, tools, cache)
    assert (cache.rendered, cache.reused) == (2, 0)


def test_a_release_that_cannot_render_fails_alone(repo: Repo, tools: Tools) -> None:
    failing = {
        "Chart.yaml": "apiVersion: v2\nname: failing\nversion: 1.0.0\n",
        "templates/fail.yaml": '{{ fail "no database configured" }}\n',
    }
    repo.add_chart("charts/failing", failing)
    repo.add_template("broken", "releases: [{name: app, chart: ../../charts/failing}]\n")
    repo.write("deployments/a/apps/web/deployment.yaml", APP)
    repo.write("deployments/b/apps/web/deployment.yaml", "apps: [{template: broken}]\n")
    snapshot = render(repo, tools, RenderCache())
    by_id = snapshot.by_id()
    assert by_id[ReleaseId("a", "web", "app")].error is None
    failed = by_id[ReleaseId("b", "web", "app")]
    assert failed.error is not None and "no database configured" in failed.error
    assert failed.resources == ()
    assert snapshot.failed == [failed]


def test_a_deployment_that_fails_to_plan_is_listed_as_failed(repo: Repo, tools: Tools) -> None:
    repo.write("deployments/a/apps/web/deployment.yaml", APP)
    repo.write("deployments/b/apps/web/deployment.yaml", "apps: [{template: nosuch}]\n")
    snapshot = render(repo, tools, RenderCache())
    assert [str(release.id) for release in snapshot.releases if release.error is None] == [
        "a/web/app"
    ]
    (failed,) = snapshot.failed
    assert failed.id.cluster == "b" and failed.error is not None and "nosuch" in failed.error
