"""The GitHub event payload: read once, every field checked, errors name the file and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reviewer import github_event
from reviewer.cli import main
from reviewer.errors import ConfigError, ExitStatus

FIXTURES = Path(__file__).parent / "fixtures" / "github"
HEAD = "1" * 40
BASE = "2" * 40


def payload(tmp_path: Path, change: dict[str, Any] | None = None, *, text: str = "") -> Path:
    """The fixture pull_request payload with real-looking SHAs, `change` merged into it."""
    data = json.loads((FIXTURES / "pull_request.json").read_text(encoding="utf-8"))
    data["pull_request"]["head"]["sha"] = HEAD
    data["pull_request"]["base"]["sha"] = BASE
    for key, value in (change or {}).items():
        data["pull_request"][key] = value
    path = tmp_path / "event.json"
    path.write_text(text or json.dumps(data), encoding="utf-8")
    return path


def test_a_pull_request_event_is_read(tmp_path: Path) -> None:
    env = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(payload(tmp_path))}
    actions = github_event.load(env)
    assert actions.pull is not None
    assert (actions.pull.head_sha, actions.pull.base_sha) == (HEAD, BASE)
    assert actions.pull.number > 0 and actions.pull.base_ref
    assert actions.repository is not None and "/" in actions.repository


def test_a_workflow_run_event_gives_the_built_commit(tmp_path: Path) -> None:
    data = json.loads((FIXTURES / "workflow_run.json").read_text(encoding="utf-8"))
    data["workflow_run"]["head_sha"] = HEAD
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    env = {"GITHUB_EVENT_NAME": "workflow_run", "GITHUB_EVENT_PATH": str(path)}
    assert github_event.load(env).workflow_run_head_sha == HEAD
    data["workflow_run"]["head_sha"] = "HEAD"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"workflow_run\.head_sha: must be a full commit SHA"):
        github_event.load(env)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"number": "12"}, "pull_request.number: must be a whole number"),
        ({"number": 0}, "pull_request.number: must be at least 1"),
        ({"head": {"sha": "main"}}, "pull_request.head.sha: must be a full commit SHA"),
        ({"base": {"sha": BASE, "ref": ["main"]}}, "pull_request.base.ref: must be a string"),
        ({"base": "main"}, "pull_request.base: must be a map"),
    ],
)
def test_a_bad_payload_field_is_named(tmp_path: Path, change: dict[str, Any], field: str) -> None:
    path = payload(tmp_path, change)
    env = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(path)}
    with pytest.raises(ConfigError) as caught:
        github_event.load(env)
    assert str(caught.value).startswith(f"{path}: {field}")


def test_a_malformed_payload_stops_reviewer_ci_with_exit_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = payload(tmp_path, text='{"pull_request": {"number": 12,\n  "title": "hunter2" oops')
    monkeypatch.setenv("GITHUB_EVENT_NAME", "pull_request")
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(path))
    with pytest.raises(SystemExit) as done:
        main(["ci", "--repo", str(tmp_path), "--dry-run"])
    assert done.value.code == ExitStatus.INVALID_REPOSITORY
    stderr = capsys.readouterr().err
    assert f"error: {path}:2: malformed JSON" in stderr
    assert "hunter2" not in stderr
