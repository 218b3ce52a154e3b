"""Publishing to GitHub: the API client, commit status or check run, and the job summary.

Every call goes through one chokepoint that spaces writes at least a second apart (secondary
rate limits), retries 5xx and rate-limit answers (honouring `retry-after`), and turns failures
into `PublishError`s whose text never contains the token. The sticky comments are `sticky`'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:  # PyGithub loads in about half a second: only commands that publish pay
    from github import GithubException
    from github.IssueComment import IssueComment

from reviewer import __version__
from reviewer.comment import clip, truncate_markdown
from reviewer.errors import ReviewerError

T = TypeVar("T")

JOB_SUMMARY_LIMIT = 1024 * 1024
"""`$GITHUB_STEP_SUMMARY` accepts at most 1 MiB per step."""
CHECK_TEXT_LIMIT = 65_535
"""Check-run `output.summary` limit, in characters."""
MAX_WAIT = 900.0
"""Longest single wait for a rate limit before giving up (seconds)."""
_SECONDARY = ("secondary rate limit", "abuse detection", "please retry your request again later")


class CommentMode(str, Enum):
    """How re-runs treat the comments of earlier runs."""

    UPDATE = "update"  # edit in place
    RECREATE = "recreate"  # post anew at the bottom, delete the old ones
    HIDE_OUTDATED = "hide-outdated"  # post anew per commit, minimize the old ones as outdated
    ONLY_UPDATE = "only-update"  # edit in place, never post a new comment
    DELETE = "delete"  # remove this key's comments, post nothing


class StatusKind(str, Enum):
    """What the run reports on the PR head commit."""

    STATUS = "status"
    CHECK = "check"
    NONE = "none"


class PublishError(ReviewerError):
    """A GitHub API call failed for good; `status` is the HTTP status when there was one."""

    def __init__(self, message: str, *, status: int | None = None, hint: str | None = None):
        self.status = status
        super().__init__(message, hint=hint)

    @property
    def denied(self) -> bool:
        """GitHub refused the write for lack of permission (not for a rate limit)."""
        return self.status == 403 and "rate limit" not in str(self).lower()


def token_from_env(env: Mapping[str, str], name: str = "GITHUB_TOKEN") -> str:
    """The API token from the environment variable `name`."""
    token = env.get(name, "").strip()
    if not token:
        raise ReviewerError(
            f"no GitHub token: ${name} is empty",
            hint=f"in a workflow step set `env: {name}: ${{{{ github.token }}}}`, or use --dry-run",
        )
    return token


# --- the API chokepoint ----------------------------------------------------------------------


# Mutable on purpose: it remembers the last write, to space the next one a second later.
@dataclass
class Pacer:
    """Spacing and retry timing; `sleep` and the clocks are injectable so tests run instantly."""

    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time
    write_interval: float = 1.0
    attempts: int = 5
    _last_write: float | None = field(default=None, init=False)

    def before_write(self) -> None:
        """Wait until `write_interval` has passed since the previous write."""
        if self._last_write is not None:
            wait = self._last_write + self.write_interval - self.clock()
            if wait > 0:
                self.sleep(wait)
        self._last_write = self.clock()

    def delay(self, exc: GithubException, attempt: int) -> float | None:
        """Seconds to wait before retrying after `exc`, or None when retrying cannot help."""
        headers = {key.lower(): value for key, value in (exc.headers or {}).items()}
        if exc.status in (403, 429):
            return self._rate_limit_delay(exc.data, exc.status, headers, attempt)
        if exc.status >= 500:
            return float(min(30, 1 << attempt))
        return None

    def _rate_limit_delay(
        self, data: object, status: int, headers: Mapping[str, str], attempt: int
    ) -> float | None:
        retry_after = headers.get("retry-after", "")
        if retry_after.strip().isdigit():
            return max(1.0, float(retry_after))
        if headers.get("x-ratelimit-remaining") == "0":
            reset = headers.get("x-ratelimit-reset", "")
            return max(1.0, float(reset) - self.wall()) if reset.isdigit() else 60.0
        message = str(data.get("message", "")).lower() if isinstance(data, dict) else ""
        if status == 429 or any(text in message for text in _SECONDARY):
            # GitHub's advice for a secondary limit without retry-after: wait at least a minute.
            return 60.0 * (1 << attempt)
        return None


class GitHub:
    """The few GitHub calls `reviewer` makes, through PyGithub, with pacing and retries."""

    def __init__(
        self,
        *,
        token: str,
        api_url: str,
        repository: str,
        pacer: Pacer | None = None,
        timeout: int = 30,
    ) -> None:
        from github import Auth, Github

        self._token = token
        self.pacer = pacer or Pacer()
        self.writes = 0  # successful writes: a 403 before the first one means a read-only token
        # PyGithub's own retries and throttling are off: the Pacer does both, injectably.
        self._github = Github(
            auth=Auth.Token(token),
            base_url=api_url.rstrip("/"),
            timeout=timeout,
            user_agent=f"reviewer/{__version__}",
            per_page=100,
            retry=0,
            seconds_between_requests=None,
            seconds_between_writes=None,
            lazy=True,
        )
        self._repo = self._github.get_repo(repository)

    def call(self, what: str, action: Callable[[], T], *, write: bool = False) -> T:
        """Run one API action with pacing and retries; failures become scrubbed PublishErrors."""
        from github import GithubException

        for attempt in range(self.pacer.attempts):
            if write:
                self.pacer.before_write()
            try:
                done = action()
                self.writes += write
                return done
            except GithubException as exc:
                wait = self.pacer.delay(exc, attempt)
                if wait is None or wait > MAX_WAIT or attempt + 1 == self.pacer.attempts:
                    raise self._error(what, exc) from None
            except OSError as exc:  # connection errors (requests' exceptions are OSErrors)
                wait = float(1 << attempt)
                if attempt + 1 == self.pacer.attempts:
                    raise PublishError(f"{what}: {self.scrub(str(exc))}") from None
            self.pacer.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def scrub(self, text: str) -> str:
        """`text` with the token blanked out (error texts can echo request details)."""
        return text.replace(self._token, "***") if self._token else text

    def _error(self, what: str, exc: GithubException) -> PublishError:
        message = exc.data.get("message") if isinstance(exc.data, dict) else None
        text = self.scrub(f"{what}: GitHub answered {exc.status}: {message or exc}")
        return PublishError(text, status=exc.status, hint=_HINTS.get(exc.status))

    # --- the calls ---

    def viewer(self) -> str:
        """The login of the token's user (works for installation tokens too, unlike GET /user)."""
        _, data = self.call(
            "read the token's user",
            lambda: self._github.requester.graphql_query("query { viewer { login } }", {}),
        )
        return str(data["data"]["viewer"]["login"])

    def comments(self, number: int) -> list[IssueComment]:
        """Every comment of issue or pull request `number`, oldest first."""
        issue = self._repo.get_issue(number)
        return self.call(f"list the comments of #{number}", lambda: list(issue.get_comments()))

    def create_comment(self, number: int, body: str) -> IssueComment:
        """Post a new comment."""
        issue = self._repo.get_issue(number)
        return self.call(f"comment on #{number}", lambda: issue.create_comment(body), write=True)

    def edit_comment(self, comment: IssueComment, body: str) -> None:
        """Replace a comment's body."""
        self.call(f"edit comment {comment.id}", lambda: comment.edit(body), write=True)

    def delete_comment(self, comment: IssueComment) -> None:
        """Delete a comment; one already gone is fine."""
        try:
            self.call(f"delete comment {comment.id}", comment.delete, write=True)
        except PublishError as exc:
            if exc.status != 404:
                raise

    def minimize(self, comment: IssueComment) -> None:
        """Hide a comment as outdated (GraphQL `minimizeComment`)."""
        self.call(f"hide comment {comment.id}", lambda: comment.minimize("OUTDATED"), write=True)

    def minimized(self, node_ids: Sequence[str]) -> set[str]:
        """Which of these comment node ids are minimized already."""
        found: set[str] = set()
        for start in range(0, len(node_ids), 100):
            found |= self._minimized_batch(list(node_ids[start : start + 100]))
        return found

    def _minimized_batch(self, ids: list[str]) -> set[str]:
        query = self._github.requester.graphql_query
        _, data = self.call(
            "read which comments are hidden", lambda: query(_MINIMIZED, {"ids": ids})
        )
        return {node["id"] for node in data["data"]["nodes"] if node and node["isMinimized"]}

    def pull_head_sha(self, number: int) -> str:
        """The current head commit of pull request `number`."""
        return self.pull(number).head_sha

    def pull(self, number: int) -> PullFacts:
        """What GitHub says of pull request `number` now."""
        pull = self._repo.get_pull(number)

        def read() -> PullFacts:
            mergeable = pull.mergeable
            return PullFacts(
                head_sha=str(pull.head.sha),
                base_sha=str(pull.base.sha),
                base_ref=str(pull.base.ref),
                open=pull.state == "open",
                mergeable=None if mergeable is None else bool(mergeable),
            )

        return self.call(f"read pull request #{number}", read)

    def create_status(
        self, sha: str, *, state: str, description: str, context: str, target_url: str | None
    ) -> None:
        """Set a commit status."""
        from github.GithubObject import NotSet

        commit = self._repo.get_commit(sha)
        self.call(
            f"set the status of {sha[:7]}",
            lambda: commit.create_status(
                state,
                target_url=target_url or NotSet,
                description=description,
                context=context,
            ),
            write=True,
        )

    def create_check_run(
        self, sha: str, *, conclusion: str, name: str, title: str, summary: str, url: str | None
    ) -> None:
        """Create a completed check run."""
        output: dict[str, str | list[dict[str, str | int]]] = {"title": title, "summary": summary}
        try:
            self._create_check_run(sha, conclusion, name, output, url)
        except PublishError as exc:
            if not exc.denied:
                raise
            raise PublishError(str(exc), status=exc.status, hint=_CHECK_HINT) from None

    def _create_check_run(
        self,
        sha: str,
        conclusion: str,
        name: str,
        output: dict[str, str | list[dict[str, str | int]]],
        url: str | None,
    ) -> None:
        from github.GithubObject import NotSet

        self.call(
            f"create check run on {sha[:7]}",
            lambda: self._repo.create_check_run(
                name,
                sha,
                status="completed",
                conclusion=conclusion,
                output=output,
                details_url=url or NotSet,
            ),
            write=True,
        )


@dataclass(frozen=True)
class PullFacts:
    """A pull request as the API reports it at the time of asking."""

    head_sha: str
    base_sha: str
    base_ref: str
    open: bool
    mergeable: bool | None  # None: GitHub has not computed it yet


_MINIMIZED = "query($ids: [ID!]!) { nodes(ids: $ids) { ... on IssueComment { id isMinimized } } }"
_HINTS = {
    401: "the token is invalid or expired",
    403: "the workflow needs `permissions: pull-requests: write` and `statuses: write` "
    "(or `checks: write`); pull requests from forks get a read-only token: use the "
    "two-workflow variant in workflows/",
    404: "the repository or pull request does not exist, or the token cannot see it",
}
_CHECK_HINT = (
    "only GITHUB_TOKEN (with `permissions: checks: write`) and GitHub App tokens can create "
    "check runs; a personal access token cannot: use `status: status` with such a token"
)


# --- status and job summary ------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """The result a run reports on the head commit."""

    failed: bool
    description: str
    summary: str = ""

    @property
    def state(self) -> str:
        """`failure` or `success` (as commit statuses and check conclusions spell it)."""
        return "failure" if self.failed else "success"


def report_status(
    client: GitHub,
    sha: str,
    outcome: Outcome,
    *,
    kind: StatusKind,
    context: str,
    url: str | None,
) -> None:
    """Put the outcome on commit `sha` as a commit status or a check run."""
    description = clip(outcome.description, 140)  # statuses reject longer descriptions
    if kind is StatusKind.STATUS:
        client.create_status(
            sha, state=outcome.state, description=description, context=context, target_url=url
        )
    elif kind is StatusKind.CHECK:
        summary = truncate_markdown(outcome.summary or description, 60_000, "*(truncated)*")
        client.create_check_run(
            sha,
            conclusion=outcome.state,
            name=context,
            title=description,
            summary=summary,
            url=url,
        )


def write_job_summary(path: Path, markdown: str, *, pointer: str) -> None:
    """Append `markdown` to the step summary, cut to what is left of its 1 MiB."""
    used = path.stat().st_size if path.exists() else 0
    room = JOB_SUMMARY_LIMIT - used - 1024
    if room <= 0:
        return
    text = truncate_markdown(markdown, room, f"> [!NOTE]\n> {pointer}\n")
    with path.open("a", encoding="utf-8") as out:
        out.write(text if text.endswith("\n") else text + "\n")
