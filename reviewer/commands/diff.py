"""`reviewer diff`: render two sides of a repository and report what changes."""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from reviewer import config as config_mod
from reviewer import jsonindent, report, report_json, report_markdown, report_text
from reviewer.bundle import RenderedPair
from reviewer.changes import changes_between
from reviewer.chartkeys import local_chart_text
from reviewer.checkout import Checkout, Sides, directory_sides, fleet_root, git_sides
from reviewer.commands import snapshots
from reviewer.console import Console, progress_bar
from reviewer.diff.compare import diff_snapshots
from reviewer.diff.options import DifferChoice, DiffOptions
from reviewer.diff.result import SnapshotDiff
from reviewer.discover import Layout, discovery_warnings
from reviewer.errors import ExitStatus, ReviewerError
from reviewer.explain import explain
from reviewer.model import ReleaseId, ResourceKey, Snapshot
from reviewer.prepare import PreparedSides, SideRequest, SideWatch, prepare_sides
from reviewer.redact import LeakGuard
from reviewer.render import RenderCache
from reviewer.shards import save_diff_shard
from reviewer.side import ProgressBar, Shard, SideOptions
from reviewer.sops import KeylessMode
from reviewer.tooling import Tooling
from reviewer.trees import SideTrees
from reviewer.visible import Shown

FORMATS = ("text", "markdown", "json")


@dataclass(frozen=True)
class ReportArgs:
    """How to write the report and choose the exit status."""

    output_format: str = "text"
    output: Path | None = None
    context: int = 3
    differ: DifferChoice = "auto"
    exit_code: bool = False
    fail_on_preexisting: bool = False
    """Failures the target branch has too (same error) fail the run as well."""
    summary: bool = False
    """Only the summary and blast radius, no per-release changes."""
    pager: bool = True
    """Page the report on a terminal (`--no-pager`: never)."""


@dataclass(frozen=True)
class DiffArgs:
    """Arguments of `reviewer diff`."""

    repo: Path
    base: str | None
    head: str | None
    merge: bool
    directories: tuple[Path, Path] | None
    options: SideOptions
    definitions: str | None
    templates: str | None
    report: ReportArgs
    secrets: KeylessMode = KeylessMode.FALLBACK
    tooling: Tooling = field(default_factory=Tooling)
    save: Path | None = None
    marker_key: bytes | None = None
    """Secret-marker key shared by a CI run's jobs (`marker_keys`); None: random."""
    fast_path: bool = True
    """Reuse on the head side what the change leaves alone (`--no-fast-path`: off)."""
    side_trees: Path | None = None
    """Where commit sides are kept checked out between runs (reviewer/trees.py); None:
    a temporary worktree per side."""

    @property
    def request(self) -> SideRequest:
        """What both sides are rendered with."""
        return SideRequest(
            options=self.options,
            definitions=self.definitions,
            templates=self.templates,
            secrets=self.secrets,
            tooling=self.tooling,
            fast_path=self.fast_path,
        )


def run(args: DiffArgs, console: Console) -> ExitStatus:
    """Render both sides (or read two render outputs), diff, write the report.

    The exit status follows README.md.
    """
    with _no_cycle_collection():
        return _run(args, console)


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused while a review runs.

    A review allocates millions of containers (plans, objects, diffs) that live to its end
    and form no cycles; the collector traversed them again and again, over a tenth of the
    parent process's time on a large fleet. Reference counting still frees everything else;
    what cycles there are wait until the collector runs again afterwards.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _run(args: DiffArgs, console: Console) -> ExitStatus:
    if args.directories is not None and snapshots.render_outputs(*args.directories):
        return finish(snapshots.load_pair(*args.directories), args.report, console)
    if args.directories is not None:
        pair, guard = _render(directory_sides(*args.directories), args, console)
    else:
        repo = fleet_root(args.repo, markers(args.options.config_file, args.definitions))
        git_env = args.options.programs.git()
        checkouts: list[str] = []  # said after the render, like the caches' counts
        checkout = _kept_trees(args.side_trees, git_env, checkouts.append)
        with git_sides(
            repo, base=args.base, head=args.head, merge=args.merge, env=git_env, checkout=checkout
        ) as sides:
            _note_new_settings(sides, args.options.config_file, console)
            pair, guard = _render(sides, args, console)
        for line in checkouts:
            console.info(line)
    console = console.guarded(guard.check)
    if args.save is not None:
        shard = args.options.selection.shard or Shard(1, 1)
        save_diff_shard(args.save, pair, shard, guard=console.check)
        console.info(f"rendered sides saved to {args.save}")
    return finish(pair, args.report, console)


def _kept_trees(
    root: Path | None, env: dict[str, str], note: Callable[[str], None]
) -> Checkout | None:
    return None if root is None else SideTrees(root, env, note).checkout


def _note_new_settings(sides: Sides, config_file: str, console: Console) -> None:
    """Say when the head side's settings file differs: the base side's is the one used."""
    if Path(config_file).is_absolute():
        return
    base, head = sides.base.root / config_file, sides.head.root / config_file
    if _content(base) == _content(head):
        return
    where = (
        head.resolve()
        if sides.head.sha is None
        else f"a copy of {config_file} from {sides.head.ref}"
    )
    console.warn(
        f"note: {config_file} differs on the head side ({sides.head.ref}); the base side's copy "
        f"is used, so a change cannot hide its own changes. To try the new one: "
        f"--config {where}"
    )


def _content(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


def markers(config_file: str, definitions: str | None) -> tuple[str, ...]:
    """What marks a fleet's root: its settings file or its definitions directory."""
    return (config_file, definitions or Layout().definitions)


def _render(sides: Sides, args: DiffArgs, console: Console) -> tuple[RenderedPair, LeakGuard]:
    return render_pair(sides, args.request, args.report, console, marker_key=args.marker_key)


def compare(pair: RenderedPair, args: ReportArgs) -> SnapshotDiff:
    """The diff of a rendered pair with the report options' context, differ and noise rules."""
    options = DiffOptions(context=args.context, differ=args.differ, noise=pair.noise)
    return diff_snapshots(
        pair.base, pair.head, options=options, hidden=pair.hidden, regeneration=pair.regeneration
    )


def review_of(
    pair: RenderedPair, args: ReportArgs, *, diff: SnapshotDiff | None = None
) -> report.Review:
    """What the reports show for a rendered pair."""
    diff = diff if diff is not None else pair.diff
    return report.Review(
        base=pair.base_info,
        head=pair.head_info,
        diff=diff if diff is not None else compare(pair, args),
        warnings=pair.warnings,
        explanation=pair.explanation,
        fail_on_preexisting=args.fail_on_preexisting,
        regeneration=pair.regeneration,
    )


def finish(
    pair: RenderedPair, args: ReportArgs, console: Console, *, diff: SnapshotDiff | None = None
) -> ExitStatus:
    """Write the report of a rendered pair and return the exit status."""
    review = review_of(pair, args, diff=diff)
    _write(review, args, console)
    if review.failed:
        return ExitStatus.RENDER_FAILED
    if args.exit_code and review.diff.has_changes:
        return ExitStatus.CHANGES
    return ExitStatus.OK


def render_pair(
    sides: Sides,
    request: SideRequest,
    report_args: ReportArgs,
    console: Console,
    *,
    marker_key: bytes | None,
    unknown_filter: Callable[[str], None] | None = None,
) -> tuple[RenderedPair, LeakGuard]:
    """Render, redact, diff and explain both sides; returns the pair and its leak guard."""
    changes = changes_between(
        sides.base.root,
        sides.head.root,
        ignored=sides.head.ignored,
        env=request.options.programs.git(),
    )
    if report_args.fail_on_preexisting:  # its failures block: render every release
        request = replace(request, render_unchanged=True)
    prepared = prepare_sides(
        (sides.base.root, sides.head.root),
        request,
        config_root=sides.base.root,
        marker_key=marker_key,
        watch=_announce(console, sides),
        unknown_filter=unknown_filter,
        changes=changes,
    )
    console.info(prepared.sources)
    if prepared.stored_plans:
        console.info(f"{prepared.stored_plans} deployment plan(s) taken from the plan cache")
    base, head = prepared.rendered
    redacted_base, redacted_head = prepared.redacted
    noise = prepared.config.noise
    hidden = hidden_changes(base.snapshot, head.snapshot, redacted_base, redacted_head)
    options = DiffOptions(context=report_args.context, differ=report_args.differ, noise=noise)
    diff = diff_snapshots(
        redacted_base,
        redacted_head,
        options=options,
        hidden=hidden,
        regeneration=prepared.regeneration,
        jobs=request.tooling.jobs,
    )
    explanation = explain(
        base=base.plans,
        head=head.plans,
        files=list(changes.reported),
        diff=diff,
        redact=prepared.redactor.redact_manifest,
        chart_text=local_chart_text(sides.head.root),
    )
    pair = RenderedPair(
        base=redacted_base,
        head=redacted_head,
        base_info=report.SideInfo(sides.base.ref, sides.base.sha),
        head_info=report.SideInfo(sides.head.ref, sides.head.sha, sides.head.branch),
        warnings=sides.warnings
        + discovery_warnings(sides.base.root, sides.head.root, _layout(prepared, request))
        + prepared.notes,
        noise=noise,
        explanation=explanation,
        hidden=hidden,
        regeneration=prepared.regeneration,
        diff=diff,
    )
    # Taken last: the explanation's redacted values belong to the finished redaction.
    return pair, prepared.guard()


def _layout(prepared: PreparedSides, request: SideRequest) -> Layout:
    return config_mod.with_overrides(
        prepared.config, definitions=request.definitions, templates=request.templates
    )


def _announce(console: Console, sides: Sides) -> SideWatch:
    """Say which side renders, show its bar, then how many releases the cache spared."""

    @contextmanager
    def watch(index: int, cache: RenderCache) -> Iterator[ProgressBar]:
        side = (sides.base, sides.head)[index]
        console.info(f"rendering {side.label}: {side.ref}")
        before = (cache.rendered, cache.reused, cache.restored, cache.identical)
        yield functools.partial(progress_bar, console, label=f"rendering {side.label}")
        rendered, reused, restored, identical = (
            now - then
            for now, then in zip(
                (cache.rendered, cache.reused, cache.restored, cache.identical), before, strict=True
            )
        )
        console.info(_rendered_line(side.label, rendered, reused - restored, restored, identical))

    return watch


def _rendered_line(label: str, rendered: int, reused: int, restored: int, identical: int) -> str:
    line = f"  {label}: {rendered} release(s) rendered"
    if reused:
        line += f", {reused} not rendered again (same chart and values as one already rendered)"
    if restored:
        line += f", {restored} taken from the render cache"
    if identical:
        line += f", {identical} not rendered (every input the same on both sides)"
    return line


def hidden_changes(
    base: Snapshot, head: Snapshot, redacted_base: Snapshot, redacted_head: Snapshot
) -> frozenset[tuple[ReleaseId, ResourceKey]]:
    """Objects whose unredacted content differs while their redacted content does not."""
    found: set[tuple[ReleaseId, ResourceKey]] = set()
    old, old_redacted = base.by_id(), redacted_base.by_id()
    new_redacted = redacted_head.by_id()
    for release in head.releases:
        before, shown_before = old.get(release.id), old_redacted.get(release.id)
        shown_after = new_redacted.get(release.id)
        # `before is release`: taken from the base side as it was (the fast path).
        if before is None or before is release or shown_before is None or shown_after is None:
            continue
        real = {r.key: r.body for r in before.resources}
        shown = {r.key: r.body for r in shown_before.resources}
        after_shown = {r.key: r.body for r in shown_after.resources}
        for resource in release.resources:
            key = resource.key
            if (
                key in real
                and real[key] != resource.body
                and shown.get(key) == after_shown.get(key)
            ):
                found.add((release.id, key))
    return frozenset(found)


def _write(review: report.Review, args: ReportArgs, console: Console) -> None:
    colour = args.output is None and console.colour
    paged = args.output is None and args.pager and console.pages
    # JSON is ASCII only, and Markdown escapes what a pull request controls (its own word
    # joiners must stay): both are written as they are, to a file or a terminal.
    text: str
    if args.output_format == "json":
        text = Shown(jsonindent.dumps(report_json.to_json(review)) + "\n")
    elif args.output_format == "markdown":
        text = Shown(report_markdown.render_markdown(review, summary_only=args.summary))
    else:
        # A pager opens at the top, a terminal shows the end: the summary goes where it is seen.
        text = report_text.render_text(
            review, colour=colour, summary_last=not paged, summary_only=args.summary
        )
    console.check(text, str(args.output or "report"))
    if args.output is not None:
        try:
            args.output.write_text(text, encoding="utf-8")
        except OSError as error:
            raise ReviewerError(
                f"{args.output}: cannot write the report ({error.strerror or error})"
            ) from error
        console.info(f"report written to {args.output}")
    elif paged:
        console.page(text)
    else:
        console.write(text)
