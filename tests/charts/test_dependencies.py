"""`DependencyBuilder` on its own: missing dependencies from a real HTTP chart repository."""

from __future__ import annotations

import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from chartrepo import ChartRepository, write_chart

from reviewer.charts import DEPENDENCY_MISSING, ChartError, Credentials
from reviewer.charts.cache import ChartCache
from reviewer.charts.dependencies import DependencyBuilder
from reviewer.charts.http_source import HttpSource
from reviewer.charts.logins import Logins
from reviewer.charts.policy import NetworkPolicy
from reviewer.charts.workdir import WorkDir

LOOPBACK = NetworkPolicy(allow_loopback=True)


@pytest.fixture
def http_repo(tmp_path: Path) -> Iterator[ChartRepository]:
    with ChartRepository(tmp_path / "served") as server:
        server.publish(write_chart(tmp_path / "src", "demo", "1.0.0"), "1.0.0", "1.1.0")
        yield server


@pytest.fixture
def workdir() -> Iterator[WorkDir]:
    directory = WorkDir()
    yield directory
    directory.close()


def builder(tmp_path: Path, workdir: WorkDir) -> DependencyBuilder:
    logins = Logins(Credentials({}, []))
    return DependencyBuilder(
        HttpSource(ChartCache(tmp_path / "cache"), logins, timeout=10, policy=LOOPBACK), workdir
    )


def parent(root: Path, dependencies: str) -> Path:
    chart_yaml = f"apiVersion: v2\nname: parent\nversion: 0.1.0\ndependencies:\n{dependencies}"
    return write_chart(root / "charts", "parent", "0.1.0", {"Chart.yaml": chart_yaml})


def test_missing_dependencies_go_into_a_working_copy(
    tmp_path: Path, http_repo: ChartRepository, workdir: WorkDir
) -> None:
    root = tmp_path / "repo"
    chart = parent(root, f"  - name: demo\n    version: ~1.0\n    repository: {http_repo.url}\n")
    built = builder(tmp_path, workdir).build(chart, ref="parent", root=root)
    assert built != chart and built.is_relative_to(workdir.path())
    fetched = built / "charts" / "demo-1.0.0.tgz"
    with tarfile.open(fetched) as archive:
        assert "demo/Chart.yaml" in archive.getnames()
    assert not (chart / "charts").exists(), "the chart under review is untouched"
    workdir.close()
    assert not built.exists(), "closing removes the working copies"


def test_charts_without_missing_dependencies_are_used_in_place(
    tmp_path: Path, workdir: WorkDir
) -> None:
    plain = write_chart(tmp_path / "repo", "plain", "1.0.0")
    local = parent(tmp_path / "repo", "  - name: sub\n    version: 1.0.0\n")
    write_chart(local / "charts", "sub", "1.0.0")
    deps = builder(tmp_path, workdir)
    assert deps.build(plain, ref="plain", root=tmp_path / "repo") == plain
    assert deps.build(local, ref="parent", root=tmp_path / "repo") == local


def test_file_dependencies_stay_inside_the_checkout(tmp_path: Path, workdir: WorkDir) -> None:
    root = tmp_path / "repo"
    write_chart(root, "lib", "1.0.0")
    inside = parent(root, "  - name: lib\n    version: 1.0.0\n    repository: file://../../lib\n")
    built = builder(tmp_path, workdir).build(inside, ref="parent", root=root)
    assert (built / "charts" / "lib" / "Chart.yaml").is_file()
    with pytest.raises(ChartError) as caught:
        builder(tmp_path, workdir).build(inside, ref="parent", root=root / "charts")
    assert caught.value.reason == DEPENDENCY_MISSING
    assert "inside the repository" in str(caught.value)


def test_each_chart_is_built_once(
    tmp_path: Path, http_repo: ChartRepository, workdir: WorkDir
) -> None:
    root = tmp_path / "repo"
    chart = parent(root, f"  - name: demo\n    version: 1.1.0\n    repository: {http_repo.url}\n")
    deps = builder(tmp_path, workdir)
    first = deps.build(chart, ref="parent", root=root)
    assert deps.build(chart, ref="parent", root=root) == first
    assert http_repo.count(".tgz") == 1
