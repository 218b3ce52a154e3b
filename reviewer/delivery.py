"""Delivering a review from CI: the sticky comments, the commit status, and what leaves.

Every text that leaves the process (comments, the job summary, the report artifact) passes
the leak guard and a check for the credentials this process holds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from reviewer import comment, github_event
from reviewer.comment import Marker
from reviewer.console import Console
from reviewer.errors import ReviewerError
from reviewer.github_event import ActionsContext, Artifact
from reviewer.publish import (
    CommentMode,
    GitHub,
    Outcome,
    Pacer,
    PublishError,
    StatusKind,
    report_status,
    token_from_env,
)
from reviewer.snapshot import Guard
from reviewer.sticky import Sticky, SyncResult, mark_comments, remove_comments, sync_comments
from reviewer.visible import Shown

FOOTER_MARK = "<!-- reviewer:footer -->"


@dataclass(frozen=True)
class Target:
    """The pull request a run is about, from arguments first and the event second."""

    repository: str | None
    number: int | None
    pr_head: str | None
    bases: tuple[str, ...]  # candidates for the target branch, best first
    base_label: str
    api_url: str
    server_url: str
    run_url: str | None


@dataclass(frozen=True)
class Delivery:
    """How a review is delivered: where it is posted, how, and whether at all."""

    key: str = "default"
    mode: CommentMode = CommentMode.UPDATE
    max_parts: int = comment.DEFAULT_MAX_PARTS
    status: StatusKind = StatusKind.STATUS
    fail_on_changes: bool = False
    dry_run: bool = False
    render_only: bool = False
    from_artifact: Path | None = None
    artifact_name: str = "reviewer-report-default"
    token_env: str = "GITHUB_TOKEN"
    closed: bool = False  # the PR was closed: mark (or delete) the comments, render nothing


@dataclass(frozen=True)
class Published:
    """The first sticky comment a delivery left on the pull request ("" when none)."""

    url: str = ""
    comment_id: str = ""

    @classmethod
    def of(cls, result: SyncResult) -> Published:
        """The first part's address and id, from what a sync did."""
        if not result.urls:
            return cls()
        url = result.urls[0]
        _, _, anchor = url.rpartition("#issuecomment-")
        return cls(url, anchor if anchor.isdigit() else "")


@dataclass(frozen=True)
class Channel:
    """What delivery talks through: the output, the environment's credentials, the pacer."""

    console: Console
    env: Mapping[str, str]
    pacer: Pacer | None


def summary(markdown: str) -> str:
    """The report's summary (up to the first details block) with the report's footer."""
    head = comment.summary_of(markdown)
    at = markdown.rfind(FOOTER_MARK)
    return head if at < 0 else head.rstrip() + "\n\n" + markdown[at:]


def deliver(
    how: Delivery,
    target: Target,
    actions: ActionsContext,
    artifact: Artifact,
    channel: Channel,
) -> Published:
    """Post (or print) the comments and the status; returns the first comment, if any."""
    console = channel.console
    if how.render_only:
        console.info("render-only: nothing is posted")
        return Published()
    parts = comment.plan_comments(
        artifact.markdown,
        key=how.key,
        sha=artifact.head_sha,
        pointer=_pointer(how, target),
        summary=summary(artifact.markdown),
        max_parts=how.max_parts,
    )
    texts = {f"comment part {p.number}": p.body for p in parts}
    check_outbound(texts, channel.env, how.token_env, console)
    if how.dry_run:
        _print_parts(parts, console)
        return Published()
    return _publish(how, target, actions, artifact, parts, channel)


def _publish(
    how: Delivery,
    target: Target,
    actions: ActionsContext,
    artifact: Artifact,
    parts: list[comment.Part],
    channel: Channel,
) -> Published:
    client = _client(how, target, channel)
    number = _checked_number(how, target, actions, artifact, client, channel)
    if number is None:
        return Published()
    sticky = Sticky(
        client, number, how.key, client.viewer(), hidden_aware=how.mode is CommentMode.HIDE_OUTDATED
    )
    try:
        result = sync_comments(sticky, parts, how.mode)
    except PublishError as exc:
        if not (exc.denied and client.writes == 0):
            raise
        notice(channel, f"{_READ_ONLY.format(number=number)} See the job summary.")
        return Published()
    channel.console.info(
        f"comments on #{number}: {result.created} created, {result.edited} edited, "
        f"{result.deleted} deleted, {result.hidden} hidden"
    )
    if how.mode is CommentMode.DELETE:
        return Published()
    context = "reviewer" if how.key == "default" else f"reviewer/{how.key}"
    report_status(
        client,
        artifact.head_sha,
        _outcome(how, artifact),
        kind=how.status,
        context=context,
        url=target.run_url,
    )
    return Published.of(result)


_READ_ONLY = (
    "GitHub refused to write on #{number} (403): this run's token is read-only, as on pull "
    "requests from forks and from Dependabot. Nothing was posted; the fork-safe workflow pair "
    "(reviewer-render.yml and reviewer-post.yml) posts the comment."
)


def _client(how: Delivery, target: Target, channel: Channel) -> GitHub:
    if target.repository is None:
        raise ReviewerError("no repository to publish to", hint="pass --repository OWNER/NAME")
    return GitHub(
        token=token_from_env(channel.env, how.token_env),
        api_url=target.api_url,
        repository=github_event.check_repository(target.repository),
        pacer=channel.pacer,
    )


def _checked_number(
    how: Delivery,
    target: Target,
    actions: ActionsContext,
    artifact: Artifact,
    client: GitHub,
    channel: Channel,
) -> int | None:
    """The PR to post on, once it is known to still be at the reviewed head; None: post nothing.

    An artifact is checked against trusted facts first.
    """
    if how.from_artifact is None:
        if target.number is None:
            raise ReviewerError("no pull request number", hint="pass --pr N")
        return _current(how, target.number, artifact.head_sha, client, channel)
    trusted = actions.workflow_run_head_sha or target.pr_head
    if trusted is None or artifact.head_sha != trusted:
        raise ReviewerError(
            "the report artifact is not for the commit the triggering run built",
            hint="post artifacts from `workflow_run` events, or pass --pr-head SHA",
        )
    if client.pull_head_sha(artifact.number) != artifact.head_sha:
        channel.console.warn(f"#{artifact.number} has moved on since this report: not posting it")
        return None
    return artifact.number


def _current(how: Delivery, number: int, head: str, client: GitHub, channel: Channel) -> int | None:
    """`number` when the PR is open at `head`; otherwise None, after saying why.

    A re-run of an old run must never replace the review of a newer head.
    """
    pull = client.pull(number)
    if not pull.open:
        notice(channel, f"#{number} is closed: this review of {head[:7]} is not posted.")
        return None
    if pull.head_sha == head:
        return number
    notice(
        channel,
        f"#{number} has moved on to {pull.head_sha[:7]} since this run reviewed {head[:7]}: "
        "nothing is posted (the run for the new head posts its review).",
    )
    if pull.mergeable is False:
        # GitHub runs no pull_request workflow while the PR conflicts: no newer run will come
        # to replace the old review, so say on it that it is outdated.
        note = _conflict_note(number, pull.head_sha, pull.base_ref)
        _mark(how, number, client, channel, note)
    return None


def _conflict_note(number: int, head: str, base: str) -> Callable[[Marker], str]:
    def note(marker: Marker) -> str:
        if marker.sha == head:
            return ""
        return (
            f"> [!WARNING]\n> **Outdated**: #{number} is now at `{head[:7]}`, which does not "
            f"merge cleanly into {base}; GitHub runs no `pull_request` workflow until the "
            f"conflict is resolved. This review is of `{marker.sha[:7]}`."
        )

    return note


def close(how: Delivery, target: Target, channel: Channel) -> None:
    """A closed PR: mark this key's comments as closed (or delete them); no status, no render."""
    if target.number is None:
        raise ReviewerError("no pull request number", hint="pass --pr N")
    number = target.number
    client = _client(how, target, channel)
    if how.mode is CommentMode.DELETE:
        sticky = Sticky(client, number, how.key, client.viewer())
        _write_or_notice(client, channel, number, lambda: remove_comments(sticky))
        return

    def note(marker: Marker) -> str:
        return (
            f"> [!NOTE]\n> **Closed**: #{number} was closed. This review is of its head "
            f"`{marker.sha[:7]}` and is no longer updated."
        )

    _mark(how, number, client, channel, note)


def _mark(
    how: Delivery, number: int, client: GitHub, channel: Channel, note: Callable[[Marker], str]
) -> None:
    sticky = Sticky(client, number, how.key, client.viewer())
    _write_or_notice(client, channel, number, lambda: mark_comments(sticky, note))


def _write_or_notice(
    client: GitHub, channel: Channel, number: int, write: Callable[[], SyncResult]
) -> None:
    try:
        result = write()
    except PublishError as exc:
        if not (exc.denied and client.writes == 0):
            raise
        notice(channel, _READ_ONLY.format(number=number))
        return
    channel.console.info(f"comments on #{number}: {result.edited} marked, {result.deleted} deleted")


def notice(channel: Channel, text: str) -> None:
    """A message users should see: an annotation in GitHub Actions, a warning elsewhere."""
    if channel.env.get("GITHUB_ACTIONS") == "true":
        escaped = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        channel.console.workflow_command(f"::notice title=reviewer::{escaped}")
    else:
        channel.console.warn(text)


def _outcome(how: Delivery, artifact: Artifact) -> Outcome:
    if artifact.errors:
        text = f"the merge result fails to render ({artifact.errors} failure(s))"
    elif artifact.changed:
        text = "rendered changes" + (" (changes fail this check)" if how.fail_on_changes else "")
    else:
        text = "no rendered changes"
    if artifact.run_failure is not None and not artifact.errors:
        text = f"the rendering run concluded {artifact.run_failure}"
    failed = bool(artifact.errors) or (how.fail_on_changes and artifact.changed)
    failed = failed or artifact.run_failure is not None
    return Outcome(failed, text, summary(artifact.markdown))


def _pointer(how: Delivery, target: Target) -> str:
    where = f"the [workflow run]({target.run_url})" if target.run_url else "the workflow run"
    return (
        "The full report is too long for comments: see the job summary and the "
        f"`{how.artifact_name}` artifact of {where}."
    )


def artifact_note(how: Delivery) -> str:
    """The job summary's pointer to the full report when the summary is truncated."""
    return f"Truncated: the full report is in the `{how.artifact_name}` artifact of this run."


def _print_parts(parts: list[comment.Part], console: Console) -> None:
    for part in parts:
        size = comment.size(part.body)
        console.write(f"----- comment {part.number}/{part.total} ({size} bytes) -----\n")
        # Markdown that escapes what a pull request controls (reviewer/markdown.py).
        console.write(Shown(part.body if part.body.endswith("\n") else part.body + "\n"))


def check_outbound(
    texts: Mapping[str, str], env: Mapping[str, str], token_env: str, console: Console
) -> None:
    """Refuse to let out text holding a secret value (leak guard) or a credential we were given."""
    guard = outbound_guard(env, token_env, console)
    for location, text in texts.items():
        guard(text, location)


def outbound_guard(env: Mapping[str, str], token_env: str, console: Console) -> Guard:
    """The leak guard plus a check for the credentials this process holds (token, age keys)."""
    given = [env.get(token_env, ""), *env.get("SOPS_AGE_KEY", "").splitlines()]
    secrets = {s.strip() for s in given if len(s.strip()) >= 16 and not s.startswith("#")}

    def guard(text: str, location: str) -> None:
        console.check(text, location)
        if any(secret in text for secret in secrets):
            raise ReviewerError(f"refusing to publish: the {location} contains a credential")

    return guard
