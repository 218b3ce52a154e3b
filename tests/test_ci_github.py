"""`reviewer ci` on GitHub events as they really come (issue 16), against the loopback GitHub:
several reviewers in one run, stale re-runs, read-only tokens, closed and retargeted pull
requests, the comment modes, `--pr N` on other events, and the count outputs."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import GitRepo, git
from github_api import TOKEN, FakeGitHub, User
from test_action import PR, PullRepo, actions_env, event, fleet, outputs, run_ci
from test_action import pull as pull  # the fixture

from reviewer import github_event
from reviewer.cli import main
from reviewer.commands import ci
from reviewer.comment import Marker
from reviewer.errors import ExitStatus, ReviewerError
from reviewer.publish import CommentMode, StatusKind

NEWER = "e" * 40


def with_event(tmp_path: Path, pull: PullRepo, name: str, **changes: Any) -> Path:
    """The fixture's pull_request payload for `pull`, with top-level fields changed."""
    payload = json.loads(event(tmp_path, pull).read_text(encoding="utf-8"))
    payload.update(changes)
    path = tmp_path / f"event-{name}.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def body(fake: FakeGitHub, key: str = "default") -> str:
    (found,) = [c for c in fake.comments(PR) if (m := Marker.parse(c.body)) and m.key == key]
    return found.body


# --- several reviewers, stale runs -----------------------------------------------------------


def test_two_reviewers_in_one_run_keep_their_own_comment_and_status(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    env = actions_env(tmp_path, fake, pull)
    for key in ("prod", "staging"):
        status, _, err = run_ci(ci.CiArgs(repo=pull.root, key=key), env)
        assert status is ExitStatus.OK, err
    prod, staging = fake.comments(PR)
    run_ci(ci.CiArgs(repo=pull.root, key="prod"), {**env, "GITHUB_RUN_ID": "78"})
    assert [c.id for c in fake.comments(PR)] == [prod.id, staging.id]
    assert "actions/runs/78" in body(fake, "prod")
    assert "actions/runs/78" not in body(fake, "staging"), "one reviewer never edits the other"
    assert [s["context"] for s in fake.state.statuses] == [
        "reviewer/prod",
        "reviewer/staging",
        "reviewer/prod",
    ]
    assert fake.state.foreign_writes == []


def test_a_stale_run_never_overwrites_the_review_of_a_newer_head(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    env = actions_env(tmp_path, fake, pull)
    newer = Marker("default", 1, 1, NEWER).render() + "\nthe newer head's review\n"
    fake.seed_comment(PR, bot, newer)
    fake.state.pulls[PR] = NEWER  # the PR moved on while this (re-)run was rendering
    status, out, err = run_ci(ci.CiArgs(repo=pull.root), env)
    assert status is ExitStatus.OK, err
    assert f"::notice title=reviewer::#{PR} has moved on to {NEWER[:7]}" in out
    assert body(fake) == newer
    assert fake.writes() == [] and fake.state.statuses == []


def test_a_stale_run_on_a_conflicting_pull_request_marks_the_old_review_outdated(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    """GitHub runs no pull_request workflow while a PR conflicts: no newer review will come."""
    env = actions_env(tmp_path, fake, pull)
    run_ci(ci.CiArgs(repo=pull.root), env)
    reviewed = body(fake)
    fake.state.pulls[PR] = NEWER
    fake.state.conflicting.add(PR)
    status, _, _ = run_ci(ci.CiArgs(repo=pull.root), {**env, "GITHUB_RUN_ID": "78"})
    assert status is ExitStatus.OK
    marked = body(fake)
    assert Marker.parse(marked) == Marker("default", 1, 1, pull.head), "the marker stays"
    assert f"**Outdated**: #{PR} is now at `{NEWER[:7]}`, which does not merge cleanly" in marked
    assert marked.endswith(reviewed.split("\n", 1)[1]), "the old review stays below the note"
    assert len(fake.state.statuses) == 1, "no status for a stale run"
    run_ci(ci.CiArgs(repo=pull.root), {**env, "GITHUB_RUN_ID": "79"})
    assert body(fake) == marked, "the note is not stacked"


# --- read-only tokens: forks and Dependabot on the same-repository template ------------------


def test_a_read_only_token_falls_back_to_render_only_with_a_notice(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    env = actions_env(tmp_path, fake, pull)
    fake.fail("POST", r"/comments$", 403, message="Resource not accessible by integration")
    status, out, err = run_ci(ci.CiArgs(repo=pull.root), env)
    assert status is ExitStatus.OK, err
    assert f"::notice title=reviewer::GitHub refused to write on #{PR} (403)" in out
    assert "See the job summary." in out
    assert "platinum" in (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert fake.comments(PR) == [] and fake.state.statuses == []
    result = outputs(tmp_path / "output.txt")
    assert (result["comment-url"], result["comment-id"], result["changed"]) == ("", "", "1")
    assert TOKEN not in out + err


def test_a_403_after_the_comment_is_posted_still_fails(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    """Only a refusal of the first write means a read-only token: a missing `statuses: write`
    or a personal access token creating a check run is an error to fix."""
    env = actions_env(tmp_path, fake, pull)
    fake.fail("POST", r"/check-runs$", 403, message="Resource not accessible by personal token")
    with pytest.raises(ReviewerError) as failed:
        run_ci(ci.CiArgs(repo=pull.root, status=StatusKind.CHECK), env)
    assert "a personal access token cannot" in failed.value.render()
    assert len(fake.comments(PR)) == 1


# --- closed and retargeted pull requests -----------------------------------------------------


def closed_env(tmp_path: Path, fake: FakeGitHub, pull: PullRepo) -> dict[str, str]:
    payload = with_event(tmp_path, pull, "closed", action="closed")
    return actions_env(tmp_path, fake, pull, GITHUB_EVENT_PATH=str(payload))


def test_a_closed_pull_request_gets_a_note_and_no_status(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    run_ci(ci.CiArgs(repo=pull.root), actions_env(tmp_path, fake, pull))
    run_ci(ci.CiArgs(repo=pull.root, key="other"), actions_env(tmp_path, fake, pull))
    other = body(fake, "other")
    fake.state.closed.add(PR)
    status, _, err = run_ci(ci.CiArgs(closed=True), closed_env(tmp_path, fake, pull))
    assert status is ExitStatus.OK, err
    marked = body(fake)
    assert Marker.parse(marked) == Marker("default", 1, 1, pull.head)
    assert f"**Closed**: #{PR} was closed. This review is of its head `{pull.head[:7]}`" in marked
    assert "platinum" in marked, "the last review stays readable"
    assert body(fake, "other") == other, "only this key's comments are marked"
    assert len(fake.state.statuses) == 2, "closing sets no status"
    writes = len(fake.writes())
    run_ci(ci.CiArgs(closed=True), closed_env(tmp_path, fake, pull))
    assert len(fake.writes()) == writes, "marking twice changes nothing"

    # A re-run of the last review after the close does not replace the note.
    status, out, _ = run_ci(ci.CiArgs(repo=pull.root), actions_env(tmp_path, fake, pull))
    assert status is ExitStatus.OK and f"#{PR} is closed" in out
    assert body(fake) == marked


def test_a_closed_event_deletes_the_comments_with_comment_mode_delete(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    run_ci(ci.CiArgs(repo=pull.root), actions_env(tmp_path, fake, pull))
    foreign = fake.seed_comment(PR, fake.add_user("other-token", "someone"), "looks good")
    writes = len(fake.writes())
    dry = ci.CiArgs(repo=pull.root, mode=CommentMode.DELETE, dry_run=True)
    status, out, _ = run_ci(dry, closed_env(tmp_path, fake, pull))
    assert status is ExitStatus.OK and "closed: nothing to review" in out
    assert len(fake.writes()) == writes, "a dry run on a closed event writes nothing"
    args = ci.CiArgs(mode=CommentMode.DELETE)  # a `closed` event needs no --closed
    status, _, _ = run_ci(args, closed_env(tmp_path, fake, pull))
    assert status is ExitStatus.OK
    assert [c.id for c in fake.comments(PR)] == [foreign]
    assert len(fake.state.statuses) == 1


def test_closing_with_a_read_only_token_is_a_notice(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    run_ci(ci.CiArgs(repo=pull.root), actions_env(tmp_path, fake, pull))
    fake.fail("PATCH", r"/comments/\d+$", 403, message="Resource not accessible by integration")
    status, out, _ = run_ci(ci.CiArgs(closed=True), closed_env(tmp_path, fake, pull))
    assert status is ExitStatus.OK
    assert "::notice title=reviewer::GitHub refused to write" in out
    assert "**Closed**" not in body(fake)


def test_a_retargeted_pull_request_is_reviewed_against_its_new_base(
    tmp_path: Path, fake: FakeGitHub, bot: User, git_repo: GitRepo
) -> None:
    start = fleet(git_repo)
    git(git_repo.root, "checkout", "--quiet", "-b", "release")
    git_repo.write("deployments/dev/a/cluster.values.yaml", "where: dev/a-release\n")
    release = git_repo.commit("release")
    git(git_repo.root, "checkout", "--quiet", "-b", "feature", start)
    git_repo.write("deployments/prod/group.values.yaml", "tier: platinum\n")
    head = git_repo.commit("platinum")
    git(git_repo.root, "checkout", "--quiet", "--detach", start)
    git(git_repo.root, "merge", "--quiet", "--no-ff", "-m", "Merge into main", head)
    pull = PullRepo(git_repo, start, start, head, git(git_repo.root, "rev-parse", "HEAD"))
    env = actions_env(tmp_path, fake, pull)
    run_ci(ci.CiArgs(repo=pull.root), env)
    (first,) = fake.comments(PR)
    assert f"target [`{start[:7]}`]" in first.body

    # Retargeted to `release`: GitHub sends `edited` with `changes.base`, the new base in
    # pull_request.base, and refs/pull/N/merge now merges into release.
    git(git_repo.root, "checkout", "--quiet", "--detach", release)
    git(git_repo.root, "merge", "--quiet", "--no-ff", "-m", "Merge into release", head)
    payload = json.loads(event(tmp_path, pull).read_text(encoding="utf-8"))
    payload["pull_request"]["base"].update(ref="release", sha=release)
    payload.update(action="edited", changes={"base": {"ref": {"from": "main"}}})
    path = tmp_path / "event-retarget.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    context = github_event.load(
        {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(path)}
    )
    assert context.pull is not None and context.pull.base_changed
    status, _, err = run_ci(ci.CiArgs(repo=pull.root), {**env, "GITHUB_EVENT_PATH": str(path)})
    assert status is ExitStatus.OK, err
    (second,) = fake.comments(PR)
    assert second.id == first.id, "the same sticky comment, edited"
    assert f"target [`{release[:7]}`]" in second.body and "platinum" in second.body

    # A new title is an `edited` event too: nothing to review, nothing written.
    payload.update(changes={"title": {"from": "old"}})
    path.write_text(json.dumps(payload), encoding="utf-8")
    writes = len(fake.writes())
    status, out, _ = run_ci(ci.CiArgs(repo=pull.root), {**env, "GITHUB_EVENT_PATH": str(path)})
    assert status is ExitStatus.OK and "nothing to review" in out
    assert len(fake.writes()) == writes


# --- comment modes, --pr N, outputs ----------------------------------------------------------


def test_only_update_edits_an_existing_comment_and_never_posts_one(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    env = actions_env(tmp_path, fake, pull)
    args = ci.CiArgs(repo=pull.root, mode=CommentMode.ONLY_UPDATE)
    status, _, _ = run_ci(args, env)
    assert status is ExitStatus.OK
    assert fake.comments(PR) == []
    assert len(fake.state.statuses) == 1, "the status is set all the same"
    assert outputs(tmp_path / "output.txt")["comment-url"] == ""

    run_ci(ci.CiArgs(repo=pull.root), env)
    (posted,) = fake.comments(PR)
    run_ci(args, {**env, "GITHUB_RUN_ID": "78"})
    (edited,) = fake.comments(PR)
    assert edited.id == posted.id and "actions/runs/78" in edited.body


def test_delete_mode_removes_this_keys_comments_and_sets_no_status(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    env = actions_env(tmp_path, fake, pull)
    run_ci(ci.CiArgs(repo=pull.root), env)
    run_ci(ci.CiArgs(repo=pull.root, key="other"), env)
    status, _, _ = run_ci(ci.CiArgs(repo=pull.root, mode=CommentMode.DELETE), env)
    assert status is ExitStatus.OK
    (left,) = fake.comments(PR)
    assert Marker.parse(left.body) == Marker("other", 1, 1, pull.head)
    assert len(fake.state.statuses) == 2


def test_pr_number_on_another_event_looks_up_head_and_base(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    """workflow_dispatch with a pr-number, refs/pull/N/merge checked out."""
    env = actions_env(tmp_path, fake, pull, GITHUB_EVENT_NAME="workflow_dispatch")
    del env["GITHUB_EVENT_PATH"]
    fake.state.bases[PR] = ("main", pull.target)
    status, _, err = run_ci(ci.CiArgs(repo=pull.root, pr=PR, output_dir=tmp_path / "r"), env)
    assert status is ExitStatus.OK, err
    (posted,) = fake.comments(PR)
    assert Marker.parse(posted.body) == Marker("default", 1, 1, pull.head)
    assert "platinum" in posted.body and "bronze" not in posted.body
    (state,) = fake.state.statuses
    assert state["sha"] == pull.head
    assert (tmp_path / "r" / "pr.json").is_file()


def test_the_outputs_count_releases_by_status(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    git(pull.root, "checkout", "--quiet", "feature")
    pull.repo.remove("deployments/dev/a")
    pull.repo.write("deployments/prod/us/cluster.values.yaml", "where: prod/us\n")
    pull.repo.write("deployments/prod/us/apps/.keep", "")
    head = pull.repo.commit("prod/us replaces dev/a")
    env = actions_env(tmp_path, fake, replace(pull, head=head))
    args = ci.CiArgs(repo=pull.root, base="main", output_dir=tmp_path / "r")
    status, _, err = run_ci(args, env)
    assert status is ExitStatus.OK, err
    result = outputs(tmp_path / "output.txt")
    counted = {key: result[key] for key in ("added", "changed", "removed", "failed", "errors")}
    assert counted == {"added": "1", "changed": "1", "removed": "1", "failed": "0", "errors": "0"}
    assert result["report-json"] == str(tmp_path / "r" / "report.json")
    assert result["comment-id"] == str(fake.comments(PR)[0].id)


def test_the_command_line_offers_the_new_flags(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["ci", "--closed", "--dry-run"])
    assert done.value.code == ExitStatus.USAGE, "--closed posts a note, never a dry run"

    run_ci(ci.CiArgs(repo=pull.root), actions_env(tmp_path, fake, pull))
    for name, value in closed_env(tmp_path, fake, pull).items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as done:
        main(["ci", "--closed", "--comment-mode", "delete", "--artifact-name", "x"])
    assert done.value.code == ExitStatus.OK
    assert fake.comments(PR) == []
