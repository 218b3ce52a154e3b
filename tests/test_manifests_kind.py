"""The `manifests` kind end to end: real git, real kustomize, real sops, the real CLI."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from agekeys import AgeIdentity, encrypt
from conftest import GitRepo, git
from github_api import FakeGitHub, User
from manifests_repo import SERVICE, write_manifests
from test_action import PR, PullRepo, run_ci
from test_ci_shards import job_env, publish, render_shard, summary_of
from test_diff_command import json_diff, run_diff

from reviewer.commands import ci
from reviewer.errors import ExitStatus
from reviewer.side import Shard

SECRET = "s3cr3t-Pa55word-4711"
NEW_SECRET = "n3w-Pa55word-0815"


@pytest.fixture
def shop(tmp_path: Path) -> GitRepo:
    """A manifests repository committed on main, checked out on a `feature` branch."""
    repo = write_manifests(GitRepo(tmp_path / "shop"))
    repo.commit("manifests")
    git(repo.root, "checkout", "--quiet", "-b", "feature")
    return repo


def secret(password: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db", "namespace": "shop"},
        "stringData": {"password": password},
    }


def write_secret(directory: Path, password: str, identity: AgeIdentity, name: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    encrypt(
        directory, secret(password), identity, "--encrypted-regex", "^(data|stringData)$", name=name
    )


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {
        f"{r['cluster']}/{r['deployment']}/{r['release']}": r["status"] for r in report["releases"]
    }


def test_detected_sources_are_printed_and_every_object_set_is_compared(
    shop: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    write_manifests(shop, replicas=4, instances=3, overlay_replicas=5)
    code, out, err = run_diff(["--repo", str(shop.root), "--base", "main"], capsys)
    assert code == ExitStatus.OK, err
    assert (
        "sources (detected): manifests 'apps': apps/; manifests 'bosh': bosh/; "
        "manifests 'kustomize': kustomize/"
    ) in err
    assert "3 changed, 0 added, 0 removed, 0 failed, 2 unchanged release(s)" in out
    assert "~ apps/web/deployment.yaml [changed]" in out
    assert "spec.replicas: 2 → 4" in out
    # The overlay is built by kustomize: its namespace and its patched replicas.
    assert "~ kustomize/overlays/prod/kustomization [changed]" in out
    assert "~ Deployment.apps prod/web" in out
    assert "spec.replicas: 3 → 5" in out
    assert "instance_groups[name=web].instances: 2 → 3" in out
    assert "bosh/cf.yml → 1 release(s) in 1 cluster(s), 1 changed" in out


def test_bosh_change_reads_path_wise_in_markdown_and_json(
    shop: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    write_manifests(shop, instances=3)
    code, out, _ = run_diff(
        ["--repo", str(shop.root), "--base", "main", "--format", "markdown"], capsys
    )
    assert code == ExitStatus.OK
    assert "instance_groups[name=web].instances: 2 → 3" in out
    report = json_diff(shop, capsys, "--base", "main")
    (bosh,) = [r for r in report["releases"] if r["cluster"] == "bosh"]
    assert (bosh["deployment"], bosh["release"], bosh["status"]) == (".", "cf.yml", "changed")
    (change,) = bosh["resources"]
    assert change["kind"] == "BoshDeployment" and change["name"] == "cf"
    assert change["changes"] == ["instance_groups[name=web].instances: 2 → 3"]


def test_declared_sources_come_from_the_base_side(
    shop: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    shop.write(
        ".reviewer.yaml", "sources:\n  - {name: shop, kind: manifests, paths: [apps, bosh]}\n"
    )
    shop.commit("declare")
    git(shop.root, "branch", "--quiet", "-f", "main")
    # The pull request's own settings are never read: it cannot drop `bosh` from the review.
    shop.write(".reviewer.yaml", "sources:\n  - {name: shop, kind: manifests, paths: [apps]}\n")
    write_manifests(shop, instances=3, overlay_replicas=9)
    report = json_diff(shop, capsys, "--base", "main")
    assert statuses(report) == {
        "shop/apps/web/deployment.yaml": "unchanged",
        "shop/apps/web/service.yaml": "unchanged",
        "shop/bosh/cf.yml": "changed",
    }
    _, _, err = run_diff(["--repo", str(shop.root), "--base", "main"], capsys)
    assert "sources (from .reviewer.yaml): manifests 'shop': apps/, bosh/" in err


def test_an_object_moving_between_files_of_a_source_is_a_move(
    shop: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    shop.remove("apps/web/service.yaml")
    shop.write("apps/shared/service.yaml", SERVICE)
    report = json_diff(shop, capsys, "--base", "main")
    moved = [
        resource
        for release in report["releases"]
        for resource in release["resources"]
        if resource["status"] == "moved"
    ]
    assert moved and moved[0]["kind"] == "Service"
    assert statuses(report)["apps/web/service.yaml"] == "removed"
    assert statuses(report)["apps/shared/service.yaml"] == "added"


def test_exit_codes_follow_the_same_rules(
    shop: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--repo", str(shop.root), "--base", "main", "--exit-code"]
    assert run_diff(args, capsys)[0] == ExitStatus.OK
    write_manifests(shop, instances=3)
    assert run_diff(args, capsys)[0] == ExitStatus.CHANGES
    shop.write("apps/web/broken.yaml", "kind: [unclosed\n")
    code, out, _ = run_diff(args, capsys)
    assert code == ExitStatus.RENDER_FAILED
    assert "FAILED apps/web/broken.yaml: " in out
    assert "apps/web/broken.yaml:1: malformed YAML" in out
    assert "reproduce: out=$(mktemp -d) && reviewer render" in out
    assert "--cluster apps --deployment web" in out


def test_a_broken_kustomization_fails_its_object_set_only(
    shop: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    shop.write(
        "kustomize/overlays/prod/kustomization.yaml", "resources: [https://example.invalid/x]\n"
    )
    report = json_diff(shop, capsys, "--base", "main")
    found = statuses(report)
    assert found["kustomize/overlays/prod/kustomization"] == "error"
    assert found["apps/web/deployment.yaml"] == "unchanged"
    (error,) = report["head"]["errors"]
    assert "remote" in error["message"]


def test_sops_secrets_are_decrypted_compared_and_never_shown(
    shop: GitRepo, age_key: AgeIdentity, capsys: pytest.CaptureFixture[str]
) -> None:
    write_secret(shop.root / "apps/web", SECRET, age_key, "db.sops.yaml")
    write_secret(shop.root / "kustomize/secrets", SECRET, age_key, "db.sops.yaml")
    shop.write("kustomize/secrets/kustomization.yaml", "resources: [db.sops.yaml]\n")
    leak = "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: leak}}\ndata: {{copy: {}}}\n"
    shop.write("apps/web/leak.yaml", leak.format("placeholder"))
    shop.commit("secrets")
    git(shop.root, "branch", "--quiet", "-f", "main")
    write_secret(shop.root / "apps/web", NEW_SECRET, age_key, "db.sops.yaml")
    write_secret(shop.root / "kustomize/secrets", NEW_SECRET, age_key, "db.sops.yaml")
    # A ConfigMap quoting the password: the redaction map covers it too.
    shop.write("apps/web/leak.yaml", leak.format(NEW_SECRET))
    outputs = []
    for fmt in ("text", "markdown", "json"):
        code, out, err = run_diff(
            ["--repo", str(shop.root), "--base", "main", "--format", fmt], capsys
        )
        assert code == ExitStatus.OK, out
        outputs.append((out, err))
    for out, err in outputs:
        for text in (out, err):
            assert SECRET not in text and NEW_SECRET not in text
            assert "ENC[" not in text
    report = json.loads(outputs[2][0])
    found = statuses(report)
    assert found["apps/web/db.sops.yaml"] == "changed"
    assert found["kustomize/secrets/kustomization"] == "changed"
    assert "~ Secret shop/db" in outputs[0][0]
    assert 'data.copy: "placeholder" → ' in outputs[0][0], "shown, the secret redacted"


def test_a_kustomization_changing_an_encrypted_secret_fails_as_in_flux(
    shop: GitRepo, age_key: AgeIdentity, capsys: pytest.CaptureFixture[str]
) -> None:
    write_secret(shop.root / "kustomize/base", SECRET, age_key, "db.sops.yaml")
    shop.write("kustomize/base/kustomization.yaml", "resources: [deployment.yaml, db.sops.yaml]\n")
    report = json_diff(shop, capsys, "--base", "main")
    found = statuses(report)
    assert found["kustomize/base/kustomization"] == "changed"  # no field changed: decrypts
    assert found["kustomize/overlays/prod/kustomization"] == "error"  # namespace: MAC broken
    (error,) = report["head"]["errors"]
    assert "MAC mismatch" in error["message"] and "Secret db" in error["message"]
    assert SECRET not in json.dumps(report)


def test_shards_publish_what_one_run_publishes_for_manifests(
    tmp_path: Path, fake: FakeGitHub, bot: User, git_repo: GitRepo
) -> None:
    assert Shard(1, 2).holds("apps") and Shard(2, 2).holds("bosh")
    write_manifests(git_repo)
    stale = git_repo.commit("manifests")
    git(git_repo.root, "checkout", "--quiet", "-b", "feature")
    write_manifests(git_repo, replicas=4, instances=3)
    head = git_repo.commit("the change")
    git(git_repo.root, "checkout", "--quiet", "main")
    git_repo.write("apps/web/extra.yaml", SERVICE.replace("name: web", "name: extra"))
    target = git_repo.commit("main moves on")
    git(git_repo.root, "checkout", "--quiet", "--detach", target)
    git(git_repo.root, "merge", "--quiet", "--no-ff", "-m", "Merge feature", head)
    pull = PullRepo(git_repo, target, stale, head, git(git_repo.root, "rev-parse", "HEAD"))

    whole_env = job_env(tmp_path, fake, pull, "whole")
    status, _, _ = run_ci(ci.CiArgs(repo=pull.root, output_dir=tmp_path / "whole"), whole_env)
    assert status is ExitStatus.OK
    (whole,) = fake.comments(PR)
    whole_body = whole.body
    assert "instance_groups[name=web].instances: 2 → 3" in whole_body
    rendered = [render_shard(tmp_path, fake, pull, index) for index in (1, 2)]
    assert all(int(r[2]["changed"]) > 0 for r in rendered), "the change spans both shards"
    status, merged_outputs, err = publish(tmp_path, fake, pull, [r[1] for r in rendered])
    assert status is ExitStatus.OK, err
    (merged,) = fake.comments(PR)
    assert merged.body == whole_body
    assert "instance_groups[name=web].instances: 2 → 3" in summary_of(merged_outputs)


# --- the bundled example -----------------------------------------------------------------------

EXAMPLES = Path(__file__).parent.parent / "examples"


def test_the_manifests_example_renders_offline_and_its_demo_shows_each_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = importlib.util.spec_from_file_location("demo", EXAMPLES / "demo.py")
    assert spec is not None and spec.loader is not None
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    repo = demo.build_demo_repo(tmp_path / "manifests", "manifests")
    report = json_diff(GitRepo(repo), capsys, "--base", "main")
    assert statuses(report) == {
        "bosh/./cf.yml": "changed",
        "kustomize/base/kustomization": "unchanged",
        "kustomize/overlays/production/kustomization": "changed",
        "kustomize/overlays/staging/kustomization": "unchanged",
        "shop/web/deployment.yaml": "changed",
        "shop/web/service.yaml": "unchanged",
    }
    assert report["base"]["errors"] == report["head"]["errors"] == []
    changes = [c for r in report["releases"] for res in r["resources"] for c in res["changes"]]
    assert "instance_groups[name=web].instances: 2 → 3" in changes
    assert (
        'spec.template.spec.containers[name=api].image: "ghcr.io/example/api:1.4.0" → '
        '"ghcr.io/example/api:1.5.0"'
    ) in changes


def test_a_symlink_leaving_the_repository_is_refused_and_never_read(
    shop: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {k: o0ps-f1le}\n"
    )
    (shop.root / "apps/web/link.yaml").symlink_to(outside)
    code, out, err = run_diff(["--repo", str(shop.root), "--base", "main"], capsys)
    assert code == ExitStatus.RENDER_FAILED
    assert "FAILED apps/web/link.yaml: " in out
    assert "o0ps-f1le" not in out + err


def test_manifests_next_to_a_hierarchy_with_sops_values(
    git_repo: GitRepo, age_key: AgeIdentity, capsys: pytest.CaptureFixture[str]
) -> None:
    # The hierarchy's SOPS values make its releases go through the twin alignment; the
    # manifests source's object sets are published beside them all the same.
    git_repo.write("deployments/c/apps/d/deployment.yaml", "apps: [{template: app}]\n")
    encrypt(
        git_repo.root / "deployments/c", {"db": SECRET}, age_key, name="cluster.values.sops.yaml"
    )
    write_manifests(git_repo)
    git_repo.write(
        ".reviewer.yaml",
        "sources:\n"
        "  - {name: fleet, kind: hierarchy, paths: [deployments]}\n"
        "  - {name: bosh, kind: manifests, paths: [bosh]}\n",
    )
    git_repo.commit("fleet and manifests")
    git(git_repo.root, "checkout", "--quiet", "-b", "feature")
    write_manifests(git_repo, instances=3)
    encrypt(
        git_repo.root / "deployments/c",
        {"db": NEW_SECRET},
        age_key,
        name="cluster.values.sops.yaml",
    )
    code, out, err = run_diff(["--repo", str(git_repo.root), "--base", "main"], capsys)
    assert code == ExitStatus.OK, out
    assert "~ c/d/app [changed]" in out
    assert "instance_groups[name=web].instances: 2 → 3" in out
    assert SECRET not in out + err and NEW_SECRET not in out + err


def test_a_missing_manifests_directory_fails_that_source_only(
    shop: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    shop.write(
        ".reviewer.yaml", "sources:\n  - {name: shop, kind: manifests, paths: [apps, gone]}\n"
    )
    shop.commit("declare")
    git(shop.root, "branch", "--quiet", "-f", "main")
    write_manifests(shop, replicas=5)
    code, out, _ = run_diff(
        ["--repo", str(shop.root), "--base", "main", "--fail-on-preexisting"], capsys
    )
    assert code == ExitStatus.RENDER_FAILED
    assert "FAILED shop/gone/*: " in out
    assert "gone: source shop: not a directory in the repository" in out
    assert "spec.replicas: 2 → 5" in out


def test_a_manifest_that_is_a_link_to_nothing_fails_naming_it(
    shop: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was skipped without a word, and its objects read as removed."""
    (shop.root / "apps/web/gone.yaml").symlink_to("nowhere.yaml")
    (shop.root / "apps/web/loop.yaml").symlink_to("loop.yaml")
    code, out, _ = run_diff(["--repo", str(shop.root), "--base", "main"], capsys)
    assert code == ExitStatus.RENDER_FAILED
    assert "FAILED apps/web/gone.yaml: " in out and "cannot be read (No such file" in out
    assert "FAILED apps/web/loop.yaml: " in out and "Too many levels of symbolic links" in out
