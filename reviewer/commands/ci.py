"""`reviewer ci`: review a pull request in GitHub Actions (or any CI) and publish the result.

Inside Actions everything comes from the event and `GITHUB_*`; elsewhere the same facts are
given as arguments. The target side is the first parent of GitHub's merge commit (the event's
`base.sha` can be stale); the other side is the merge commit itself.

A large fleet can be spread over a CI matrix: each job renders one shard (`--shard I/N --save
DIR --render-only`) and one more job merges the saved bundles and publishes (`--from-shards`).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reviewer import __version__, bundle, comment, github_event, report
from reviewer.bundle import RenderedPair
from reviewer.checkout import Side, Sides, git, merge_commit, resolve, toplevel, worktree
from reviewer.commands import diff as diff_cmd
from reviewer.console import Console
from reviewer.diff.options import DifferChoice
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
from reviewer.side import Shard, SideOptions, Tooling
from reviewer.snapshot import Guard
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
    from_shards: tuple[Path, ...] = ()
    save: Path | None = None
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

    @property
    def shard(self) -> Shard | None:
        """The share of the clusters this run renders (None: all of them)."""
        return self.options.selection.shard


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
            args.save is not None and rendered_elsewhere,
            "--save keeps what this run renders: nothing is rendered with --from-*",
        ),
    )
    return next((message for broken, message in rules if broken), None)


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
    artifact = _artifact_from(args, target, console, env)
    if args.shard is not None:
        # A shard's report is partial: only its bundle leaves, for the publishing job.
        outputs = _shard_outputs(args, artifact)
        status = ExitStatus.RENDER_FAILED if artifact.errors else ExitStatus.OK
    else:
        outputs = _keep(args, actions, artifact, env, console)
        outputs["comment-url"] = _deliver(
            args, target, actions, artifact, console, env=env, pacer=pacer
        )
        status = _exit_status(args, artifact)
    if actions.output_path is not None:
        github_event.write_outputs(actions.output_path, outputs)
    return status


def _shard_outputs(args: CiArgs, artifact: Artifact) -> dict[str, str]:
    """Step outputs of a shard job: its own share of changes and failures, and its bundle."""
    return {
        "changed": str(artifact.changed).lower(),
        "errors": str(artifact.errors),
        "bundle-dir": str(args.save),
    }


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


def _artifact_from(
    args: CiArgs, target: Target, console: Console, env: Mapping[str, str]
) -> Artifact:
    if args.from_artifact is not None:
        console.info(f"reading the report artifact in {args.from_artifact} (untrusted)")
        return github_event.read_artifact(args.from_artifact)
    pair, commits, number = _pair(args, target, console, env)
    review = diff_cmd.review_of(pair, _report_args(args))
    markdown = _with_footer(report.render_markdown(review), commits, target)
    return Artifact(number or 0, commits.head, markdown, report.to_json(review))


@dataclass(frozen=True)
class Commits:
    """What is compared: target vs merge; `head` is the PR head; `fallback` when no merge."""

    target: str
    merge: str
    head: str
    fallback: bool = False


def _report_args(args: CiArgs) -> diff_cmd.ReportArgs:
    return diff_cmd.ReportArgs(context=args.context, differ=args.differ)


def _pair(
    args: CiArgs, target: Target, console: Console, env: Mapping[str, str]
) -> tuple[RenderedPair, Commits, int | None]:
    """Both rendered sides with their commits and PR: merged from shards, or rendered here."""
    if args.from_shards:
        return merge_shards(args.from_shards, target, console)
    pair, commits = _render(args, target, console)
    if args.save is not None:
        facts = ShardFacts(args.shard or Shard(1, 1), target.number, target.repository, commits)
        save_shard(args.save, pair, facts, _outbound_guard(env, args.token_env, console))
        console.info(f"rendered sides of shard {facts.label} saved to {args.save}")
    return pair, commits, target.number


def _render(args: CiArgs, target: Target, console: Console) -> tuple[RenderedPair, Commits]:
    top = toplevel(args.repo)
    commits = pick_commits(top, head=args.head, bases=target.bases, pr_head=target.pr_head)
    inner = args.repo.resolve().relative_to(top.resolve())
    diff_args = diff_cmd.DiffArgs(
        repo=args.repo,
        base=None,
        head=None,
        merge=False,
        directories=None,
        options=args.options,
        definitions=args.definitions,
        templates=args.templates,
        report=_report_args(args),
        secrets=args.secrets,
        tooling=args.tooling,
    )
    if args.shard is not None:
        console.info(f"shard {args.shard.index}/{args.shard.total}: rendering its clusters only")
    with pr_sides(top, inner, commits, target) as sides:
        for warning in sides.warnings:
            console.warn(f"warning: {warning}")
        # The rendering of `reviewer diff`, on sides chosen the way GitHub builds them.
        return diff_cmd.render_pair(sides, diff_args, console), commits


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
    footer = report.render_template(
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


# --- shards: one matrix job per share of the clusters, one job to publish them all ----------

SHARD_FILE = "ci-shard.json"
SHARD_SCHEMA = "reviewer.ci-shard/v1"
_SHARD_FILE_LIMIT = 64 << 10


@dataclass(frozen=True)
class ShardFacts:
    """What a shard job records beside its bundle: which share of which review it rendered."""

    shard: Shard
    number: int | None
    repository: str | None
    commits: Commits

    @property
    def label(self) -> str:
        """`I/N`."""
        return f"{self.shard.index}/{self.shard.total}"

    def review(self) -> tuple[object, ...]:
        """What every shard of one review shares."""
        return (self.number, self.repository, self.commits, self.shard.total)

    def subject(self) -> str:
        """The review the shard is part of, for messages."""
        number = f"#{self.number}" if self.number else "no PR"
        return f"{number}, target {self.commits.target[:7]}, merge {self.commits.merge[:7]}"

    def describe(self) -> str:
        """This shard and its review, for error messages."""
        return f"shard {self.label} of {self.subject()}"


@dataclass(frozen=True)
class LoadedShard:
    """A shard bundle read back: where it was, what it claims, what it holds."""

    directory: Path
    facts: ShardFacts
    pair: RenderedPair


def save_shard(directory: Path, pair: RenderedPair, facts: ShardFacts, guard: Guard) -> None:
    """Write the bundle (`bundle.save`) and `ci-shard.json`; every file passes `guard`."""
    bundle.save(pair, directory, guard=guard)
    commits = facts.commits
    meta = {
        "schema": SHARD_SCHEMA,
        "shard": {"index": facts.shard.index, "total": facts.shard.total},
        "number": facts.number,
        "repository": facts.repository,
        "commits": {
            "target": commits.target,
            "merge": commits.merge,
            "head": commits.head,
            "fallback": commits.fallback,
        },
    }
    text = json.dumps(meta, indent=2) + "\n"
    guard(text, SHARD_FILE)
    (directory / SHARD_FILE).write_text(text, encoding="utf-8")


def merge_shards(
    directories: Sequence[Path], target: Target, console: Console
) -> tuple[RenderedPair, Commits, int | None]:
    """One rendered pair from every shard of one review, after checking they belong together."""
    shards = [_load_shard(directory) for directory in _bundle_dirs(directories)]
    _check_same_review(shards)
    _check_complete(shards)
    facts = shards[0].facts
    _check_expected(facts, target)
    console.info(f"merging {len(shards)} shard(s) of {facts.subject()}")
    return bundle.merge([shard.pair for shard in shards]), facts.commits, facts.number


def _bundle_dirs(given: Sequence[Path]) -> list[Path]:
    """Each directory is a bundle, or holds one per subdirectory (as download-artifact does)."""
    found: list[Path] = []
    for directory in given:
        if not directory.is_dir():
            raise ReviewerError(f"{directory} is not a directory of shard bundles")
        if any(os.path.lexists(directory / name) for name in (SHARD_FILE, "review.json")):
            found.append(directory)
            continue
        inside = sorted(p for p in directory.iterdir() if p.is_dir() and not p.is_symlink())
        if not inside:
            raise ReviewerError(
                f"{directory} holds no shard bundle",
                hint="give the directories written by `reviewer ci --shard I/N --save DIR`",
            )
        found += inside
    return found


def _load_shard(directory: Path) -> LoadedShard:
    facts = read_shard_facts(directory)
    pair = bundle.load(directory)
    if (pair.base_info.sha, pair.head_info.sha) != (facts.commits.target, facts.commits.merge):
        raise ReviewerError(
            f"the rendered sides are not of the commits {SHARD_FILE} names", file=str(directory)
        )
    return LoadedShard(directory, facts, pair)


def read_shard_facts(directory: Path) -> ShardFacts:
    """Read `ci-shard.json` as untrusted data: every field is checked before use."""
    data = _shard_json(directory)
    shard = data.get("shard")
    if not isinstance(shard, dict):
        raise ReviewerError(f"{SHARD_FILE} has no shard", file=str(directory))
    index = _count(shard.get("index"), "shard.index", directory)
    total = _count(shard.get("total"), "shard.total", directory)
    if index > total:
        raise ReviewerError(f"{SHARD_FILE}: shard {index}/{total} is not I/N", file=str(directory))
    number, repository = data.get("number"), data.get("repository")
    return ShardFacts(
        shard=Shard(index, total),
        number=None if number is None else _count(number, "number", directory),
        repository=None if repository is None else github_event.check_repository(repository),
        commits=_shard_commits(data.get("commits"), directory),
    )


def _shard_commits(commits: Any, directory: Path) -> Commits:
    if not isinstance(commits, dict) or not isinstance(commits.get("fallback"), bool):
        raise ReviewerError(f"{SHARD_FILE} has no valid commits", file=str(directory))
    return Commits(
        target=_sha(commits, "target"),
        merge=_sha(commits, "merge"),
        head=_sha(commits, "head"),
        fallback=commits["fallback"],
    )


def _shard_json(directory: Path) -> dict[str, Any]:
    path = directory / SHARD_FILE
    if path.is_symlink() or not path.is_file():
        raise ReviewerError(f"{SHARD_FILE} is missing or not a regular file", file=str(directory))
    if path.stat().st_size > _SHARD_FILE_LIMIT:
        raise ReviewerError(
            f"{SHARD_FILE} is larger than {_SHARD_FILE_LIMIT} bytes", file=str(directory)
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ReviewerError(f"{SHARD_FILE} is not valid JSON", file=str(directory)) from None
    if not isinstance(data, dict) or data.get("schema") != SHARD_SCHEMA:
        raise ReviewerError(f"{SHARD_FILE} is not a {SHARD_SCHEMA} file", file=str(directory))
    return data


def _count(value: Any, what: str, directory: Path) -> int:
    # bool is an int subclass: `true` must not pass for 1.
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ReviewerError(
            f"{SHARD_FILE}: {what} is not a positive whole number", file=str(directory)
        )
    return value


def _sha(commits: dict[str, Any], name: str) -> str:
    sha = github_event.check_sha(commits.get(name), f"{SHARD_FILE} commits.{name}")
    if sha is None:
        raise ReviewerError(f"{SHARD_FILE}: commits.{name} is missing")
    return sha


def _check_same_review(shards: list[LoadedShard]) -> None:
    first = shards[0]
    for other in shards[1:]:
        if other.facts.review() != first.facts.review():
            raise ReviewerError(
                "the shards are not of one review: "
                f"{first.directory.name} holds {first.facts.describe()}, "
                f"{other.directory.name} holds {other.facts.describe()}",
                hint="every shard job must render the same checkout (the run's merge commit) "
                "with the same number of shards; re-run the whole workflow",
            )


def _check_complete(shards: list[LoadedShard]) -> None:
    total = shards[0].facts.shard.total
    counts = Counter(shard.facts.shard.index for shard in shards)
    twice = sorted(index for index, seen in counts.items() if seen > 1)
    if twice:
        places = [s.directory.name for s in shards if s.facts.shard.index == twice[0]]
        raise ReviewerError(f"shard {twice[0]}/{total} is given twice: {', '.join(places)}")
    missing = [f"{index}/{total}" for index in range(1, total + 1) if index not in counts]
    if missing:
        raise ReviewerError(
            f"shard(s) {', '.join(missing)} missing: a partial review is never published",
            hint="a shard job failed before saving its bundle; see its log, then re-run it",
        )


def _check_expected(facts: ShardFacts, target: Target) -> None:
    """The shards must be of this run's pull request (the event is trusted, the files not)."""
    if target.number and facts.number != target.number:
        reviewed = f"#{facts.number}" if facts.number else "no pull request"
        raise ReviewerError(f"the shards review {reviewed}, but this run is about #{target.number}")
    if target.pr_head and facts.commits.head != target.pr_head:
        raise ReviewerError(
            f"the shards rendered the PR head {facts.commits.head[:7]}, but this run's pull "
            f"request head is {target.pr_head[:7]}"
        )
    if target.repository and facts.repository and facts.repository != target.repository:
        raise ReviewerError(
            f"the shards are of {facts.repository}, but this run is in {target.repository}"
        )


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
    guard = _outbound_guard(env, token_env, console)
    for location, text in texts.items():
        guard(text, location)


def _outbound_guard(env: Mapping[str, str], token_env: str, console: Console) -> Guard:
    """The leak guard plus a check for the credentials this process holds (token, age keys)."""
    given = [env.get(token_env, ""), *env.get("SOPS_AGE_KEY", "").splitlines()]
    secrets = {s.strip() for s in given if len(s.strip()) >= 16 and not s.startswith("#")}

    def guard(text: str, location: str) -> None:
        console.check(text, location)
        if any(secret in text for secret in secrets):
            raise ReviewerError(f"refusing to publish: the {location} contains a credential")

    return guard
