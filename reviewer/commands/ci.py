"""`reviewer ci`: review a pull request in GitHub Actions (or any CI) and publish the result.

Inside Actions everything comes from the event and `GITHUB_*`; elsewhere the same facts are
given as arguments. The target side is the first parent of GitHub's merge commit (the event's
`base.sha` can be stale); the other side is the merge commit itself.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from reviewer import __version__, comment, github_event, report
from reviewer.checkout import Side, Sides, git, merge_commit, resolve, toplevel, worktree
from reviewer.commands import diff as diff_cmd
from reviewer.console import Console
from reviewer.diff import DifferChoice
from reviewer.errors import ExitStatus, ReviewerError
from reviewer.github_event import ActionsContext, Artifact
from reviewer.publish import (
    CommentMode,
    GitHub,
    Outcome,
    Pacer,
    StatusKind,
    Sticky,
    report_status,
    sync_comments,
    token_from_env,
    write_job_summary,
)
from reviewer.side import SideOptions, Tooling
from reviewer.sops import KeylessMode


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
    dry_run: bool = False
    render_only: bool = False
    from_artifact: Path | None = None
    output_dir: Path | None = None
    artifact_name: str = "reviewer-report"
    token_env: str = "GITHUB_TOKEN"
    options: SideOptions = field(default_factory=SideOptions)
    definitions: str | None = None
    templates: str | None = None
    context: int = 3
    differ: DifferChoice = "auto"
    secrets: KeylessMode = KeylessMode.FALLBACK
    tooling: Tooling = field(default_factory=Tooling)


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


def run(
    args: CiArgs,
    console: Console,
    *,
    env: Mapping[str, str] | None = None,
    pacer: Pacer | None = None,
) -> ExitStatus:
    """Render, report and publish one pull request; the exit status follows README.md."""
    env = os.environ if env is None else env
    comment.validate_key(args.key)
    actions = github_event.load(env)
    target = _target(args, actions)
    artifact = _artifact_from(args, target, console)
    outputs = _keep(args, actions, artifact, env, console)
    outputs["comment-url"] = _deliver(
        args, target, actions, artifact, console, env=env, pacer=pacer
    )
    if actions.output_path is not None:
        github_event.write_outputs(actions.output_path, outputs)
    return _exit_status(args, artifact)


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
    _check_outbound(texts, env, args.token_env, console)
    outputs = {"changed": str(artifact.changed).lower(), "errors": str(artifact.errors)}
    if args.output_dir is not None and args.from_artifact is None:
        github_event.write_artifact(args.output_dir, artifact, report_json=report_json)
        console.info(f"report written to {args.output_dir}")
        outputs["report-dir"] = str(args.output_dir)
    if actions.summary_path is not None:
        write_job_summary(actions.summary_path, artifact.markdown, pointer=_artifact_note(args))
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
    if artifact.errors:
        return ExitStatus.RENDER_FAILED
    if args.fail_on_changes and artifact.changed:
        return ExitStatus.CHANGES
    return ExitStatus.OK


# --- rendering -------------------------------------------------------------------------------


def _artifact_from(args: CiArgs, target: Target, console: Console) -> Artifact:
    if args.from_artifact is not None:
        console.info(f"reading the report artifact in {args.from_artifact} (untrusted)")
        return github_event.read_artifact(args.from_artifact)
    review, commits = _review(args, target, console)
    markdown = _with_footer(report.render_markdown(review), commits, target)
    return Artifact(target.number or 0, commits.head, markdown, report.to_json(review))


@dataclass(frozen=True)
class Commits:
    """What is compared: target vs merge; `head` is the PR head; `fallback` when no merge."""

    target: str
    merge: str
    head: str
    fallback: bool = False


def _review(args: CiArgs, target: Target, console: Console) -> tuple[report.Review, Commits]:
    top = toplevel(args.repo)
    commits = pick_commits(top, head=args.head, bases=target.bases, pr_head=target.pr_head)
    inner = args.repo.resolve().relative_to(top.resolve())
    report_args = diff_cmd.ReportArgs(context=args.context, differ=args.differ)
    diff_args = diff_cmd.DiffArgs(
        repo=args.repo,
        base=None,
        head=None,
        merge=False,
        directories=None,
        options=args.options,
        definitions=args.definitions,
        templates=args.templates,
        report=report_args,
        secrets=args.secrets,
        tooling=args.tooling,
    )
    with pr_sides(top, inner, commits, target) as sides:
        for warning in sides.warnings:
            console.warn(f"warning: {warning}")
        # The rendering of `reviewer diff`, on sides chosen the way GitHub builds them.
        pair = diff_cmd.render_pair(sides, diff_args, console)
    return diff_cmd.review_of(pair, report_args), commits


def pick_commits(top: Path, *, head: str, bases: tuple[str, ...], pr_head: str | None) -> Commits:
    """Target and merge commits: GitHub's merge commit at `head`, else a merge made here."""
    checked_out = resolve(top, head)
    parents = _parents(top, checked_out)
    base = _first_commit(top, bases)
    if len(parents) == 2 and (parents[1] == pr_head if pr_head else base in (None, parents[0])):
        _require_commits(top, parents)
        return Commits(target=parents[0], merge=checked_out, head=parents[1])
    pr = resolve(top, pr_head) if pr_head else checked_out
    if base is None:
        raise ReviewerError(
            f"{head} is not GitHub's merge commit of the pull request and no target is known",
            hint="check out refs/pull/N/merge, or pass --base with the target branch",
        )
    merged = merge_commit(top, base, pr)
    if merged is not None:
        return Commits(target=base, merge=merged, head=pr)
    return Commits(target=_merge_base(top, base, pr), merge=pr, head=pr, fallback=True)


def _parents(top: Path, sha: str) -> list[str]:
    # The commit object itself, not rev-parse: a shallow clone hides parents it lacks.
    text = git(top, "cat-file", "-p", sha).stdout.decode()
    header = text.split("\n\n", 1)[0]
    return [line.split()[1] for line in header.splitlines() if line.startswith("parent ")]


def _first_commit(top: Path, refs: tuple[str, ...]) -> str | None:
    for ref in refs:
        found = git(
            top, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", ok_codes=(0, 1, 128)
        )
        if found.returncode == 0:
            return found.stdout.decode().strip()
    return None


def _require_commits(top: Path, shas: list[str]) -> None:
    for sha in shas:
        if git(top, "cat-file", "-e", f"{sha}^{{commit}}", ok_codes=(0, 1, 128)).returncode:
            raise ReviewerError(
                f"commit {sha[:7]}, a parent of the merge commit, is not in the clone",
                hint="check out with more history (actions/checkout: fetch-depth: 0)",
            )


def _merge_base(top: Path, base: str, head: str) -> str:
    found = git(top, "merge-base", base, head, ok_codes=(0, 1, 128))
    if found.returncode:
        raise ReviewerError(
            f"cannot find the merge base of {base[:7]} and {head[:7]}",
            hint="check out with full history (actions/checkout: fetch-depth: 0)",
        )
    return found.stdout.decode().strip()


@contextmanager
def pr_sides(top: Path, inner: Path, commits: Commits, target: Target) -> Iterator[Sides]:
    """Worktrees of the target and merge commits for the duration of the block."""
    number = f"#{target.number}" if target.number else "the pull request"
    warnings: tuple[str, ...] = ()
    head_label = f"merge of {number}"
    if commits.fallback:
        head_label = f"{number} head"
        warnings = (
            f"**No merge result**: {number} does not merge cleanly into {target.base_label}, so "
            f"this shows its head {commits.head[:7]} against the merge base "
            f"{commits.target[:7]}. Changes made on {target.base_label} since then are not "
            "included: resolve the conflicts for a review of what would land.",
        )
    with ExitStack() as stack:
        base_root = stack.enter_context(worktree(top, commits.target))
        head_root = stack.enter_context(worktree(top, commits.merge))
        yield Sides(
            base=Side("base", base_root / inner, target.base_label, commits.target),
            head=Side("head", head_root / inner, head_label, commits.merge),
            warnings=warnings,
        )


FOOTER_MARK = "<!-- reviewer:footer -->"


def summary(markdown: str) -> str:
    """The report's summary (up to the first details block) with the report's footer."""
    head = comment.summary_of(markdown)
    at = markdown.rfind(FOOTER_MARK)
    return head if at < 0 else head.rstrip() + "\n\n" + markdown[at:]


def _with_footer(markdown: str, commits: Commits, target: Target) -> str:
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("reviewer", "report_templates"),
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    footer = environment.get_template("footer.md.j2").render(
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


# --- delivery --------------------------------------------------------------------------------


def _deliver(
    args: CiArgs,
    target: Target,
    actions: ActionsContext,
    artifact: Artifact,
    console: Console,
    *,
    env: Mapping[str, str],
    pacer: Pacer | None,
) -> str:
    """Post (or print) the comments and the status; returns the first comment's URL, or ""."""
    if args.render_only:
        console.info("render-only: nothing is posted")
        return ""
    parts = comment.plan_comments(
        artifact.markdown,
        key=args.key,
        sha=artifact.head_sha,
        pointer=_pointer(args, target),
        summary=summary(artifact.markdown),
        max_parts=args.max_parts,
    )
    texts = {f"comment part {p.number}": p.body for p in parts}
    _check_outbound(texts, env, args.token_env, console)
    if args.dry_run:
        _print_parts(parts, console)
        return ""
    return _publish(args, target, actions, artifact, parts, console, env=env, pacer=pacer)


def _publish(
    args: CiArgs,
    target: Target,
    actions: ActionsContext,
    artifact: Artifact,
    parts: list[comment.Part],
    console: Console,
    *,
    env: Mapping[str, str],
    pacer: Pacer | None,
) -> str:
    if target.repository is None:
        raise ReviewerError("no repository to publish to", hint="pass --repository OWNER/NAME")
    client = GitHub(
        token=token_from_env(env, args.token_env),
        api_url=target.api_url,
        repository=github_event.check_repository(target.repository),
        pacer=pacer,
    )
    number = _checked_number(args, target, actions, artifact, client, console)
    if number is None:
        return ""
    sticky = Sticky(
        client,
        number,
        args.key,
        client.viewer(),
        hidden_aware=args.mode is CommentMode.HIDE_OUTDATED,
    )
    result = sync_comments(sticky, parts, args.mode)
    console.info(
        f"comments on #{number}: {result.created} created, {result.edited} edited, "
        f"{result.deleted} deleted, {result.hidden} hidden"
    )
    context = "reviewer" if args.key == "default" else f"reviewer/{args.key}"
    outcome = _outcome(args, artifact)
    report_status(
        client, artifact.head_sha, outcome, kind=args.status, context=context, url=target.run_url
    )
    return result.urls[0] if result.urls else ""


def _checked_number(
    args: CiArgs,
    target: Target,
    actions: ActionsContext,
    artifact: Artifact,
    client: GitHub,
    console: Console,
) -> int | None:
    """The PR to post on; for an artifact, only after checking it against trusted facts."""
    if args.from_artifact is None:
        if target.number is None:
            raise ReviewerError("no pull request number", hint="pass --pr N")
        return target.number
    trusted = actions.workflow_run_head_sha or target.pr_head
    if trusted is None or artifact.head_sha != trusted:
        raise ReviewerError(
            "the report artifact is not for the commit the triggering run built",
            hint="post artifacts from `workflow_run` events, or pass --pr-head SHA",
        )
    if client.pull_head_sha(artifact.number) != artifact.head_sha:
        console.warn(f"#{artifact.number} has moved on since this report: not posting it")
        return None
    return artifact.number


def _outcome(args: CiArgs, artifact: Artifact) -> Outcome:
    if artifact.errors:
        text = f"the merge result fails to render ({artifact.errors} failure(s))"
    elif artifact.changed:
        text = "rendered changes" + (" (changes fail this check)" if args.fail_on_changes else "")
    else:
        text = "no rendered changes"
    failed = bool(artifact.errors) or (args.fail_on_changes and artifact.changed)
    return Outcome(failed, text, summary(artifact.markdown))


def _pointer(args: CiArgs, target: Target) -> str:
    where = f"the [workflow run]({target.run_url})" if target.run_url else "the workflow run"
    return (
        "The full report is too long for comments: see the job summary and the "
        f"`{args.artifact_name}` artifact of {where}."
    )


def _artifact_note(args: CiArgs) -> str:
    return f"Truncated: the full report is in the `{args.artifact_name}` artifact of this run."


def _print_parts(parts: list[comment.Part], console: Console) -> None:
    for part in parts:
        size = comment.size(part.body)
        console.write(f"----- comment {part.number}/{part.total} ({size} bytes) -----\n")
        console.write(part.body if part.body.endswith("\n") else part.body + "\n")


def _check_outbound(
    texts: Mapping[str, str], env: Mapping[str, str], token_env: str, console: Console
) -> None:
    """Refuse to let out text holding a secret value (leak guard) or a credential we were given."""
    given = [env.get(token_env, ""), *env.get("SOPS_AGE_KEY", "").splitlines()]
    secrets = {s.strip() for s in given if len(s.strip()) >= 16 and not s.startswith("#")}
    for location, text in texts.items():
        console.check(text, location)
        if any(secret in text for secret in secrets):
            raise ReviewerError(f"refusing to publish: the {location} contains a credential")
