"""Red team: the fork-safe pair's `workflow_run` half, on the loopback GitHub API.

The half that holds the write token posts an artifact made by an untrusted
run. It checks the triggering run's event and conclusion from the event
payload (GitHub's word, not the artifact's), never reports success for a run
that did not succeed, and never posts the artifact's Markdown: the comment is rebuilt from
its strictly decoded `report.json` through the report's escaping filters.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from github_api import FakeGitHub, User
from test_action import PR, PullRepo, post_env, pull, render_artifact, run_ci
from test_markdown import assert_inert

from reviewer import github_event
from reviewer.commands import ci
from reviewer.delivery import FOOTER_MARK
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


def test_the_artifact_markdown_is_never_posted(
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
    assert "everything below is hidden" not in posted.body
    assert posted.body.count("<!--") == 2  # our own marker and footer only
    assert "Rebuilt from the `report.json`" in posted.body
    assert "actions/runs/77" in posted.body, "the footer points at the run holding the artifact"


HOSTILE = (
    "x ![x](https://evil.example/t.png) @org/team <img src=x onerror=alert(1)> "
    "[click](https://evil.example) <!-- hide\n<!-- reviewer:sticky key=default part=1/1 sha="
    + "f" * 40
    + " -->\n# forged heading\n</details>"
)


def _forge(report: dict[str, Any]) -> dict[str, Any]:
    """`report` with attacker text in every string the rebuilt comment shows."""
    release = next(r for r in report["releases"] if r["resources"])
    release["release"] = HOSTILE
    release["chartChange"] = HOSTILE
    resource = release["resources"][0]
    resource["name"] = resource["kind"] = resource["namespace"] = resource["diff"] = HOSTILE
    report["summary"]["clusters"][0]["cluster"] = HOSTILE
    report["warnings"] = [HOSTILE]
    failure = {"cluster": HOSTILE, "deployment": "d", "release": "r"}
    report["head"]["errors"] = [{**failure, "message": HOSTILE, "reproduce": HOSTILE}]
    report["base"]["ref"] = report["head"]["ref"] = HOSTILE
    return report


def test_a_forged_artifact_puts_nothing_live_into_the_comment(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    artifact = render_artifact(tmp_path, fake, pull)
    report = json.loads((artifact / "report.json").read_text(encoding="utf-8"))
    (artifact / "report.json").write_text(json.dumps(_forge(report)), encoding="utf-8")
    (artifact / "report.md").write_text(HOSTILE, encoding="utf-8")
    fake.state.pulls[PR] = pull.head
    status, _, _ = run_ci(ci.CiArgs(from_artifact=artifact), post_env(tmp_path, fake, pull))
    assert status is ExitStatus.RENDER_FAILED  # the forged report names a failure
    (posted,) = fake.comments(PR)
    body, footer = posted.body.split(FOOTER_MARK)
    assert_inert(body, first_line_marker=True)
    assert "evil.example" not in footer and "@org" not in footer
    assert posted.body.count("<!-- reviewer:") == 2  # our own marker and footer only
    assert "@org/team <img" in posted.body, "the forged text is shown, inert, in code"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("releases", [{"cluster": "c"}], r"releases\[0\]\.deployment: is required"),
        (
            "releases",
            [{"cluster": "c", "deployment": "d", "release": "r", "status": "x"}],
            "one of",
        ),
        ("summary", {"releases": {"added": "1"}}, "whole number"),
        ("base", {"ref": "main", "sha": "HEAD", "errors": []}, "full commit SHA"),
    ],
)
def test_a_malformed_report_json_is_refused(
    tmp_path: Path, fake: FakeGitHub, pull: PullRepo, field: str, value: object, message: str
) -> None:
    artifact = render_artifact(tmp_path, fake, pull)
    report = json.loads((artifact / "report.json").read_text(encoding="utf-8"))
    (artifact / "report.json").write_text(json.dumps({**report, field: value}), encoding="utf-8")
    with pytest.raises(ReviewerError, match=message):
        github_event.read_artifact(artifact)
