"""Charts that may render differently twice are rendered again; the others are not."""

from __future__ import annotations

import shutil
from pathlib import Path

from chartrepo import package, write_chart
from conftest import DUMP_CHART, Repo
from test_nondeterminism import RANDOM_CHART

from reviewer.gotmpl import TemplateRenderer
from reviewer.render import render_again
from reviewer.side import SideOptions, plan_side
from reviewer.tooling import Tooling, open_tooling
from reviewer.unstable import chart_may_vary

UUID_TEMPLATE = {"templates/id.yaml": "id: {{ uuidv4 }}\n"}


def test_a_chart_calling_a_random_function_may_vary_and_a_plain_one_does_not(
    tmp_path: Path,
) -> None:
    assert chart_may_vary(write_chart(tmp_path, "random", "1.0.0", RANDOM_CHART))
    plain = write_chart(tmp_path, "plain", "1.0.0")
    assert not chart_may_vary(plain)
    assert not chart_may_vary(package(plain, tmp_path / "archives"))


def test_a_random_function_in_a_packaged_subchart_is_found(tmp_path: Path) -> None:
    inner = write_chart(tmp_path / "src", "inner", "0.1.0", UUID_TEMPLATE)
    outer = write_chart(tmp_path / "src", "outer", "1.0.0")
    package(inner, outer / "charts")
    assert chart_may_vary(outer)
    assert chart_may_vary(package(outer, tmp_path / "archives"))
    shutil.rmtree(outer / "charts")
    assert not chart_may_vary(outer)


def test_an_unreadable_archive_may_vary(tmp_path: Path) -> None:
    broken = tmp_path / "broken-1.0.0.tgz"
    broken.write_bytes(b"\x1f\x8b not really gzip")
    assert chart_may_vary(broken)


def test_only_releases_whose_chart_may_vary_are_rendered_again(repo: Repo, tmp_path: Path) -> None:
    repo.add_chart("charts/random", RANDOM_CHART).add_chart("charts/dump", DUMP_CHART)
    repo.add_template("random", "releases:\n  - name: random\n    chart: ../../charts/random\n")
    repo.add_template("plain", "releases:\n  - name: plain\n    chart: ../../charts/dump\n")
    repo.write(
        "deployments/prod/apps/web/deployment.yaml",
        "apps: [{template: random}, {template: plain}]\n",
    )
    plan = plan_side(repo.root, options=SideOptions(), renderer=TemplateRenderer())
    assert sorted(r.id.release for r in plan.releases) == ["plain", "random"]
    with open_tooling(Tooling(cache_dir=tmp_path / "charts", jobs=1)) as tools:
        again = render_again(
            plan.releases, root=repo.root, fetcher=tools.fetcher, pool=tools.pool, cache=tools.cache
        )
    assert [rid.release for rid in again] == ["random"]
    assert again[next(iter(again))].error is None
