"""`reviewer diff` on real git repositories built by the tests."""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from commandargs import run_cli
from conftest import GitRepo, git

from reviewer.cli import main
from reviewer.errors import ExitStatus

APP = "apps: [{template: app}]\n"


def run_diff(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    return run_cli(["diff", *args], capsys)


def json_diff(repo: GitRepo, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    code, out, err = run_diff(["--repo", str(repo.root), "--format", "json", *extra], capsys)
    assert code in (ExitStatus.OK, ExitStatus.RENDER_FAILED), err
    report: dict[str, Any] = json.loads(out)
    return report


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {
        f"{r['cluster']}/{r['deployment']}/{r['release']}": r["status"]
        for r in report["releases"]
        if r["status"] != "unchanged"
    }


@pytest.fixture
def fleet(git_repo: GitRepo) -> GitRepo:
    """Two groups of two clusters each, one deployment everywhere; committed on main."""
    git_repo.write("deployments/apps/base/deployment.yaml", APP)
    for cluster in ("prod/eu", "prod/us", "dev/a", "dev/b"):
        git_repo.write(f"deployments/{cluster}/cluster.values.yaml", f"where: {cluster}\n")
        git_repo.write(f"deployments/{cluster}/apps/.keep", "")
    git_repo.write("deployments/prod/group.values.yaml", "tier: gold\n")
    git_repo.commit("fleet")
    git(git_repo.root, "checkout", "--quiet", "-b", "feature")
    return git_repo


def test_group_value_change_changes_exactly_that_groups_releases(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/prod/group.values.yaml", "tier: platinum\n")
    report = json_diff(fleet, capsys, "--base", "main")
    assert statuses(report) == {"prod/eu/base/app": "changed", "prod/us/base/app": "changed"}
    (resource,) = next(r for r in report["releases"] if r["cluster"] == "prod/eu")["resources"]
    assert (resource["kind"], resource["name"], resource["status"]) == (
        "ConfigMap",
        "app-values",
        "changed",
    )
    assert "-    tier: gold\n+    tier: platinum\n" in resource["diff"]


def test_new_and_deleted_deployments_are_added_and_removed_releases(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/prod/eu/apps/own/deployment.yaml", APP)
    fleet.commit("own")
    git(fleet.root, "branch", "--quiet", "-f", "main")
    fleet.remove("deployments/prod/eu/apps/own")
    fleet.write("deployments/dev/apps/extra/deployment.yaml", APP)
    report = json_diff(fleet, capsys, "--base", "main")
    assert statuses(report) == {
        "dev/a/extra/app": "added",
        "dev/b/extra/app": "added",
        "prod/eu/own/app": "removed",
    }


def test_release_moved_between_clusters(fleet: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    fleet.write("deployments/prod/eu/apps/svc/deployment.yaml", APP)
    fleet.commit("svc on eu")
    git(fleet.root, "branch", "--quiet", "-f", "main")
    fleet.remove("deployments/prod/eu/apps/svc")
    fleet.write("deployments/prod/us/apps/svc/deployment.yaml", APP)
    report = json_diff(fleet, capsys, "--base", "main")
    assert statuses(report) == {"prod/eu/svc/app": "removed", "prod/us/svc/app": "added"}


def test_resource_moved_between_releases(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.add_chart(
        "charts/extra",
        {
            "Chart.yaml": "apiVersion: v2\nname: extra\nversion: 1.0.0\n",
            "templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\n"
            "metadata: {name: shared, namespace: default}\ndata: {k: v}\n",
        },
    )
    fleet.write(
        "charts/dump/templates/shared.yaml",
        "{{ if .Values.withShared }}"
        + (fleet.root / "charts/extra/templates/cm.yaml").read_text()
        + "{{ end }}",
    )
    fleet.add_template("extra", "releases: [{name: extra, chart: ../../charts/extra}]\n")
    fleet.write(
        "deployments/dev/a/apps/x/deployment.yaml",
        "apps: [{template: app, values: [{withShared: true}]}]\n",
    )
    fleet.write("deployments/dev/a/apps/y/deployment.yaml", "apps: [{template: extra}]\n")
    fleet.remove("charts/extra/templates/cm.yaml")
    fleet.write(
        "charts/extra/templates/other.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n",
    )
    fleet.commit("shared in dump")
    git(fleet.root, "branch", "--quiet", "-f", "main")
    fleet.remove("charts/dump/templates/shared.yaml")
    fleet.write(
        "charts/extra/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\n"
        "metadata: {name: shared, namespace: default}\ndata: {k: v}\n",
    )
    report = json_diff(fleet, capsys, "--base", "main", "--cluster", "dev/a")
    release = next(r for r in report["releases"] if r["deployment"] == "y")
    moved = next(r for r in release["resources"] if r["name"] == "shared")
    assert moved["status"] == "moved"
    assert moved["from"] == "dev/a/x/app"
    assert moved["to"] == "dev/a/y/extra"


def test_unrelated_file_change_produces_no_changes(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("README.md", "docs only\n")
    fleet.write("deployments/prod/notes.txt", "not a values file\n")
    code, out, _ = run_diff(["--repo", str(fleet.root), "--base", "main", "--exit-code"], capsys)
    assert code == ExitStatus.OK
    assert "0 changed, 0 added, 0 removed, 0 failed, 4 unchanged release(s)" in out


def test_exit_code_2_when_changes_and_asked(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/dev/group.values.yaml", "tier: bronze\n")
    code, _, _ = run_diff(["--repo", str(fleet.root), "--base", "main", "--exit-code"], capsys)
    assert code == ExitStatus.CHANGES
    code, _, _ = run_diff(["--repo", str(fleet.root), "--base", "main"], capsys)
    assert code == ExitStatus.OK


def test_head_side_template_error_exits_1_with_reproduction(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write(
        "deployments/dev/a/cluster.values.yaml.gotmpl", "x: {{ .Values.where | nosuchfunc }}\n"
    )
    fleet.commit("broken")
    code, out, _ = run_diff(
        ["--repo", str(fleet.root), "--base", "main", "--head", "feature"], capsys
    )
    assert code == ExitStatus.RENDER_FAILED
    assert "FAILED dev/a/base/*:" in out
    # One release failed; the deployment that hid it is counted apart, not as a release.
    assert (
        "0 changed, 0 added, 0 removed, 1 failed, 3 unchanged release(s); "
        "1 deployment failed to plan (affects 1 cluster)"
    ) in out
    assert "not rendered: deployment base failed as a whole" in out
    assert "deployments/dev/a/cluster.values.yaml.gotmpl:1: template function 'nosuchfunc'" in out
    reproduce = next(line for line in out.splitlines() if "reproduce:" in line)
    assert "--cluster dev/a --deployment base" in reproduce


def test_base_side_error_is_a_warning(fleet: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    fleet.write("deployments/dev/a/cluster.values.yaml", "where: [broken\n")
    fleet.commit("broken on main")
    git(fleet.root, "branch", "--quiet", "-f", "main")
    fleet.write("deployments/dev/a/cluster.values.yaml", "where: fixed\n")
    report = json_diff(fleet, capsys, "--base", "main")
    assert report["head"]["errors"] == []
    (error,) = report["base"]["errors"]
    assert error["cluster"] == "dev/a" and error["deployment"] == "base"
    assert "deployments/dev/a/cluster.values.yaml:1: malformed YAML" in error["message"]
    assert any("target branch failed to render dev/a/base" in w for w in report["warnings"])
    code, _, _ = run_diff(["--repo", str(fleet.root), "--base", "main"], capsys)
    assert code == ExitStatus.OK


def test_merge_mode_and_directories(
    fleet: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/dev/a/cluster.values.yaml", "where: feature\n")
    fleet.commit("feature change")
    git(fleet.root, "checkout", "--quiet", "main")
    fleet.write("deployments/prod/us/cluster.values.yaml", "where: main moved on\n")
    fleet.commit("main change")
    report = json_diff(fleet, capsys, "--base", "main", "--head", "feature", "--merge")
    assert statuses(report) == {"dev/a/base/app": "changed"}
    assert report["head"]["ref"] == "merge of feature into base"
    # Without --merge, head alone also undoes main's newer change.
    report = json_diff(fleet, capsys, "--base", "main", "--head", "feature")
    assert statuses(report) == {"dev/a/base/app": "changed", "prod/us/base/app": "changed"}

    code, out, _ = run_diff([str(fleet.root), str(fleet.root), "--format", "json"], capsys)
    assert code == ExitStatus.OK and statuses(json.loads(out)) == {}


def _demo_module() -> Any:
    path = Path(__file__).parent.parent / "examples" / "demo.py"
    spec = importlib.util.spec_from_file_location("demo", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_demonstration_change_json_report_field_by_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    demo = _demo_module()
    monkeypatch.setenv("SOPS_AGE_KEY_FILE", str(demo.HERE / "fleet" / "demo-age-key.txt"))
    repo = demo.build_demo_repo(tmp_path / "fleet")
    code, out, _ = run_diff(["--repo", str(repo), "--base", "main", "--format", "json"], capsys)
    assert code == ExitStatus.OK
    report = json.loads(out)
    main_sha = git(repo, "rev-parse", "main")
    assert report["schema"] == "reviewer.report/v1"
    assert report["base"] == {"ref": "main", "sha": main_sha, "errors": []}
    assert report["head"] == {"ref": "working tree", "sha": None, "errors": []}
    assert report["warnings"] == []
    assert report["summary"]["releases"] == {
        "added": 1,
        "changed": 6,
        "removed": 3,
        "unchanged": 20,
        "failed": 0,
    }
    assert statuses(report) == {
        "production/us-east/observability/otel-collector-worker": "changed",
        "production/us-east/search/search-web": "changed",
        "production/us-east/shop/orders-worker": "changed",
        "production/us-east/shop/storefront-web": "changed",
        "production/us-east/shop/web-api": "changed",
        "sandbox/docs/docs-web": "added",
        "sandbox/playground/redis": "removed",
        "sandbox/playground/web": "removed",
        "sandbox/playground/worker": "removed",
        "staging/stg-1/previews/web-checkout-v2": "changed",
    }
    by_id = {f"{r['cluster']}/{r['deployment']}/{r['release']}": r for r in report["releases"]}
    search = by_id["production/us-east/search/search-web"]
    assert search["namespace"] == "search"
    assert search["chart"] == {"base": "web-1.2.0", "head": "web-1.2.0"}
    (deployment,) = search["resources"]
    assert deployment == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "namespace": "search",
        "name": "search-web",
        "status": "changed",
        "diff": deployment["diff"],
        "changes": ["spec.replicas: 3 → 4"],
        "routine": [],
        "routineOnly": False,
        "secretOnly": False,
    }
    assert "-  replicas: 3\n+  replicas: 4\n" in deployment["diff"]
    docs = by_id["sandbox/docs/docs-web"]
    assert docs["namespace"] == "docs" and docs["chart"] == {"base": None, "head": "web-1.2.0"}
    assert {(r["kind"], r["status"]) for r in docs["resources"]} >= {
        ("Deployment", "added"),
        ("Service", "added"),
        ("ConfigMap", "added"),
    }
    assert search["values"] == [
        {
            "path": "replicaCount",
            "change": "replicaCount: 3 → 4",
            "base": {
                "source": "deployments/production/group.values.yaml",
                "level": "group production",
            },
            "head": {
                "source": "deployments/production/group.values.yaml",
                "level": "group production",
            },
        }
    ]
    previews = by_id["staging/stg-1/previews/web-checkout-v2"]
    image_changes = [c for r in previews["resources"] for c in r["changes"] if "image" in c]
    assert image_changes == [
        'spec.template.spec.containers[name=web].image: "ghcr.io/example/shop:pr-142" → '
        '"ghcr.io/example/shop:pr-143"'
    ]
    (group,) = report["groups"]
    assert group["status"] == "changed" and len(group["releases"]) == 5
    radius = {impact["file"]: impact for impact in report["explain"]["blastRadius"]}
    assert set(radius) == {
        "deployments/production/group.values.yaml",
        "deployments/sandbox/apps/docs/deployment.yaml",
        "deployments/sandbox/apps/playground/deployment.yaml",
        "deployments/staging/stg-1/apps/previews/deployment.yaml",
    }
    group_values = radius["deployments/production/group.values.yaml"]
    assert (len(group_values["releases"]), group_values["clusters"], group_values["changed"]) == (
        13,
        2,
        5,
    )
    assert report["explain"]["noEffect"] == []


def test_reproduction_command_from_diff_reproduces_in_a_shell(
    fleet: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write(
        "charts/dump/templates/fail.yaml", '{{ if .Values.tier }}{{ fail "no tiers" }}{{ end }}\n'
    )
    report = json_diff(fleet, capsys, "--base", "main")
    errors = report["head"]["errors"]
    assert {e["cluster"] for e in errors} == {"prod/eu", "prod/us"}
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "reviewer").write_text(f'#!/bin/sh\nexec {sys.executable} -m reviewer "$@"\n')
    (tools / "reviewer").chmod(0o755)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}", "TMPDIR": str(temporary)}
    done = subprocess.run(
        ["bash", "-c", errors[0]["reproduce"]],
        capture_output=True,
        text=True,
        check=False,
        cwd=fleet.root,
        env=env,
    )
    assert done.returncode == ExitStatus.RENDER_FAILED
    assert "no tiers" in done.stderr
    (written,) = temporary.iterdir()
    assert (written / "index.json").is_file()


def test_noise_rules_come_from_the_base_side_and_config_is_selectable(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("review/settings.yaml", "noise: {paths: ['data.values']}\n")
    fleet.commit("settings on main")
    git(fleet.root, "branch", "--quiet", "-f", "main")
    fleet.write("deployments/prod/group.values.yaml", "tier: platinum\n")
    # The change also tries to hide itself: the base side's settings decide.
    fleet.write(".reviewer.yaml", "noise: {kinds: [ConfigMap]}\n")
    report = json_diff(fleet, capsys, "--base", "main")
    release = next(r for r in report["releases"] if r["cluster"] == "prod/eu")
    assert release["routineOnly"] is False and release["resources"][0]["changes"]

    report = json_diff(fleet, capsys, "--base", "main", "--config", "review/settings.yaml")
    release = next(r for r in report["releases"] if r["cluster"] == "prod/eu")
    assert release["routineOnly"] is True
    assert report["summary"]["routine"] == {"paths: data.values": 2}

    code, _, err = run_diff(["--repo", str(fleet.root), "--config", "missing.yaml"], capsys)
    assert code == ExitStatus.INVALID_REPOSITORY
    assert "missing.yaml: config: settings file not found in the repository" in err


def test_git_ignored_files_of_the_working_tree_are_not_changed_files(
    fleet: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write(".gitignore", "rendered/\n")
    fleet.commit("ignore render outputs")
    git(fleet.root, "branch", "--quiet", "-f", "main")
    with pytest.raises(SystemExit) as done:
        main(["render", str(fleet.root), "-o", str(fleet.root / "rendered")])
    assert done.value.code == ExitStatus.OK
    capsys.readouterr()
    fleet.write("deployments/prod/group.values.yaml", "tier: platinum\n")
    fleet.write("notes.txt", "untracked, not ignored\n")
    report = json_diff(fleet, capsys, "--base", "main")
    files = [impact["file"] for impact in report["explain"]["blastRadius"]]
    assert files == ["deployments/prod/group.values.yaml", "notes.txt"]
    code, out, _ = run_diff(["--repo", str(fleet.root), "--base", "main"], capsys)
    assert code == ExitStatus.OK and "rendered/" not in out


def test_cycle_collection_runs_again_once_a_diff_is_done(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    # The collector pauses while a review runs; a program calling reviewer keeps its own
    # setting afterwards, whether the review succeeded or failed.
    fleet.write("deployments/prod/group.values.yaml", "tier: platinum\n")
    assert gc.isenabled()
    assert json_diff(fleet, capsys, "--base", "main")["releases"]
    assert gc.isenabled()
    code, _, _ = run_diff(["--repo", str(fleet.root), "--base", "no-such-ref"], capsys)
    assert code != ExitStatus.OK
    assert gc.isenabled()
    gc.disable()
    try:
        assert json_diff(fleet, capsys, "--base", "main")["releases"]
        assert not gc.isenabled()
    finally:
        gc.enable()
