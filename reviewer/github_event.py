"""What a GitHub Actions run tells us: the event payload and the `GITHUB_*` environment.

Only numbers, SHAs and refs are read from the payload (titles and bodies are attacker-written
on pull requests) and each is checked before use.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reviewer import artifact_report, decode
from reviewer.errors import ConfigError, ReviewerError
from reviewer.report_json import REPORT_SCHEMA

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_SERVER_URL = "https://github.com"
PULL_REQUEST_EVENTS = ("pull_request", "pull_request_target")

SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
REPOSITORY = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class PullRequest:
    """The pull request a run reviews."""

    number: int
    head_sha: str | None = None
    base_sha: str | None = None
    base_ref: str | None = None
    action: str | None = None  # opened, synchronize, edited, closed, ...
    base_changed: bool = False  # an `edited` event that retargeted the PR (base is the new one)

    @property
    def review_needed(self) -> bool:
        """False for an `edited` event that changed only the title or the description."""
        return self.action != "edited" or self.base_changed


_RUN_WORD = re.compile(r"[a-z_]{1,40}")


@dataclass(frozen=True)
class TriggeringRun:
    """The run a `workflow_run` event reports on, from the event payload (GitHub's word)."""

    conclusion: str | None
    event: str | None
    run_id: int | None = None
    """The triggering run's id: the run that holds the artifact."""

    @property
    def succeeded(self) -> bool:
        """Only `success` is success: failure, cancelled, timed_out, ... are not."""
        return self.conclusion == "success"

    @property
    def conclusion_text(self) -> str:
        """The conclusion for display: a plain word, else `unknown`."""
        return _plain_word(self.conclusion)

    @property
    def event_text(self) -> str:
        """The triggering event for display: a plain word, else `unknown`."""
        return _plain_word(self.event)


def _plain_word(value: str | None) -> str:
    return value if value is not None and _RUN_WORD.fullmatch(value) else "unknown"


@dataclass(frozen=True)
class ActionsContext:
    """The parts of a run's environment and event that `reviewer ci` uses."""

    event_name: str | None = None
    repository: str | None = None
    api_url: str = DEFAULT_API_URL
    server_url: str = DEFAULT_SERVER_URL
    run_url: str | None = None
    pull: PullRequest | None = None
    workflow_run_head_sha: str | None = None
    """For `workflow_run` events: the commit the triggering run built (trusted)."""
    triggering_run: TriggeringRun | None = None
    """For `workflow_run` events: how the run that made the artifact was started and ended."""
    output_path: Path | None = None
    summary_path: Path | None = None


def load(env: Mapping[str, str]) -> ActionsContext:
    """Read `GITHUB_*` variables and, when `GITHUB_EVENT_PATH` is set, the event payload."""
    event_name = env.get("GITHUB_EVENT_NAME") or None
    event = _event(env.get("GITHUB_EVENT_PATH"))
    repository = env.get("GITHUB_REPOSITORY") or event.repository
    server_url = (env.get("GITHUB_SERVER_URL") or DEFAULT_SERVER_URL).rstrip("/")
    return ActionsContext(
        event_name=event_name,
        repository=check_repository(repository) if repository else None,
        api_url=(env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/"),
        server_url=server_url,
        run_url=_run_url(server_url, repository, env.get("GITHUB_RUN_ID")),
        pull=event.pull() if event_name in PULL_REQUEST_EVENTS else None,
        workflow_run_head_sha=event.workflow_run_sha() if event_name == "workflow_run" else None,
        triggering_run=event.triggering_run() if event_name == "workflow_run" else None,
        output_path=_path(env.get("GITHUB_OUTPUT")),
        summary_path=_path(env.get("GITHUB_STEP_SUMMARY")),
    )


@dataclass(frozen=True)
class _Event:
    """The event payload, decoded lazily by event type: only the parts a run needs."""

    payload: Mapping[str, Any]
    at: decode.Field

    @property
    def repository(self) -> str | None:
        repository = decode.optional_map(self.payload, "repository", self.at)
        return decode.optional(
            repository, "full_name", self.at.key("repository"), decode.string, None
        )

    def pull(self) -> PullRequest:
        pull = decode.required(self.payload, "pull_request", self.at, decode.mapping)
        at = self.at.key("pull_request")
        base = decode.optional_map(pull, "base", at)
        head = decode.optional_map(pull, "head", at)
        return PullRequest(
            number=decode.required(pull, "number", at, _pull_number),
            head_sha=decode.optional(head, "sha", at.key("head"), _sha, None),
            base_sha=decode.optional(base, "sha", at.key("base"), _sha, None),
            base_ref=decode.optional(base, "ref", at.key("base"), decode.string, None),
            action=decode.optional(self.payload, "action", self.at, decode.string, None),
            base_changed="base" in decode.optional_map(self.payload, "changes", self.at),
        )

    def workflow_run_sha(self) -> str | None:
        run = decode.optional_map(self.payload, "workflow_run", self.at)
        return decode.optional(run, "head_sha", self.at.key("workflow_run"), _sha, None)

    def triggering_run(self) -> TriggeringRun:
        run = decode.optional_map(self.payload, "workflow_run", self.at)
        at = self.at.key("workflow_run")
        return TriggeringRun(
            conclusion=decode.optional(run, "conclusion", at, _optional_string, None),
            event=decode.optional(run, "event", at, _optional_string, None),
            run_id=decode.optional(run, "id", at, _pull_number, None),
        )


def _optional_string(value: object, at: decode.Field) -> str | None:
    # GitHub sends `conclusion: null` while a run is still in progress.
    return None if value is None else decode.string(value, at)


def _event(path: str | None) -> _Event:
    if not path:
        return _Event({}, decode.Field("the event payload"))
    at = decode.Field(path)
    return _Event(decode.mapping(decode.read_json(Path(path), source=path), at), at)


def _pull_number(value: object, at: decode.Field) -> int:
    return decode.integer(value, at, minimum=1)


def _sha(value: object, at: decode.Field) -> str:
    text = decode.string(value, at)
    if not SHA.fullmatch(text):
        raise at.error("must be a full commit SHA (40 or 64 hex digits)")
    return text


def check_sha(value: Any, what: str) -> str | None:
    """`value` if it is a full commit SHA, None when absent; an error for anything else."""
    if value is None:
        return None
    if not isinstance(value, str) or not SHA.fullmatch(value):
        raise ReviewerError(f"{what} is not a commit SHA")
    return value


def check_repository(value: Any) -> str:
    """`value` if it looks like `owner/name`."""
    if not isinstance(value, str) or not REPOSITORY.fullmatch(value):
        raise ReviewerError("the repository must be given as OWNER/NAME")
    return value


def _run_url(server_url: str, repository: str | None, run_id: str | None) -> str | None:
    if not (repository and run_id and run_id.isdigit()):
        return None
    return f"{server_url}/{repository}/actions/runs/{run_id}"


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


def write_outputs(path: Path, values: Mapping[str, str]) -> None:
    """Append step outputs to the `GITHUB_OUTPUT` file (heredoc form for multi-line values)."""
    with path.open("a", encoding="utf-8") as out:
        for name, value in values.items():
            if "\n" in value:
                delimiter = f"EOF_{uuid.uuid4().hex}"
                out.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
            else:
                out.write(f"{name}={value}\n")


# --- the report artifact: handed from a `pull_request` run to a `workflow_run` run -----------

ARTIFACT_SCHEMA = "reviewer.artifact/v1"
ARTIFACT_FILES = {"report.md": 32 << 20, "report.json": 64 << 20, "pr.json": 64 << 10}
"""Files of an artifact and the largest size accepted for each when reading one back."""


@dataclass(frozen=True)
class Artifact:
    """A rendered review: what a later, privileged run may post."""

    number: int
    head_sha: str
    markdown: str
    report: dict[str, Any]
    run_failure: str | None = None
    """How the rendering run ended when that was not `success` (from the trusted event)."""
    commits: tuple[str, str] | None = None
    """Read back from an artifact: the target and merge commits its report.json names."""

    @property
    def errors(self) -> int:
        """Render failures that fail the run: new on the merge result, or (if asked) still there."""
        still = self.report.get("stillFailing", [])
        return len(self.report["head"]["errors"]) + sum(1 for f in still if f.get("blocking"))

    @property
    def changed(self) -> bool:
        """Whether any release is added, removed or changed."""
        changing = ("added", "removed", "changed")
        return any(release.get("status") in changing for release in self.report["releases"])


def write_artifact(directory: Path, artifact: Artifact, *, report_json: str) -> None:
    """Write the artifact's files (the report users download, and what a later run posts)."""
    directory.mkdir(parents=True, exist_ok=True)
    meta = {"schema": ARTIFACT_SCHEMA, "number": artifact.number, "head_sha": artifact.head_sha}
    (directory / "report.md").write_text(artifact.markdown, encoding="utf-8")
    (directory / "report.json").write_text(report_json, encoding="utf-8")
    (directory / "pr.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def read_artifact(directory: Path) -> Artifact:
    """Read an artifact made by an untrusted run: every file and field is checked before use.

    Its `report.md` is checked (present, UTF-8, within size) but never used: the Markdown is
    rebuilt from the strictly decoded `report.json` (`reviewer/artifact_report.py`)."""
    texts = {name: _artifact_file(directory, name, limit) for name, limit in ARTIFACT_FILES.items()}
    meta = _json_object(texts["pr.json"], "pr.json")
    report = _json_object(texts["report.json"], "report.json")
    if meta.get("schema") != ARTIFACT_SCHEMA or report.get("schema") != REPORT_SCHEMA:
        raise ReviewerError("the report artifact has an unknown schema", file=str(directory))
    number = meta.get("number")
    if not isinstance(number, int) or isinstance(number, bool) or number <= 0:
        raise ReviewerError("pr.json: number is not a pull request number", file=str(directory))
    _check_report(report, directory)
    head_sha = check_sha(meta.get("head_sha"), "pr.json head_sha")
    if head_sha is None:
        raise ReviewerError("pr.json has no head_sha", file=str(directory))
    try:
        view = artifact_report.decode_report(report, sha=_sha)
    except ConfigError as error:
        raise ReviewerError(f"the report artifact is malformed: {error}") from None
    markdown = artifact_report.render_markdown(view)
    return Artifact(number, head_sha, markdown, report, commits=(view.base_sha, view.head_sha))


def check_triggering_run(artifact: Artifact, run: TriggeringRun | None) -> Artifact:
    """`artifact` as the event allows it to be posted: only from `pull_request` runs, and
    never as a success when the rendering run did not succeed."""
    if run is None:
        return artifact
    if run.event != "pull_request":
        raise ReviewerError(
            f"the triggering run was started by a `{run.event_text}` event, not `pull_request`: "
            "its artifact is not posted"
        )
    if run.succeeded:
        return artifact
    note = (
        f"> **Warning:** the rendering run concluded `{run.conclusion_text}`; "
        "this report may be incomplete.\n\n"
    )
    return replace(artifact, markdown=note + artifact.markdown, run_failure=run.conclusion_text)


def _artifact_file(directory: Path, name: str, limit: int) -> str:
    path = directory / name
    if path.is_symlink() or not path.is_file():
        raise ReviewerError(f"{name} is missing or not a regular file", file=str(directory))
    if path.stat().st_size > limit:
        raise ReviewerError(f"{name} is larger than {limit} bytes", file=str(directory))
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ReviewerError(f"{name} is not UTF-8 text", file=str(directory)) from None


def _json_object(text: str, name: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError:
        raise ReviewerError(f"{name} is not valid JSON") from None
    if not isinstance(data, dict):
        raise ReviewerError(f"{name} is not a JSON object")
    return data


def _check_report(report: dict[str, Any], directory: Path) -> None:
    head = report.get("head")
    releases = report.get("releases")
    if not (
        isinstance(head, dict)
        and isinstance(head.get("errors"), list)
        and isinstance(releases, list)
        and all(isinstance(release, dict) for release in releases)
    ):
        raise ReviewerError("report.json does not look like a reviewer report", file=str(directory))
