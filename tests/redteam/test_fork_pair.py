"""Red team: the fork-safe pair's `workflow_run` half, on the loopback GitHub API.

The half that holds the write token posts an artifact made by an untrusted
run. It checks the triggering run's event and conclusion from the event
payload (GitHub's word, not the artifact's), never reports success for a run
that did not succeed, and shows no HTML comment the artifact smuggles in.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from github_api import FakeGitHub, User
from test_action import PR, PullRepo, post_env, pull, render_artifact, run_ci

from reviewer.commands import ci
from reviewer.errors import ExitStatus, ReviewerError

__all__ = ["pull"]  # the fixture, shared with test_action


def _with_run(env: dict[str, str], tmp_path: Path, **run: object) -> dict[str, str]:
    """`env` whose workflow_run payload says how the triggering run went."""
    payload = json.loads(Path(env["GITHUB_EVENT_PATH"]).read_text(encoding="utf-8"))
    payload["workflow_run"].update(run)
    path = tmp_path / "event-run.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return {**env, "GITHUB_EVENT_PATH": str(path)}


@pytest.mark.parametrize("conclusion", ["failure", "cancelled", "timed_out", None])
def test_a_run_that_did_not_succeed_is_never_reported_as_success(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo, conclusion: str | None
) -> None:
    artifact = render_artifact(tmp_path, fake, pull)  # the artifact itself says: no errors
    fake.state.pulls[PR] = pull.head
    env = _with_run(post_env(tmp_path, fake, pull), tmp_path, conclusion=conclusion)
    status, _, _ = run_ci(ci.CiArgs(from_artifact=artifact), env)
    assert status is ExitStatus.RENDER_FAILED
    (state,) = fake.state.statuses
    assert state["state"] == "failure"
    assert (conclusion or "unknown") in state["description"]
    (posted,) = fake.comments(PR)
    assert f"the rendering run concluded `{conclusion or 'unknown'}`" in posted.body


@pytest.mark.parametrize("event", ["push", "pull_request_target", "schedule"])
def test_only_artifacts_of_pull_request_runs_are_posted(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo, event: str
) -> None:
    artifact = render_artifact(tmp_path, fake, pull)
    fake.state.pulls[PR] = pull.head
    env = _with_run(post_env(tmp_path, fake, pull), tmp_path, event=event)
    with pytest.raises(ReviewerError, match="not `pull_request`"):
        run_ci(ci.CiArgs(from_artifact=artifact), env)
    assert fake.comments(PR) == [] and fake.state.statuses == []


def test_an_html_comment_in_the_artifact_cannot_hide_what_follows(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    artifact = render_artifact(tmp_path, fake, pull)
    report = (artifact / "report.md").read_text(encoding="utf-8")
    forged = report.replace("\n", "\n<!-- everything below is hidden\n", 1)
    (artifact / "report.md").write_text(forged, encoding="utf-8")
    fake.state.pulls[PR] = pull.head
    status, _, _ = run_ci(ci.CiArgs(from_artifact=artifact), post_env(tmp_path, fake, pull))
    assert status is ExitStatus.OK
    (posted,) = fake.comments(PR)
    assert "&lt;!-- everything below is hidden" in posted.body
    assert "<!-- everything" not in posted.body
    assert posted.body.count("<!--") == 2  # our own marker and footer only
