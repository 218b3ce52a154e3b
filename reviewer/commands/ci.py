"""`reviewer ci`: review a pull request in GitHub Actions (or any CI) and publish the result.

Inside Actions everything comes from the event and `GITHUB_*`; elsewhere the same facts are
given as arguments. The target side is the first parent of GitHub's merge commit (the event's
`base.sha` can be stale); the other side is the merge commit itself.

A large fleet can be spread over a CI matrix: each job renders one shard (`--shard I/N --save
DIR --render-only`) and one more job merges the saved bundles and publishes (`--from-shards`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from reviewer import __version__, comment, github_event, report_json, report_markdown
from reviewer.bundle import RenderedPair
from reviewer.checkout import fleet_root, toplevel
from reviewer.commands import diff as diff_cmd
from reviewer.commits import Commits, pick_commits, pr_sides
from reviewer.console import Console
from reviewer.delivery import (
    Channel,
    Delivery,
    Target,
    artifact_note,
    check_outbound,
    close,
    deliver,
    notice,
    outbound_guard,
)
from reviewer.diff.options import DifferChoice
from reviewer.errors import ExitStatus, ReviewerError
from reviewer.github_event import ActionsContext, Artifact, PullRequest, TriggeringRun
from reviewer.marker_keys import shared_marker_key
from reviewer.prepare import SideRequest
from reviewer.publish import (
    CommentMode,
    GitHub,
    Pacer,
    StatusKind,
    token_from_env,
    write_job_summary,
)
from reviewer.shards import Expected, ShardFacts, merge_shards, save_shard
from reviewer.side import Shard, SideOptions
from reviewer.sops import KeylessMode
from reviewer.tooling import Tooling


@dataclass(frozen=True)
class CiArgs:
    """Arguments of `reviewer ci`; None means "from the Actions event and environment"."""

    repo: Path = Path(".")
    head: str = "HEAD"
    base: str | None = None
    pr: int | None = None
    pr_head: str | None = None
    repository: str | None = None
    api_url: str | None = None
    server_url: str | None = None
    run_url: str | None = None
    key: str = "default"
    mode: CommentMode = CommentMode.UPDATE
    max_parts: int = comment.DEFAULT_MAX_PARTS
    status: StatusKind = StatusKind.STATUS
    fail_on_changes: bool = False
    fail_on_preexisting: bool = False
    dry_run: bool = False
    render_only: bool = False
    from_artifact: Path | None = None
    from_shards: tuple[Path, ...] = ()
    save: Path | None = None
    output_dir: Path | None = None
    artifact_name: str | None = None  # None: reviewer-report-<key>
    token_env: str = "GITHUB_TOKEN"
    closed: bool = False
    options: SideOptions = field(default_factory=SideOptions)
    definitions: str | None = None
    templates: str | None = None
    context: int = 3
    differ: DifferChoice = "auto"
    secrets: KeylessMode = KeylessMode.FALLBACK
    tooling: Tooling = field(default_factory=Tooling)

    @property
    def shard(self) -> Shard | None:
        """The share of the clusters this run renders (None: all of them)."""
        return self.options.selection.shard

    @property
    def request(self) -> SideRequest:
        """What both sides are rendered with."""
        return SideRequest(
            self.options, self.definitions, self.templates, self.secrets, self.tooling
        )

    @property
    def delivery(self) -> Delivery:
        """How the review is delivered."""
        return Delivery(
            key=self.key,
            mode=self.mode,
            max_parts=self.max_parts,
            status=self.status,
            fail_on_changes=self.fail_on_changes,
            dry_run=self.dry_run,
            render_only=self.render_only,
            from_artifact=self.from_artifact,
            artifact_name=self.artifact_name or f"reviewer-report-{self.key}",
            token_env=self.token_env,
            closed=self.closed,
        )


def mode_conflict(args: CiArgs) -> str | None:
    """Why the chosen modes cannot be combined, or None when they can."""
    rendered_elsewhere = args.from_artifact is not None or bool(args.from_shards)
    rules = (
        (args.dry_run and args.render_only, "--dry-run and --render-only exclude each other"),
        (
            args.from_artifact is not None and args.render_only,
            "--from-artifact posts a rendered bundle: drop --render-only",
        ),
        (
            args.from_artifact is not None and bool(args.from_shards),
            "--from-artifact and --from-shards exclude each other",
        ),
        (
            args.shard is not None and (args.save is None or not args.render_only),
            "--shard renders part of a review, which is never posted: add --render-only and "
            "--save DIR, then publish all shards with --from-shards",
        ),
        (
            args.shard is not None and args.output_dir is not None,
            "--shard writes no report (it would be partial): its --save bundle is the output",
        ),
        (
            Path(args.options.config_file).is_absolute(),
            "--config must name a file of the repository: in CI the settings come from the "
            "target branch only, so a pull request cannot change how it is reviewed",
        ),
        (
            args.save is not None and rendered_elsewhere,
            "--save keeps what this run renders: nothing is rendered with --from-*",
        ),
        (
            args.closed and (args.render_only or args.dry_run or rendered_elsewhere),
            "--closed renders and posts no review: drop --render-only, --dry-run and --from-*",
        ),
    )
    return next((message for broken, message in rules if broken), None)


def run(
    args: CiArgs,
    console: Console,
    *,
    env: Mapping[str, str],
    pacer: Pacer | None = None,
) -> ExitStatus:
    """Render, report and publish one pull request; the exit status follows README.md."""
    comment.validate_key(args.key)
    actions = github_event.load(env)
    channel = Channel(console, env, pacer)
    closed_event = actions.pull is not None and actions.pull.action == "closed"
    if closed_event and (args.dry_run or args.render_only):
        notice(channel, "the pull request is closed: nothing to review")
        return ExitStatus.OK
    if args.closed or closed_event:
        close(args.delivery, _target(args, actions), channel)
        return ExitStatus.OK
    if actions.pull is not None and not actions.pull.review_needed:
        notice(channel, "the pull request's title or description changed: nothing to review")
        return ExitStatus.OK
    actions = _looked_up(args, actions, env, pacer)
    target = _target(args, actions)
    artifact, console = _artifact_from(args, target, console, env, actions.triggering_run)
    artifact = github_event.check_triggering_run(artifact, actions.triggering_run)
    if args.shard is not None:
        # A shard's report is partial: only its bundle leaves, for the publishing job.
        outputs = _shard_outputs(args, artifact)
        status = ExitStatus.RENDER_FAILED if artifact.errors else ExitStatus.OK
    else:
        outputs = _keep(args, actions, artifact, env, console)
        published = deliver(
            args.delivery, target, actions, artifact, replace(channel, console=console)
        )
        outputs |= {"comment-url": published.url, "comment-id": published.comment_id}
        status = _exit_status(args, artifact)
    if actions.output_path is not None:
        github_event.write_outputs(actions.output_path, outputs)
    return status


def _looked_up(
    args: CiArgs, actions: ActionsContext, env: Mapping[str, str], pacer: Pacer | None
) -> ActionsContext:
    """For `--pr N` on an event that is not a pull request: its head and base, from the API."""
    rendering_here = args.from_artifact is None and not args.from_shards
    known = args.pr_head is not None or args.base is not None
    if args.pr is None or actions.pull is not None or known or not rendering_here:
        return actions
    repository = args.repository or actions.repository
    if repository is None:
        raise ReviewerError(f"no repository to look #{args.pr} up in", hint="pass --repository")
    client = GitHub(
        token=token_from_env(env, args.token_env),
        api_url=(args.api_url or actions.api_url).rstrip("/"),
        repository=github_event.check_repository(repository),
        pacer=pacer,
    )
    pull = client.pull(args.pr)
    found = PullRequest(args.pr, pull.head_sha, pull.base_sha, pull.base_ref)
    return replace(actions, pull=found)


def _shard_outputs(args: CiArgs, artifact: Artifact) -> dict[str, str]:
    """Step outputs of a shard job: its own share of changes and failures, and its bundle."""
    return {**counts(artifact), "bundle-dir": str(args.save)}


def counts(artifact: Artifact) -> dict[str, str]:
    """The step outputs counting releases by status (`errors` is the older name of `failed`)."""
    statuses = [release.get("status") for release in artifact.report["releases"]]
    found = {name: str(statuses.count(name)) for name in ("added", "changed", "removed")}
    return {**found, "failed": str(artifact.errors), "errors": str(artifact.errors)}


def _keep(
    args: CiArgs,
    actions: ActionsContext,
    artifact: Artifact,
    env: Mapping[str, str],
    console: Console,
) -> dict[str, str]:
    """Check the report for secrets, then write the artifact files and the job summary."""
    report_json = json.dumps(artifact.report, indent=2) + "\n"
    texts = {"report": artifact.markdown, "JSON report": report_json}
    check_outbound(texts, env, args.token_env, console)
    outputs = counts(artifact)
    if args.output_dir is not None and args.from_artifact is None:
        github_event.write_artifact(args.output_dir, artifact, report_json=report_json)
        console.info(f"report written to {args.output_dir}")
        outputs["report-dir"] = str(args.output_dir)
        outputs["report-json"] = str(args.output_dir / "report.json")
    if actions.summary_path is not None:
        note = artifact_note(args.delivery)
        write_job_summary(actions.summary_path, artifact.markdown, pointer=note)
    return outputs


def _target(args: CiArgs, actions: ActionsContext) -> Target:
    pull = actions.pull
    bases = [args.base] if args.base else []
    if pull is not None:
        bases += [pull.base_sha or "", f"origin/{pull.base_ref}" if pull.base_ref else ""]
    return Target(
        repository=args.repository or actions.repository,
        number=args.pr or (pull.number if pull else None),
        pr_head=args.pr_head or (pull.head_sha if pull else None),
        bases=tuple(base for base in bases if base),
        base_label=args.base or (pull.base_ref if pull and pull.base_ref else "target"),
        api_url=(args.api_url or actions.api_url).rstrip("/"),
        server_url=(args.server_url or actions.server_url).rstrip("/"),
        run_url=args.run_url or actions.run_url,
    )


def _exit_status(args: CiArgs, artifact: Artifact) -> ExitStatus:
    if artifact.errors or artifact.run_failure is not None:
        return ExitStatus.RENDER_FAILED
    if args.fail_on_changes and artifact.changed:
        return ExitStatus.CHANGES
    return ExitStatus.OK


# --- rendering -------------------------------------------------------------------------------


def _artifact_from(
    args: CiArgs,
    target: Target,
    console: Console,
    env: Mapping[str, str],
    run: TriggeringRun | None = None,
) -> tuple[Artifact, Console]:
    """The report to deliver, and the console to deliver it with (guarded once rendered)."""
    if args.from_artifact is not None:
        console.info(f"reading the report artifact in {args.from_artifact} (untrusted)")
        artifact = github_event.read_artifact(args.from_artifact)
        return replace(artifact, markdown=_with_artifact_footer(artifact, target, run)), console
    if args.from_shards:
        expected = Expected(target.number, target.pr_head, target.repository)
        pair, facts = merge_shards(args.from_shards, expected, console)
        commits, number = facts.commits, facts.number
    else:
        pair, commits, console = _render(args, target, console, env)
        number = target.number
    review = diff_cmd.review_of(pair, _report_args(args))
    markdown = _with_footer(report_markdown.render_markdown(review), commits, target)
    return Artifact(number or 0, commits.head, markdown, report_json.to_json(review)), console


def _report_args(args: CiArgs) -> diff_cmd.ReportArgs:
    return diff_cmd.ReportArgs(
        context=args.context, differ=args.differ, fail_on_preexisting=args.fail_on_preexisting
    )


def _render(
    args: CiArgs, target: Target, console: Console, env: Mapping[str, str]
) -> tuple[RenderedPair, Commits, Console]:
    """Both sides rendered here (and saved when asked); the console then carries the guard."""
    git_env = args.options.programs.git()
    top = toplevel(args.repo, env=git_env)
    commits = pick_commits(
        top, head=args.head, bases=target.bases, pr_head=target.pr_head, env=git_env
    )
    repo = fleet_root(args.repo, diff_cmd.markers(args.options.config_file, args.definitions))
    inner = repo.resolve().relative_to(top.resolve())
    if args.shard is not None:
        console.info(f"shard {args.shard.index}/{args.shard.total}: rendering its clusters only")
    marker_key = shared_marker_key(env, warn=console.warn)
    sides = pr_sides(
        top, inner, commits, number=target.number, base_label=target.base_label, env=git_env
    )
    with sides as pr:
        for warning in pr.warnings:
            console.warn(f"warning: {warning}")
        # The rendering of `reviewer diff`, on sides chosen the way GitHub builds them.
        # The workflow's cluster list may name clusters of other branches: warn, go on.
        pair, guard = diff_cmd.render_pair(
            pr,
            args.request,
            _report_args(args),
            console,
            marker_key=marker_key,
            unknown_filter=console.warn,
        )
    console = console.guarded(guard.check)
    if args.save is not None:
        facts = ShardFacts(args.shard or Shard(1, 1), target.number, target.repository, commits)
        save_shard(args.save, pair, facts, outbound_guard(env, args.token_env, console))
        console.info(f"rendered sides of shard {facts.label} saved to {args.save}")
    return pair, commits, console


def _with_artifact_footer(artifact: Artifact, target: Target, run: TriggeringRun | None) -> str:
    """The rebuilt comment with a footer from checked SHAs and the trusted event's run id."""
    run_url = target.run_url
    if run is not None and run.run_id is not None and target.repository:
        run_url = f"{target.server_url}/{target.repository}/actions/runs/{run.run_id}"
    base, merge = artifact.commits or (artifact.head_sha, artifact.head_sha)
    footer = report_markdown.render_template(
        "footer.md.j2",
        target=base,
        head=artifact.head_sha,
        merge=merge,
        fallback=False,
        run_url=run_url,
        server_url=target.server_url,
        repository=target.repository,
        version=__version__,
    )
    return artifact.markdown.rstrip() + "\n\n" + footer.lstrip()


def _with_footer(markdown: str, commits: Commits, target: Target) -> str:
    footer = report_markdown.render_template(
        "footer.md.j2",
        target=commits.target,
        head=commits.head,
        merge=commits.merge,
        fallback=commits.fallback,
        run_url=target.run_url,
        server_url=target.server_url,
        repository=target.repository,
        version=__version__,
    )
    return markdown.rstrip() + "\n\n" + footer.lstrip()
