"""The plan cache (docs/cache.md, "Plans"): deployments' plans kept by what planning read."""

from __future__ import annotations

import base64
import json
import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from agekeys import encrypt, isolate_sops_key
from commandargs import run_cli
from conftest import FLEET_APP, GitRepo, fleet, git

from reviewer.discover import HierarchySource
from reviewer.errors import ExitStatus
from reviewer.filedigests import file_digests
from reviewer.gotmpl import TemplateRenderer
from reviewer.plan_cache import SidePlans
from reviewer.render_cache import RenderStore, plans_dir
from reviewer.reuse import by_deployment
from reviewer.side import SideOptions, plan_side

EXAMPLE = Path(__file__).parent.parent / "examples" / "fleet"
STORED = "deployment plan(s) taken from the plan cache"
SECRET = "Zq8-Long-Secret-4711"


def _feature(repo: GitRepo) -> None:
    """The fleet as `main`, and a branch changing cluster a in the working tree."""
    fleet(repo).commit("fleet")
    git(repo.root, "checkout", "--quiet", "-b", "feature")
    repo.write("deployments/a/cluster.values.yaml", "where: a\nreplicas: 3\n")


def _diff(
    repo: GitRepo, out: Path, store: Path | None, capsys: pytest.CaptureFixture[str]
) -> tuple[str, str]:
    """The JSON report and stderr of `reviewer diff`, with the render cache `store` or none."""
    cache = ["--render-cache", str(store)] if store else ["--no-render-cache"]
    code, _, said = run_cli(
        ["diff", "--repo", str(repo.root), "--format", "json", "--output", str(out), *cache],
        capsys,
    )
    assert code == ExitStatus.OK, said
    return out.read_text(encoding="utf-8"), said


def _reviewed_once(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[Path, str, str]:
    """`_feature`, then a first review with an empty cache: the cache, report and stderr."""
    _feature(repo)
    store = tmp_path / "cache"
    report, said = _diff(repo, tmp_path / "first.json", store, capsys)
    return store, report, said


def _stored(said: str) -> int:
    for line in said.splitlines():
        if line.endswith(STORED):
            return int(line.split()[0])
    return 0


def test_every_plan_of_the_example_comes_back_equal(tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    shutil.copytree(EXAMPLE, root)
    plan = plan_side(root, options=SideOptions(), renderer=TemplateRenderer())
    side = SidePlans(
        RenderStore(tmp_path / "store", max_bytes=1 << 30), "", file_digests(root), root
    )
    fleet = HierarchySource().discover(root)
    where = {(c.path, d.name): (c, d) for c in fleet.clusters for d in c.deployments}
    kept = 0
    for key, releases in by_deployment(plan.releases).items():
        cluster, deployment = where[key]
        if side.save(cluster, deployment, releases):
            kept += 1
            assert side.lookup(cluster, deployment) == tuple(releases)
        else:
            assert side.lookup(cluster, deployment) is None
    assert kept >= len(where) // 2, "most of the example's deployments can be kept"


def _example_side(tmp_path: Path) -> tuple[Path, RenderStore, Any]:
    """The example fleet, an empty plan store, and (cluster, deployment, releases) of a
    deployment the plan cache keeps."""
    root = tmp_path / "fleet"
    shutil.copytree(EXAMPLE, root)
    plan = plan_side(root, options=SideOptions(), renderer=TemplateRenderer())
    store = RenderStore(tmp_path / "store", max_bytes=1 << 30)
    fleet = HierarchySource().discover(root)
    where = {(c.path, d.name): (c, d) for c in fleet.clusters for d in c.deployments}
    for key, releases in sorted(by_deployment(plan.releases).items()):
        cluster, deployment = where[key]
        if _view(store, root).save(cluster, deployment, releases):
            for path in store.root.glob("??/*.entry"):
                path.unlink()
            return root, store, (cluster, deployment, tuple(releases))
    raise AssertionError("the example has a deployment the plan cache keeps")


def _view(store: RenderStore, root: Path) -> SidePlans:
    return SidePlans(store, "", file_digests(root), root)


def _plans_of(store: RenderStore, deployment: str) -> list[Path]:
    """Plan entries (mappings with releases) holding a release of `deployment`."""
    found = []
    for path in store.root.glob("??/*.entry"):
        data = json.loads(path.read_bytes().partition(b"\n")[2])
        if isinstance(data, dict) and any(
            item["id"][1] == deployment for item in data.get("releases", ())
        ):
            found.append(path)
    return found


def test_forgetting_removes_the_plan_stored_since_the_side_index_was_written(
    tmp_path: Path,
) -> None:
    root, store, (cluster, deployment, releases) = _example_side(tmp_path)
    first = _view(store, root)
    assert first.save(cluster, deployment, releases)
    first.keep()
    # A later run of the same files finds it through the side index, then stores the
    # deployment planned otherwise (it read one more file, absent) before forgetting it.
    later = _view(store, root)
    assert later.holds(cluster, deployment)
    extra = f"{deployment.path}/extra.values.yaml"
    other = tuple(replace(release, inputs=release.inputs | {extra}) for release in releases)
    assert later.save(cluster, deployment, other)
    assert len(_plans_of(store, deployment.name)) == 2
    later.forget(cluster, deployment)
    later.keep()
    assert _plans_of(store, deployment.name) == []
    assert _view(store, root).lookup(cluster, deployment) is None


def test_the_side_index_names_only_plans_a_run_took_or_stored(tmp_path: Path) -> None:
    root, store, (cluster, deployment, releases) = _example_side(tmp_path)
    assert _view(store, root).save(cluster, deployment, releases)
    for path in _plans_of(store, deployment.name):
        path.unlink()  # evicted: the index entry is left, naming no plan
    run = _view(store, root)
    assert not run.holds(cluster, deployment)
    assert run.lookup(cluster, deployment) is None
    run.keep()
    assert not _view(store, root).holds(cluster, deployment)


def test_a_second_run_plans_nothing_again_and_reports_the_same(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, cold, said = _reviewed_once(git_repo, tmp_path, capsys)
    assert _stored(said) == 0
    assert STORED not in said, "a cold run takes no plan from the cache"
    warm, said = _diff(git_repo, tmp_path / "warm.json", store, capsys)
    assert _stored(said) == 4, "three base deployments and the changed head one"
    plain, _ = _diff(git_repo, tmp_path / "none.json", None, capsys)
    assert warm == cold == plain


def test_a_side_seen_before_needs_no_index_entry_per_deployment(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, cold, _ = _reviewed_once(git_repo, tmp_path, capsys)
    # An index entry holds the list of files a deployment's plan read; plan entries and
    # side indexes are mappings.
    removed = 0
    for path in plans_dir(store).glob("??/*.entry"):
        if isinstance(json.loads(path.read_bytes().partition(b"\n")[2]), list):
            path.unlink()
            removed += 1
    assert removed == 3, "one index entry per deployment (a's serves both sides)"
    warm, said = _diff(git_repo, tmp_path / "warm.json", store, capsys)
    assert _stored(said) == 4, "both sides' files are as the first run saw them"
    assert warm == cold


def test_a_file_a_stored_plan_read_changing_plans_that_deployment_again(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, _, _ = _reviewed_once(git_repo, tmp_path, capsys)
    # The next change adds a file the lookup looked for on cluster b, and edits cluster c.
    git_repo.write("deployments/b/cluster.values.yaml.gotmpl", "replicas: 7\n")
    git_repo.write("deployments/c/cluster.values.yaml", "where: c\nreplicas: 9\n")
    warm, said = _diff(git_repo, tmp_path / "warm.json", store, capsys)
    assert _stored(said) == 4, "base a, b, c and head a; head b and c are planned"
    plain, _ = _diff(git_repo, tmp_path / "none.json", None, capsys)
    assert warm == plain
    changed = {r["cluster"] for r in json.loads(warm)["releases"] if r["status"] == "changed"}
    assert changed == {"a", "b", "c"}


def test_an_unstable_template_function_keeps_the_plan_out(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet(git_repo)
    git_repo.write("deployments/b/cluster.values.yaml.gotmpl", 'stamp: {{ now | date "2006" }}\n')
    git_repo.commit("fleet")
    git_repo.write("deployments/a/cluster.values.yaml", "where: a\nreplicas: 3\n")
    store = tmp_path / "cache"
    _diff(git_repo, tmp_path / "cold.json", store, capsys)
    _, said = _diff(git_repo, tmp_path / "warm.json", store, capsys)
    assert _stored(said) == 3, "base a and c, head a: cluster b is planned every time"


def test_a_plan_a_secret_reaches_is_never_written(
    git_repo: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    identity = isolate_sops_key(monkeypatch, tmp_path)
    fleet(git_repo)
    encrypt(
        git_repo.root / "deployments/a",
        {"db": {"password": SECRET}},
        identity,
        name="cluster.values.sops.yaml",
    )
    git_repo.write("deployments/b/cluster.values.yaml", f"where: b\ncopied: {SECRET}\n")
    git_repo.commit("fleet")
    git_repo.write("deployments/c/cluster.values.yaml", "where: c\nreplicas: 3\n")
    store = tmp_path / "cache"
    cold, _ = _diff(git_repo, tmp_path / "cold.json", store, capsys)
    found = b"".join(path.read_bytes() for path in plans_dir(store).glob("??/*.entry"))
    assert b"where: c" in found.replace(b"\\n", b"\n") or b'"where":"c"' in found
    encoded = base64.b64encode(SECRET.encode())
    for needle in (SECRET.encode(), encoded, encoded.rstrip(b"="), SECRET.upper().encode()):
        assert needle not in found
    warm, said = _diff(git_repo, tmp_path / "warm.json", store, capsys)
    assert _stored(said) == 2, "base c and head c; a reads a SOPS file, b spells its secret"
    assert warm == cold


def test_a_symlinked_level_directory_is_never_stored(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet(git_repo)
    git_repo.write("common/b/apps/web/deployment.yaml", FLEET_APP)
    git_repo.write("common/b/cluster.values.yaml", "where: common b\n")
    shutil.rmtree(git_repo.root / "deployments/b")
    os.symlink("../common/b", git_repo.root / "deployments/b")
    git_repo.commit("fleet")
    git_repo.write("deployments/a/cluster.values.yaml", "where: a\nreplicas: 3\n")
    store = tmp_path / "cache"
    _diff(git_repo, tmp_path / "cold.json", store, capsys)
    _, said = _diff(git_repo, tmp_path / "warm.json", store, capsys)
    assert _stored(said) == 3, "base a and c, head a: b's files are behind a symlink"
