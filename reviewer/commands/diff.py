"""`reviewer diff`: render two sides of a repository and report what changes."""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from reviewer import bundle, report
from reviewer import config as config_mod
from reviewer.bundle import RenderedPair
from reviewer.checkout import Side, Sides, directory_sides, git_sides
from reviewer.console import Console, progress_bar
from reviewer.diff.compare import diff_snapshots
from reviewer.diff.options import DifferChoice, DiffOptions
from reviewer.diff.result import SnapshotDiff
from reviewer.errors import ExitStatus
from reviewer.explain import changed_files, explain
from reviewer.gotmpl import TemplateRenderer
from reviewer.model import ReleaseId, ResourceKey, Snapshot
from reviewer.redact import Redactor, shared_marker_key
from reviewer.side import (
    SideOptions,
    SideRender,
    Tooling,
    Tools,
    keyless_warning,
    open_tooling,
    redact_snapshot,
    render_side,
)
from reviewer.sops import KeylessMode, SopsDecoder

FORMATS = ("text", "markdown", "json")


@dataclass(frozen=True)
class ReportArgs:
    """How to write the report and choose the exit status."""

    output_format: str = "text"
    output: Path | None = None
    context: int = 3
    differ: DifferChoice = "auto"
    exit_code: bool = False


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


def run(args: DiffArgs, console: Console) -> ExitStatus:
    """Render both sides, diff, write the report; the exit status follows README.md."""
    if args.directories is not None:
        pair = render_pair(directory_sides(*args.directories), args, console)
    else:
        with git_sides(args.repo, base=args.base, head=args.head, merge=args.merge) as sides:
            pair = render_pair(sides, args, console)
    if args.save is not None:
        bundle.save(pair, args.save, guard=console.check)
        console.info(f"rendered sides saved to {args.save}")
    return finish(pair, args.report, console)


def compare(pair: RenderedPair, args: ReportArgs) -> SnapshotDiff:
    """The diff of a rendered pair with the report options' context, differ and noise rules."""
    options = DiffOptions(context=args.context, differ=args.differ, noise=pair.noise)
    return diff_snapshots(pair.base, pair.head, options=options, hidden=pair.hidden)


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


def render_pair(sides: Sides, args: DiffArgs, console: Console) -> RenderedPair:
    """Render, redact and explain both sides; afterwards the console guards every line."""
    settings = config_mod.load(sides.base.root, args.options.config_file)
    layout = config_mod.with_overrides(
        settings, definitions=args.definitions, templates=args.templates
    )
    options = replace(args.options, layout=layout)
    renderer = TemplateRenderer()
    decoder = SopsDecoder(keyless=args.secrets)
    with open_tooling(args.tooling) as tools:
        render = Renderer(options, tools, renderer, decoder)
        base = render.side(sides.base, console)
        head = render.side(sides.head, console)
    # Both sides are redacted with the union of their maps: a secret that the
    # change removes must not leak through the baseline, nor a new one through head.
    redactor = Redactor(
        {**base.replacements, **head.replacements}, key=shared_marker_key(os.environ)
    )
    warning = keyless_warning(decoder.keyless_sources)
    redacted_base = redact_snapshot(base.snapshot, redactor)
    redacted_head = redact_snapshot(head.snapshot, redactor)
    pair = RenderedPair(
        base=redacted_base,
        head=redacted_head,
        base_info=report.SideInfo(sides.base.ref, sides.base.sha),
        head_info=report.SideInfo(sides.head.ref, sides.head.sha),
        warnings=sides.warnings + ((warning,) if warning else ()),
        noise=settings.noise,
        hidden=hidden_changes(base.snapshot, head.snapshot, redacted_base, redacted_head),
    )
    diff = compare(pair, args.report)
    explanation = explain(
        base=base.plans,
        head=head.plans,
        files=changed_files(sides.base.root, sides.head.root),
        diff=diff,
        redact=redactor.redact_manifest,
    )
    console.guard = redactor.guard().check
    return replace(pair, explanation=explanation, diff=diff)


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
        if before is None or shown_before is None or shown_after is None:
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


@dataclass(frozen=True)
class Renderer:
    """What both sides of one diff are rendered with (caches are shared)."""

    options: SideOptions
    tools: Tools
    templates: TemplateRenderer
    decoder: SopsDecoder

    def side(self, side: Side, console: Console) -> SideRender:
        """Render one side (not yet redacted)."""
        console.info(f"rendering {side.label}: {side.ref}")
        cache = self.tools.cache
        rendered, reused = cache.rendered, cache.reused
        result = render_side(
            side.root,
            options=self.options,
            tools=self.tools,
            renderer=self.templates,
            secrets=self.decoder,
            bar=functools.partial(progress_bar, console, label=f"rendering {side.label}"),
        )
        console.info(
            f"  {side.label}: {cache.rendered - rendered} release(s) rendered, "
            f"{cache.reused - reused} with inputs identical to an earlier render reused"
        )
        return result


def _write(review: report.Review, args: ReportArgs, console: Console) -> None:
    colour = args.output is None and console.colour
    if args.output_format == "json":
        text = json.dumps(report.to_json(review), indent=2) + "\n"
    elif args.output_format == "markdown":
        text = report.render_markdown(review)
    else:
        text = report.render_text(review, colour=colour)
    console.check(text, str(args.output or "report"))
    if args.output is None:
        console.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
        console.info(f"report written to {args.output}")
