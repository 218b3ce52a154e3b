"""The fast path: deployments whose inputs a change leaves alone are not rendered again.

Whatever it skips, the text and Markdown reports are byte for byte the ones
`--no-fast-path` gives, which plans and renders everything on both sides, and so
is the JSON report, but for the object count of the releases neither side
rendered (`unchangedResources` is null for those: docs/cache.md, "Not rendered").
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
from conftest import DUMP_CHART, GitRepo, Repo
from test_nested_releases import FLEET_SOURCE, HIERARCHY_BOOTSTRAP, LEAF

from reviewer.changes import changes_between
from reviewer.cli import main
from reviewer.errors import ExitStatus
from reviewer.filedigests import file_digests
from reviewer.gotmpl import TemplateRenderer
from reviewer.reuse import Reuse
from reviewer.side import SideOptions, plan_twins, render_side
from reviewer.tooling import Tooling, open_tooling

EXAMPLE = Path(__file__).parent.parent / "examples" / "fleet"
BENCHMARKS = Path(__file__).parent.parent / "benchmarks"


def _diff(repo: Path, out: Path, output_format: str, *extra: str) -> bytes:
    """The report of `reviewer diff --base main` against the working tree."""
    args = ["diff", "--repo", str(repo), "--base", "main", "--jobs", "1"]
    with pytest.raises(SystemExit) as done:
        main([*args, "--format", output_format, "--output", str(out), *extra])
    assert done.value.code in (ExitStatus.OK, ExitStatus.CHANGES)
    return out.read_bytes()


def _compare(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """Every format with and without the fast path; returns the fast JSON run's stderr."""
    said = ""
    for output_format in ("json", "text", "markdown"):
        capsys.readouterr()
        fast = _diff(repo, tmp_path / f"fast.{output_format}", output_format)
        if output_format == "json":
            said = capsys.readouterr().err
        plain = _diff(repo, tmp_path / f"plain.{output_format}", output_format, "--no-fast-path")
        if output_format == "json":
            _same_json(fast, plain, said)
        else:
            assert fast == plain, output_format
    return said


def _same_json(fast: bytes, plain: bytes, said: str) -> None:
    """Equal reports, but for the object counts of releases the fast path left unrendered:
    those are unchanged releases, as many as it said it did not render on each side."""
    fast_report, plain_report = json.loads(fast), json.loads(plain)
    unrendered = 0
    for mine, theirs in zip(fast_report["releases"], plain_report["releases"], strict=True):
        if mine["unchangedResources"] is None and theirs["unchangedResources"] is not None:
            assert mine["status"] == theirs["status"] == "unchanged", mine
            mine["unchangedResources"] = theirs["unchangedResources"]
            unrendered += 1
    assert fast_report == plain_report
    said_unrendered = re.findall(r"(\d+) not rendered \(every input the same", said)
    assert said_unrendered in ([], [str(unrendered)] * 2), said
    assert unrendered == (int(said_unrendered[0]) if said_unrendered else 0)


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.fixture
def example(git_repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> GitRepo:
    """The example fleet (SOPS files included) committed as `main`."""
    monkeypatch.setenv("SOPS_AGE_KEY_FILE", str(EXAMPLE / "demo-age-key.txt"))
    shutil.copytree(EXAMPLE, git_repo.root, dirs_exist_ok=True)
    git_repo.commit("example fleet")
    return git_repo


def test_a_group_value_change_reports_the_same_and_reuses_the_rest(
    example: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _edit(
        example.root / "deployments/production/group.values.yaml",
        "replicaCount: 3",
        "replicaCount: 5",
    )
    said = _compare(example.root, tmp_path, capsys)
    assert "not rendered (every input the same on both sides)" in said


def test_a_new_file_where_the_lookup_found_none_is_noticed(
    example: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # No deployment of sandbox has a values.yaml, and sandbox has no .gotmpl: both are looked for.
    example.write("deployments/sandbox/cluster.values.yaml.gotmpl", "replicaCount: 4\n")
    said = _compare(example.root, tmp_path, capsys)
    report = json.loads((tmp_path / "fast.json").read_bytes())
    assert report["summary"]["releases"]["changed"] > 0
    assert "not rendered (every input the same on both sides)" in said


def test_added_removed_and_moved_deployments_report_the_same(
    example: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    apps = example.root / "deployments/sandbox/apps"
    shutil.copytree(apps / "playground", apps / "playground-two")
    shutil.rmtree(example.root / "deployments/staging/stg-1/apps")
    _compare(example.root, tmp_path, capsys)


def test_a_chart_and_a_template_change_report_the_same(
    example: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chart = example.root / "charts/web/templates/deployment.yaml"
    chart.write_text(chart.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    template = example.root / "templates/worker/helmfile.yaml.gotmpl"
    template.write_text(template.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    _compare(example.root, tmp_path, capsys)


def _benchmark_fleet() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_fleet", BENCHMARKS / "fleet.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("scenario", ["one-value", "global", "chart-bump"])
def test_benchmark_scenarios_report_the_same(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    scenario: str,
) -> None:
    monkeypatch.setenv("SOPS_AGE_KEY_FILE", str(EXAMPLE / "demo-age-key.txt"))
    fleet = _benchmark_fleet()
    shape = fleet.Shape.parse("1x3x4x2")
    repo = fleet.build_fleet(tmp_path / "fleet", shape, sops=True)
    fleet.apply_scenario(repo, shape, scenario)
    _compare(repo, tmp_path, capsys)


def _fleet(repo: Repo) -> Repo:
    for cluster in ("c1", "c2"):
        repo.write(f"deployments/{cluster}/cluster.values.yaml", f"where: {cluster}\n")
        for deployment in ("d0", "d1"):
            repo.write(
                f"deployments/{cluster}/apps/{deployment}/deployment.yaml",
                "apps: [{template: app}]\n",
            )
    return repo


def _reused(base: Path, head: Path) -> set[tuple[str, str]]:
    """The head deployments taken from the base side instead of planned."""
    changes = changes_between(base, head)
    with open_tooling(Tooling(cache_dir=base.parent / "chart-cache")) as tools:
        first = render_side(
            base, options=SideOptions(), tools=tools, renderer=TemplateRenderer(), fast=True
        )
        assert first.basis is not None
        second = plan_twins(
            head,
            options=SideOptions(),
            renderer=TemplateRenderer(),
            fast=True,
            reuse=Reuse(first.basis, changes, head),
        )
    return set(second.reused)


def test_only_deployments_whose_reads_and_lookups_are_unchanged_are_reused(
    repo: Repo, tmp_path: Path
) -> None:
    _fleet(repo)
    head = Repo(tmp_path / "head")
    shutil.copytree(repo.root, head.root)
    head.write("deployments/c1/cluster.values.yaml", "where: elsewhere\n")  # read by c1's
    head.write("deployments/c2/apps/d1/values.yaml", "extra: 1\n")  # looked for, now found
    head.write("README.md", "not read by any deployment\n")
    assert _reused(repo.root, head.root) == {("c2", "d0")}


def test_a_deployment_that_failed_on_the_base_side_is_planned_again(
    repo: Repo, tmp_path: Path
) -> None:
    _fleet(repo).write("deployments/c2/apps/d1/deployment.yaml", "apps: [{template: missing}]\n")
    head = Repo(tmp_path / "head")
    shutil.copytree(repo.root, head.root)
    assert _reused(repo.root, head.root) == {("c1", "d0"), ("c1", "d1"), ("c2", "d0")}


def test_a_change_only_a_nested_release_reads_is_not_missed(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The parent's inputs stay the same; its HelmRelease's chart (in the repository) changes.
    leaf = {
        "Chart.yaml": "apiVersion: v2\nname: leaf\nversion: 2.0.0\n",
        "templates/cm.yaml": LEAF["templates/cm.yaml"],
    }
    # Without its `broken` HelmRelease: that error names the temporary checkout's path.
    documents = HIERARCHY_BOOTSTRAP.split("---\n")
    kept = "---\n".join(d for d in documents if "name: broken" not in d)
    bootstrap = {**DUMP_CHART, "templates/leaf.yaml": kept}
    git_repo.add_chart("charts/boot", bootstrap).add_chart("charts/leaf", leaf)
    git_repo.write("flux/fleet.yaml", FLEET_SOURCE)
    git_repo.add_template("boot", "releases:\n  - name: boot\n    chart: ../../charts/boot\n")
    git_repo.write("deployments/c/apps/a/deployment.yaml", "apps: [{template: boot}]\n")
    git_repo.commit("nested")
    git_repo.write(
        "charts/leaf/templates/extra.yaml",
        "kind: ConfigMap\napiVersion: v1\nmetadata: {name: extra}\n",
    )
    _compare(git_repo.root, tmp_path, capsys)
    report = json.loads((tmp_path / "fast.json").read_bytes())
    assert report["summary"]["releases"]["changed"] == 1


def test_file_digests_never_read_a_file_outside_the_checkout(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("first")
    checkout = tmp_path / "checkout"
    (checkout / "deployments").mkdir(parents=True)
    (checkout / "deployments" / "inside.yaml").write_text("a: 1\n")
    (checkout / "deployments" / "link.yaml").symlink_to(outside)
    (checkout / "deployments" / "alias.yaml").symlink_to("inside.yaml")

    before = file_digests(checkout)
    outside.write_text("second")
    after = file_digests(checkout)

    # The outside file's content never counts; a link inside the checkout reads its target.
    assert before == after
    assert before["deployments/alias.yaml"] == before["deployments/inside.yaml"]
    (checkout / "deployments" / "link.yaml").unlink()
    (checkout / "deployments" / "link.yaml").symlink_to(tmp_path / "elsewhere.txt")
    assert file_digests(checkout)["deployments/link.yaml"] != after["deployments/link.yaml"]
