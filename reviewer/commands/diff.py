"""`reviewer diff`: render two sides of a repository and report what changes."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from reviewer import bundle, report
from reviewer import config as config_mod
from reviewer.bundle import RenderedPair
from reviewer.checkout import Side, Sides, directory_sides, git_sides
from reviewer.console import Console
from reviewer.diff import DifferChoice, DiffOptions, diff_snapshots
from reviewer.errors import ExitStatus
from reviewer.gotmpl import TemplateRenderer
from reviewer.redact import Redactor
from reviewer.side import (
    SideOptions,
    Tooling,
    Tools,
    keyless_warning,
    open_tooling,
    redact_snapshot,
    render_side,
)
from reviewer.snapshot import Snapshot
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
        pair = _render_pair(directory_sides(*args.directories), args, console)
    else:
        with git_sides(args.repo, base=args.base, head=args.head, merge=args.merge) as sides:
            pair = _render_pair(sides, args, console)
    if args.save is not None:
        bundle.save(pair, args.save, guard=console.check)
        console.info(f"rendered sides saved to {args.save}")
    return finish(pair, args.report, console)


def finish(pair: RenderedPair, args: ReportArgs, console: Console) -> ExitStatus:
    """Diff a rendered pair, write the report, and return the exit status."""
    options = DiffOptions(context=args.context, differ=args.differ, noise=pair.noise)
    review = report.Review(
        base=pair.base_info,
        head=pair.head_info,
        diff=diff_snapshots(pair.base, pair.head, options=options),
        warnings=pair.warnings,
    )
    _write(review, args, console)
    if review.failed:
        return ExitStatus.RENDER_FAILED
    if args.exit_code and review.diff.has_changes:
        return ExitStatus.CHANGES
    return ExitStatus.OK


def _render_pair(sides: Sides, args: DiffArgs, console: Console) -> RenderedPair:
    settings = config_mod.load(sides.base.root)
    layout = config_mod.with_overrides(
        settings, definitions=args.definitions, templates=args.templates
    )
    options = replace(args.options, layout=layout)
    renderer = TemplateRenderer()
    decoder = SopsDecoder(keyless=args.secrets)
    with open_tooling(args.tooling) as tools:
        render = Renderer(options, tools, renderer, decoder)
        base, base_map = render.side(sides.base, console)
        head, head_map = render.side(sides.head, console)
    # Both sides are redacted with the union of their maps: a secret that the
    # change removes must not leak through the baseline, nor a new one through head.
    redactor = Redactor({**base_map, **head_map})
    base, head = redact_snapshot(base, redactor), redact_snapshot(head, redactor)
    console.guard = redactor.guard().check
    warning = keyless_warning(decoder.keyless_sources)
    return RenderedPair(
        base=base,
        head=head,
        base_info=report.SideInfo(sides.base.ref, sides.base.sha),
        head_info=report.SideInfo(sides.head.ref, sides.head.sha),
        warnings=sides.warnings + ((warning,) if warning else ()),
        noise=settings.noise,
    )


@dataclass(frozen=True)
class Renderer:
    """What both sides of one diff are rendered with (caches are shared)."""

    options: SideOptions
    tools: Tools
    templates: TemplateRenderer
    decoder: SopsDecoder

    def side(self, side: Side, console: Console) -> tuple[Snapshot, dict[str, str]]:
        """Render one side: its unredacted snapshot and replacement map."""
        console.info(f"rendering {side.label}: {side.ref}")
        cache = self.tools.cache
        rendered, reused = cache.rendered, cache.reused
        result = render_side(
            side.root,
            options=self.options,
            tools=self.tools,
            renderer=self.templates,
            secrets=self.decoder,
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
