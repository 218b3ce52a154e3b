"""The `kraan` kind end to end: AddonsLayers in a git repository, `reviewer diff` and render."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chartrepo import ChartRepository
from conftest import GitRepo, Repo, git
from flux_repo import app_chart_files, chart_spec, helm_repository, helmrelease, write_chart_dir
from test_diff_command import run_diff
from test_secrets import render_out

from reviewer import config, yamlio
from reviewer.discover import Layout
from reviewer.errors import ConfigError, ExitStatus
from reviewer.sources import registry
from reviewer.sources.flux import Flux
from reviewer.sources.kraan_kind import Kraan

LOOPBACK = "--allow-loopback-charts"


@pytest.fixture
def charts(tmp_path: Path) -> Iterator[ChartRepository]:
    with ChartRepository(tmp_path / "served") as server:
        server.publish(write_chart_dir(tmp_path / "src" / "app", app_chart_files()), "1.0.0")
        yield server


def addons_layer(name: str, path: str, version: str = "0.1.0") -> str:
    return yamlio.dump(
        {
            "apiVersion": "kraan.io/v1alpha1",
            "kind": "AddonsLayer",
            "metadata": {"name": name},
            "spec": {
                "version": version,
                "source": {"name": "addons", "namespace": "gitops-system", "path": path},
                "prereqs": {"dependsOn": []},
            },
        }
    )


def app_release(name: str, replicas: int = 1, **metadata: Any) -> str:
    text = helmrelease(name, chart=chart_spec("app", "charts"), values={"replicas": replicas})
    if not metadata:
        return text
    document = yamlio.load_documents(text, source="test")[0]
    document["metadata"].update(metadata)
    return yamlio.dump(document)


def layered_repo(root: Path, url: str) -> GitRepo:
    """Two layers: `base` (the chart repository, `ingress`, `monitoring`) and `apps` (`web`)."""
    repo = GitRepo(root)
    repo.write("layers/base.yaml", addons_layer("base", "./addons/base", version="1.4.0"))
    repo.write("layers/apps.yaml", addons_layer("apps", "./addons/apps"))
    repo.write("addons/base/repository.yaml", helm_repository("charts", url))
    repo.write("addons/base/ingress.yaml", app_release("ingress"))
    repo.write("addons/base/monitoring.yaml", app_release("monitoring"))
    repo.write("addons/apps/web.yaml", app_release("web"))
    repo.commit("layers")
    git(repo.root, "checkout", "--quiet", "-b", "feature")
    return repo


def diff(repo: GitRepo, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    return run_diff(["--repo", str(repo.root), "--base", "main", LOOPBACK, *extra], capsys)


def json_report(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, err = diff(repo, capsys, "--format", "json")
    assert code in (ExitStatus.OK, ExitStatus.RENDER_FAILED), err
    report: dict[str, Any] = json.loads(out)
    return report


def test_a_release_moved_between_layers_is_a_move_not_a_deletion_and_an_addition(
    tmp_path: Path, charts: ChartRepository, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = layered_repo(tmp_path / "fleet", charts.url)
    repo.remove("addons/base/monitoring.yaml")
    repo.write("addons/apps/monitoring.yaml", app_release("monitoring", replicas=2))
    repo.commit("monitoring belongs with the apps, scaled")

    code, out, err = diff(repo, capsys)
    assert code == ExitStatus.OK, err
    assert "sources (detected): kraan 'layers': layers/\n" in err
    assert "1 changed, 0 added, 0 removed, 0 failed, 2 unchanged release(s)" in out
    assert "~ layers/apps/monitoring [changed] (layer apps)" in out
    assert "moved from layer base to layer apps" in out
    assert "spec.replicas: 1 → 2" in out
    assert "[added]" not in out and "[removed]" not in out

    report = json_report(repo, capsys)
    [moved] = [r for r in report["releases"] if r["status"] != "unchanged"]
    assert (moved["release"], moved["status"]) == ("monitoring", "changed")
    assert (moved["layer"], moved["previousLayer"]) == ("apps", "base")


def test_a_move_without_any_other_change_is_still_reported(
    tmp_path: Path, charts: ChartRepository, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = layered_repo(tmp_path / "fleet", charts.url)
    git(repo.root, "mv", "addons/base/ingress.yaml", "addons/apps/ingress.yaml")
    repo.commit("move ingress")

    code, out, err = diff(repo, capsys, "--format", "markdown")
    assert code == ExitStatus.OK, err
    assert "1 release(s) change" in out
    assert "#### Layer `apps` (source `layers`)" in out
    assert "Moved from layer `base` to layer `apps`." in out


def test_changed_releases_are_grouped_by_layer(
    tmp_path: Path, charts: ChartRepository, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = layered_repo(tmp_path / "fleet", charts.url)
    repo.write("addons/base/ingress.yaml", app_release("ingress", replicas=3))
    repo.write("addons/base/monitoring.yaml", app_release("monitoring", replicas=3))
    repo.write("addons/apps/web.yaml", app_release("web", replicas=3))
    repo.commit("scale everything")

    code, out, err = diff(repo, capsys)
    assert code == ExitStatus.OK, err
    lines = out.splitlines()
    shown = [
        line for line in lines if line.startswith("layer ") or line.startswith("~ layers/apps/")
    ]
    # By layer, then identity: the apps layer's web before the base layer's two releases.
    assert shown == [
        "layer apps (source layers):",
        "~ layers/apps/web [changed] (layer apps)",
        "layer base (source layers):",
        "~ layers/apps/ingress [changed] (layer base)",
        "~ layers/apps/monitoring [changed] (layer base)",
    ]

    code, markdown, err = diff(repo, capsys, "--format", "markdown")
    assert code == ExitStatus.OK, err
    apps, base = markdown.index("#### Layer `apps`"), markdown.index("#### Layer `base`")
    # (Repeated changes come first and name releases too: look only after the first heading.)
    assert apps < markdown.index("layers/apps/web", apps) < base
    assert base < markdown.index("layers/apps/ingress", apps)


def test_the_same_helmrelease_in_two_layers_fails_that_release_only(
    tmp_path: Path, charts: ChartRepository, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = layered_repo(tmp_path / "fleet", charts.url)
    repo.write("addons/apps/ingress-copy.yaml", app_release("ingress", replicas=5))
    repo.write("addons/apps/web.yaml", app_release("web", replicas=2))
    repo.commit("ingress in two layers")

    code, out, err = diff(repo, capsys)
    assert code == ExitStatus.RENDER_FAILED, err
    failed = [line for line in out.splitlines() if line.startswith("FAILED layers/apps/ingress")]
    assert len(failed) == 1
    assert "layer 'base' (addons/base/ingress.yaml)" in failed[0]
    assert "layer 'apps' (addons/apps/ingress-copy.yaml)" in failed[0]
    assert "also included in layer" in failed[0]
    assert "~ layers/apps/web [changed] (layer apps)" in out
    assert "spec.replicas: 1 → 2" in out

    report = json_report(repo, capsys)
    [error] = report["head"]["errors"]
    assert (error["cluster"], error["deployment"], error["release"]) == (
        "layers",
        "apps",
        "ingress",
    )
    assert "addons/apps/ingress-copy.yaml" in error["message"]


def test_render_labels_each_release_with_its_layer_and_injects_the_layer_version(
    tmp_path: Path, charts: ChartRepository, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = layered_repo(tmp_path / "fleet", charts.url)
    repo.write(
        "addons/base/ingress.yaml",
        app_release("ingress", annotations={"kraan.updateVersion": "true"}),
    )
    repo.write(".reviewer.yaml", "sources:\n  - {name: addons, kind: kraan, paths: [layers]}\n")
    repo.commit("ingress follows its layer's version")

    code, _ = render_out(repo, tmp_path / "out", LOOPBACK)
    assert code == ExitStatus.OK, capsys.readouterr().err
    index = json.loads((tmp_path / "out" / "index.json").read_text())
    layers = {entry["release"]: entry["labels"]["kraan/layer"] for entry in index["releases"]}
    assert layers == {"ingress": "base", "monitoring": "base", "web": "apps"}
    # The values dump the chart renders shows the injected version, for that release only.
    ingress = (tmp_path / "out").glob("addons/apps/ingress/*")
    assert any("kraanVersion: 1.4.0" in path.read_text() for path in ingress)
    web = list((tmp_path / "out").glob("addons/apps/web/*"))
    assert web
    assert not any("kraanVersion" in path.read_text() for path in web)


def test_bumping_a_layer_version_changes_the_releases_that_follow_it(
    tmp_path: Path, charts: ChartRepository, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = layered_repo(tmp_path / "fleet", charts.url)
    repo.write(
        "addons/base/ingress.yaml",
        app_release("ingress", annotations={"kraan.updateVersion": "true"}),
    )
    repo.commit("ingress follows its layer's version")
    git(repo.root, "checkout", "--quiet", "main")
    git(repo.root, "merge", "--quiet", "feature")
    git(repo.root, "checkout", "--quiet", "-b", "bump")
    repo.write("layers/base.yaml", addons_layer("base", "./addons/base", version="1.5.0"))
    repo.commit("base 1.5.0")

    code, out, err = diff(repo, capsys)
    assert code == ExitStatus.OK, err
    assert "~ layers/apps/ingress [changed] (layer base)" in out
    assert 'kraanVersion: "1.4.0" → "1.5.0"' in out
    # The blast radius names the AddonsLayer: both of its releases were built from it.
    assert "layers/base.yaml → 2 release(s) in 1 cluster(s), 1 changed" in out
    assert "layers/apps/monitoring [changed]" not in out


def test_detection_gives_layer_directories_to_the_kraan_source_only(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.write("platform/layers.yaml", addons_layer("base", "./addons/base"))
    repo.write("addons/base/ingress.yaml", app_release("ingress"))
    repo.write("clusters/prod/web.yaml", app_release("web"))
    found = registry.detect(repo.root, Layout())
    assert found == (Flux("clusters", ("clusters",)), Kraan("platform", ("platform",)))
    assert registry.describe(found, detected=True) == (
        "sources (detected): flux 'clusters': clusters/; kraan 'platform': platform/"
    )


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ("sources: [{kind: kraan}]", "sources[0].paths", "AddonsLayer objects"),
        (
            "sources: [{kind: kraan, paths: [layers], namespace: x}]",
            "sources[0].namespace",
            "unknown field; allowed: name, kind, paths",
        ),
    ],
)
def test_a_bad_kraan_source_names_the_field(
    tmp_path: Path, text: str, field: str, message: str
) -> None:
    repo = Repo(tmp_path / "repo").write(".reviewer.yaml", text + "\n")
    with pytest.raises(ConfigError) as caught:
        config.load(repo.root)
    assert (caught.value.file, caught.value.field) == (".reviewer.yaml", field)
    assert message in caught.value.message


def test_a_broken_layer_fails_its_source_as_a_whole(
    tmp_path: Path, charts: ChartRepository, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = layered_repo(tmp_path / "fleet", charts.url)
    repo.write("layers/apps.yaml", addons_layer("apps", "./addons/missing"))
    repo.commit("a layer over a directory that does not exist")

    code, out, err = diff(repo, capsys)
    assert code == ExitStatus.RENDER_FAILED, err
    assert "layers/apps.yaml: spec.source.path: names no directory in the repository" in out
    # Its releases are not rendered rather than removed.
    assert "[removed]" not in out


EXAMPLES = Path(__file__).parent.parent / "examples"


def test_the_kraan_example_renders_offline_and_its_demo_shows_the_move(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = importlib.util.spec_from_file_location("demo", EXAMPLES / "demo.py")
    assert spec is not None and spec.loader is not None
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    repo = GitRepo(demo.build_demo_repo(tmp_path / "kraan", "kraan"))

    code, out, err = run_diff(["--repo", str(repo.root), "--base", "main"], capsys)
    assert code == ExitStatus.OK, err
    assert "sources (detected): kraan 'layers': layers/\n" in err
    assert "2 changed, 0 added, 0 removed, 0 failed, 1 unchanged release(s)" in out
    assert "~ layers/monitoring/monitoring [changed] (layer apps)" in out
    assert "moved from layer base to layer apps" in out
    assert "spec.replicas: 1 → 2" in out
    assert '"example.com/layer-version"]: "1.4.0" → "1.5.0"' in out


def test_a_layer_with_a_kustomization_is_built_before_its_releases_are_planned(
    tmp_path: Path, charts: ChartRepository, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = layered_repo(tmp_path / "fleet", charts.url)
    repo.write(
        "addons/apps/kustomization.yaml", "resources: [web.yaml]\ncommonLabels: {team: shop}\n"
    )
    repo.commit("the apps layer is a kustomization")
    code, out, err = diff(repo, capsys, "--format", "json")
    assert code == ExitStatus.OK, err
    releases = {r["release"]: r for r in json.loads(out)["releases"]}
    # The HelmRelease's own labels do not reach what its chart renders: nothing changes.
    assert releases["web"]["status"] == "unchanged"
    assert releases["web"]["layer"] == "apps"
