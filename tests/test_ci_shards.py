"""`reviewer ci` spread over shards: render `--shard I/N --save DIR`, publish `--from-shards`.

Real git repositories shaped like an Actions checkout of `refs/pull/N/merge`, and the loopback
GitHub of test_action.py. The publishing run gets only the bundles, never the repository.
"""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import GitRepo, git
from github_api import TOKEN, FakeGitHub, User
from test_action import PR, PullRepo, actions_env, outputs, run_ci

from reviewer import github_event
from reviewer.cli import main
from reviewer.commands import ci
from reviewer.console import Console
from reviewer.errors import ExitStatus, ReviewerError, UsageProblem
from reviewer.shards import SHARD_FILE, Expected, merge_shards
from reviewer.side import Selection, Shard, SideOptions

APP = "apps: [{template: app}]\n"
# Shard 1/2 holds prod/eu, dev/a and dev/b; shard 2/2 prod/us, stage/x and stage/y.
CLUSTERS = ("prod/eu", "prod/us", "dev/a", "dev/b", "stage/x", "stage/y")
SHARD_2_CLUSTER = "stage/x"


def fleet(repo: GitRepo) -> str:
    """Six clusters in three groups, two deployments each."""
    repo.write("deployments/global.values.yaml", "tier: gold\n")
    for cluster in CLUSTERS:
        repo.write(f"deployments/{cluster}/cluster.values.yaml", f"where: {cluster}\n")
        for deployment in ("web", "jobs"):
            repo.write(f"deployments/{cluster}/apps/{deployment}/deployment.yaml", APP)
    return repo.commit("fleet")


def pull_request(repo: GitRepo, change: dict[str, str | None]) -> PullRepo:
    """`change` on a PR branch (None deletes), merged into a main that moved on meanwhile."""
    stale = fleet(repo)
    git(repo.root, "checkout", "--quiet", "-b", "feature")
    for path, text in change.items():
        if text is None:
            repo.remove(path)
        else:
            repo.write(path, text)
    head = repo.commit("the change")
    git(repo.root, "checkout", "--quiet", "main")
    repo.write("deployments/dev/group.values.yaml", "team: dev\n")
    target = repo.commit("main moves on")
    git(repo.root, "checkout", "--quiet", "--detach", target)
    git(repo.root, "merge", "--quiet", "--no-ff", "-m", "Merge feature", head)
    return PullRepo(repo, target, stale, head, git(repo.root, "rev-parse", "HEAD"))


# Every shard sees a change: global values, one deployment added, one removed.
SPREAD_CHANGE: dict[str, str | None] = {
    "deployments/global.values.yaml": "tier: platinum\n",
    "deployments/prod/us/apps/extra/deployment.yaml": APP,
    "deployments/dev/b/apps/jobs": None,
}


@pytest.fixture
def pull(git_repo: GitRepo) -> PullRepo:
    return pull_request(git_repo, SPREAD_CHANGE)


def job_env(tmp_path: Path, fake: FakeGitHub, pull: PullRepo, job: str) -> dict[str, str]:
    """A job's environment: its own output and summary files, like a separate runner."""
    jobs = tmp_path / "jobs" / job
    jobs.mkdir(parents=True)
    return actions_env(
        tmp_path,
        fake,
        pull,
        GITHUB_OUTPUT=str(jobs / "output.txt"),
        GITHUB_STEP_SUMMARY=str(jobs / "summary.md"),
    )


def render_shard(
    tmp_path: Path, fake: FakeGitHub, pull: PullRepo, index: int, total: int = 2
) -> tuple[ExitStatus, Path, dict[str, str]]:
    """One matrix job: render shard index/total with no token, like a job that posts nothing."""
    env = job_env(tmp_path, fake, pull, f"shard-{index}-{pull.merge[:7]}")
    del env["GITHUB_TOKEN"]
    saved = tmp_path / "bundles" / f"reviewer-default-shard-{index}-of-{total}-{pull.merge[:7]}"
    args = ci.CiArgs(
        repo=pull.root,
        options=SideOptions(selection=Selection(shard=Shard(index, total))),
        save=saved,
        render_only=True,
    )
    calls = len(fake.state.log)
    status, _, _ = run_ci(args, env)
    assert len(fake.state.log) == calls, "a shard job talks to no API"
    assert not Path(env["GITHUB_STEP_SUMMARY"]).exists(), "a partial report is never shown"
    return status, saved, outputs(Path(env["GITHUB_OUTPUT"]))


def publish(
    tmp_path: Path, fake: FakeGitHub, pull: PullRepo, bundles: list[Path], **extra: Any
) -> tuple[ExitStatus, dict[str, str], str]:
    """The publishing job: the bundles as download-artifact leaves them, and no repository."""
    downloaded = tmp_path / f"downloaded-{len(list(tmp_path.glob('downloaded-*')))}"
    for saved in bundles:
        shutil.copytree(saved, downloaded / saved.name)
    env = job_env(tmp_path, fake, pull, downloaded.name)
    args = ci.CiArgs(
        repo=tmp_path / "nowhere",
        from_shards=(downloaded,),
        output_dir=downloaded.with_name(downloaded.name + "-report"),
        **extra,
    )
    status, _, err = run_ci(args, env)
    assert TOKEN not in err
    return status, outputs(Path(env["GITHUB_OUTPUT"])), err


def summary_of(env_outputs: dict[str, str]) -> str:
    return (Path(env_outputs["report-dir"]) / "report.md").read_text(encoding="utf-8")


def status_view(state: dict[str, Any]) -> tuple[Any, ...]:
    return (state["sha"], state["state"], state["context"], state["description"])


# --- the same review, sharded or not ---------------------------------------------------------


def test_shards_publish_exactly_what_one_run_publishes(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    whole_env = job_env(tmp_path, fake, pull, "whole")
    whole_args = ci.CiArgs(repo=pull.root, output_dir=tmp_path / "whole-report")
    status, _, _ = run_ci(whole_args, whole_env)
    assert status is ExitStatus.OK
    (whole,) = fake.comments(PR)
    whole_id, whole_body = whole.id, whole.body  # the stored comment is edited in place
    whole_outputs = outputs(Path(whole_env["GITHUB_OUTPUT"]))

    rendered = [render_shard(tmp_path, fake, pull, index) for index in (1, 2)]
    assert [r[0] for r in rendered] == [ExitStatus.OK, ExitStatus.OK]
    assert all(int(r[2]["changed"]) > 0 for r in rendered), "the change spans both shards"
    status, merged_outputs, err = publish(tmp_path, fake, pull, [r[1] for r in rendered])
    assert status is ExitStatus.OK, err

    (merged,) = fake.comments(PR)
    assert merged.id == whole_id, "the sharded run edits the same sticky comment"
    assert merged.body == whole_body
    for cluster in CLUSTERS:
        assert f"`{cluster}`" in merged.body
    first, second = fake.state.statuses
    assert status_view(second) == status_view(first)
    assert status_view(first)[:3] == (pull.head, "success", "reviewer")
    assert summary_of(merged_outputs) == summary_of(whole_outputs)
    for name in ("report.json", "pr.json"):
        assert (Path(merged_outputs["report-dir"]) / name).read_text() == (
            Path(whole_outputs["report-dir"]) / name
        ).read_text()
    drop = ("report-dir", "report-json", "comment-url")
    assert {k: v for k, v in merged_outputs.items() if k not in drop} == {
        k: v for k, v in whole_outputs.items() if k not in drop
    }
    assert merged_outputs["comment-url"] == whole_outputs["comment-url"]


def test_a_shard_that_fails_a_release_fails_the_merged_review(
    tmp_path: Path, fake: FakeGitHub, bot: User, git_repo: GitRepo
) -> None:
    broken = {f"deployments/{SHARD_2_CLUSTER}/cluster.values.yaml.gotmpl": "x: {{ nope }}\n"}
    pull = pull_request(git_repo, {**SPREAD_CHANGE, **broken})
    assert Shard(2, 2).holds(SHARD_2_CLUSTER)
    results = [render_shard(tmp_path, fake, pull, index) for index in (1, 2)]
    assert [(status, out["errors"]) for status, _, out in results] == [
        (ExitStatus.OK, "0"),
        (ExitStatus.RENDER_FAILED, "2"),  # both deployments of the cluster
    ]
    status, merged_outputs, _ = publish(tmp_path, fake, pull, [r[1] for r in results])
    assert status is ExitStatus.RENDER_FAILED
    assert merged_outputs["errors"] == "2"
    (state,) = fake.state.statuses
    assert (state["sha"], state["state"]) == (pull.head, "failure")
    assert "fails to render" in state["description"]
    (posted,) = fake.comments(PR)
    sharded_body = posted.body  # the stored comment is edited in place
    assert f"reviewer render . --cluster {SHARD_2_CLUSTER}" in sharded_body
    assert "prod/eu" in sharded_body, "the healthy shard's changes are there too"

    # And it is the comment an unsharded run posts.
    status, _, _ = run_ci(ci.CiArgs(repo=pull.root), job_env(tmp_path, fake, pull, "whole"))
    assert status is ExitStatus.RENDER_FAILED
    (again,) = fake.comments(PR)
    assert again.body == sharded_body


# --- shards that do not belong together ------------------------------------------------------


def test_shards_of_different_commits_are_refused(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    _, first, _ = render_shard(tmp_path, fake, pull, 1)
    # The PR gets a new commit between two shard jobs: a new merge commit.
    git(pull.root, "checkout", "--quiet", "feature")
    pull.repo.write("deployments/stage/group.values.yaml", "team: stage\n")
    head = pull.repo.commit("one more")
    git(pull.root, "checkout", "--quiet", "--detach", pull.target)
    git(pull.root, "merge", "--quiet", "--no-ff", "-m", "Merge feature", head)
    moved = PullRepo(
        pull.repo, pull.target, pull.stale_base, head, git(pull.root, "rev-parse", "HEAD")
    )
    _, second, _ = render_shard(tmp_path, fake, moved, 2)
    with pytest.raises(ReviewerError, match="not of one review") as refused:
        publish(tmp_path, fake, moved, [first, second])
    message = refused.value.render()
    assert f"merge {pull.merge[:7]}" in message and f"merge {moved.merge[:7]}" in message
    assert "re-run the whole workflow" in message
    assert fake.comments(PR) == [] and fake.state.statuses == []


@pytest.mark.parametrize(
    ("shards", "message"),
    [
        ([1], "shard(s) 2/2 missing: a partial review is never published"),
        ([1, 1, 2], "shard 1/2 is given twice"),
    ],
)
def test_incomplete_shard_sets_are_refused(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo, shards: list[int], message: str
) -> None:
    saved = {index: render_shard(tmp_path, fake, pull, index)[1] for index in set(shards)}
    bundles = []
    for number, index in enumerate(shards):
        copy = tmp_path / "copies" / f"{number}-{saved[index].name}"
        shutil.copytree(saved[index], copy)
        bundles.append(copy)
    with pytest.raises(ReviewerError, match=message.replace("(", r"\(").replace(")", r"\)")):
        publish(tmp_path, fake, pull, bundles)
    assert fake.comments(PR) == []


def test_shards_of_another_pull_request_are_refused(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    bundles = [render_shard(tmp_path, fake, pull, index)[1] for index in (1, 2)]
    with pytest.raises(ReviewerError, match="the shards review #12, but this run is about #13"):
        publish(tmp_path, fake, pull, bundles, pr=13)
    with pytest.raises(ReviewerError, match="but this run's pull request head is"):
        publish(tmp_path, fake, pull, bundles, pr_head="e" * 40)
    assert fake.comments(PR) == []


def _facts(directory: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((directory / SHARD_FILE).read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: (d / SHARD_FILE).unlink(), "ci-shard.json is missing"),
        (lambda d: (d / SHARD_FILE).write_text("[]"), "not a reviewer.ci-shard/v1 file"),
        (lambda d: (d / SHARD_FILE).write_bytes(b"\xff"), "not valid JSON"),
        (
            lambda d: (d / SHARD_FILE).write_text(json.dumps({**_facts(d), "number": True})),
            "ci-shard.json: number: is not a positive whole number",
        ),
        (
            lambda d: (d / SHARD_FILE).write_text(
                json.dumps({**_facts(d), "shard": {"index": 3, "total": 2}})
            ),
            "shard 3/2 is not I/N",
        ),
        (
            lambda d: (d / SHARD_FILE).write_text(
                json.dumps({**_facts(d), "commits": {**_facts(d)["commits"], "merge": "HEAD"}})
            ),
            "ci-shard.json: commits.merge: is not a commit SHA",
        ),
        (
            lambda d: (d / SHARD_FILE).write_text(
                json.dumps({**_facts(d), "commits": {**_facts(d)["commits"], "merge": "a" * 40}})
            ),
            "not of the commits ci-shard.json names",
        ),
    ],
)
def test_damaged_shard_facts_are_rejected(
    tmp_path: Path, fake: FakeGitHub, pull: PullRepo, damage: Any, message: str
) -> None:
    _, saved, _ = render_shard(tmp_path, fake, pull, 1, total=1)
    damage(saved)
    with pytest.raises(ReviewerError, match=message):
        merge_shards([saved], Expected(), Console(out=io.StringIO(), err=io.StringIO()))


def test_one_shard_of_one_is_a_whole_review(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    _, saved, out = render_shard(tmp_path, fake, pull, 1, total=1)
    assert out == {
        "added": "1",
        "changed": "11",
        "removed": "1",
        "failed": "0",
        "errors": "0",
        "bundle-dir": str(saved),
    }
    status, _, _ = publish(tmp_path, fake, pull, [saved])
    assert status is ExitStatus.OK
    (posted,) = fake.comments(PR)
    for cluster in CLUSTERS:
        assert f"`{cluster}`" in posted.body


def test_merged_shards_can_become_a_report_artifact_for_the_fork_safe_pair(
    tmp_path: Path, fake: FakeGitHub, pull: PullRepo
) -> None:
    """`--from-shards --render-only` merges without posting: `--from-artifact` posts later."""
    bundles = [render_shard(tmp_path, fake, pull, index)[1] for index in (1, 2)]
    status, merged_outputs, _ = publish(tmp_path, fake, pull, bundles, render_only=True)
    assert status is ExitStatus.OK
    assert fake.state.log == []
    artifact = github_event.read_artifact(Path(merged_outputs["report-dir"]))
    assert (artifact.number, artifact.head_sha, artifact.changed) == (PR, pull.head, True)
    for cluster in CLUSTERS:
        assert f"`{cluster}`" in artifact.markdown


# --- the command line ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--shard", "1/2"], "--shard renders part of a review"),
        (["--shard", "1/2", "--save", "b"], "--shard renders part of a review"),
        (["--shard", "1/2", "--save", "b", "--render-only", "--output-dir", "o"], "writes no"),
        (["--shard", "3/2", "--save", "b", "--render-only"], "'3/2' is not I/N"),
        (["--from-shards", ".", "--from-artifact", "."], "exclude each other"),
        (["--from-shards", ".", "--save", "b"], "nothing is rendered with --from-*"),
    ],
)
def test_command_line_refuses_mode_mixes(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    arguments: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as done:
        main(["ci", *arguments])
    assert done.value.code == ExitStatus.USAGE
    assert message in capsys.readouterr().err


def test_command_line_shards_print_the_unsharded_comment(
    tmp_path: Path,
    pull: PullRepo,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Outside Actions: explicit arguments, and --dry-run prints what would be posted."""
    for name in [n for n in os.environ if n.startswith("GITHUB_")]:
        monkeypatch.delenv(name)
    facts = ["--pr", str(PR), "--pr-head", pull.head, "--repository", "acme/fleet"]
    repo = ["--repo", str(pull.root), "--head", pull.merge]

    def reviewer(*arguments: str) -> tuple[int | str | None, str]:
        with pytest.raises(SystemExit) as done:
            main(["ci", *arguments, *facts, "--run-url", "https://ci.example/1"])
        return done.value.code, capsys.readouterr().out

    code, whole = reviewer(*repo, "--dry-run")
    assert code == ExitStatus.OK and whole.startswith("----- comment 1/1")
    saved = [str(tmp_path / f"shard-{index}") for index in (1, 2)]
    for index, directory in enumerate(saved, start=1):
        code, out = reviewer(*repo, "--shard", f"{index}/2", "--save", directory, "--render-only")
        assert (code, out) == (ExitStatus.OK, "")
    code, merged = reviewer("--from-shards", saved[0], "--from-shards", saved[1], "--dry-run")
    assert code == ExitStatus.OK
    assert merged == whole


def _saved_diff_shards(repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """`reviewer diff --shard I/2 --save sh/I` for both shards of a one-file change."""
    fleet(repo)
    repo.write("deployments/global.values.yaml", "tier: platinum\n")
    for index in (1, 2):
        directory = tmp_path / "sh" / str(index)
        argv = ["diff", "--repo", str(repo.root), "--base", "main", "--shard", f"{index}/2"]
        with pytest.raises(SystemExit) as done:
            main([*argv, "--save", str(directory), "--format", "json"])
        assert done.value.code == ExitStatus.OK
    capsys.readouterr()
    return tmp_path / "sh"


def _merge(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[object, str, str]:
    with pytest.raises(SystemExit) as done:
        main(["merge", *argv])
    captured = capsys.readouterr()
    return done.value.code, captured.out, captured.err


def test_reviewer_merge_refuses_a_missing_or_doubled_shard(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sh = _saved_diff_shards(git_repo, tmp_path, capsys)
    code, out, err = _merge([str(sh / "1")], capsys)
    assert code == ExitStatus.INVALID_REPOSITORY
    assert "shard(s) 2/2 missing: a partial review is never published" in err
    assert out == "" and "no effect" not in err
    code, out, err = _merge([str(sh / "1"), str(sh / "1")], capsys)
    assert code == ExitStatus.INVALID_REPOSITORY
    assert "shard 1/2 is given twice" in err and out == ""
    code, out, err = _merge([str(sh / "1"), str(sh / "2"), "--format", "json"], capsys)
    assert code == ExitStatus.OK, err
    assert json.loads(out)["summary"]["releases"]["changed"] == 12
    assert "no effect" not in out + err


def test_reviewer_merge_refuses_shards_of_different_splits(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sh = _saved_diff_shards(git_repo, tmp_path, capsys)
    (sh / "2" / "diff-shard.json").write_text(
        json.dumps({"schema": "reviewer.diff-shard/v1", "shard": {"index": 2, "total": 3}})
    )
    code, out, err = _merge([str(sh / "1"), str(sh / "2")], capsys)
    assert code == ExitStatus.INVALID_REPOSITORY
    assert "the bundles split the clusters differently: into 2 and 3 shards" in err
    assert out == ""


def _filtered(pull: PullRepo, *clusters: str) -> ci.CiArgs:
    selection = Selection(clusters=clusters)
    return ci.CiArgs(repo=pull.root, dry_run=True, options=SideOptions(selection=selection))


def test_ci_warns_about_a_cluster_filter_naming_nothing_but_fails_when_none_matches(
    tmp_path: Path, fake: FakeGitHub, pull: PullRepo
) -> None:
    # The workflow's list may name clusters that exist on other branches only.
    env = job_env(tmp_path, fake, pull, "partly")
    status, _, err = run_ci(_filtered(pull, "prod/eu", "prod/eu-1"), env)
    assert status is ExitStatus.OK
    assert "warning: --cluster prod/eu-1: no such cluster; did you mean: prod/eu," in err
    with pytest.raises(UsageProblem, match="--cluster nope: no such cluster"):
        run_ci(_filtered(pull, "nope"), job_env(tmp_path, fake, pull, "nothing"))
