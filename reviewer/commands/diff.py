"""`reviewer diff`: render two sides of a repository and report what changes."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from reviewer import config as config_mod
from reviewer import report
from reviewer.checkout import Side, Sides, directory_sides, git_sides
from reviewer.console import Console
from reviewer.diff import DifferChoice, DiffOptions, diff_snapshots
from reviewer.engine import EmbeddedEngine
from reviewer.errors import ExitStatus
from reviewer.gotmpl import TemplateRenderer
from reviewer.side import SideOptions, render_side
from reviewer.snapshot import Snapshot

FORMATS = ("text", "markdown", "json")


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
    output_format: str
    output: Path | None
    context: int
    differ: DifferChoice
    exit_code: bool


def run(args: DiffArgs, console: Console) -> ExitStatus:
    """Render both sides, diff, write the report; the exit status follows README.md."""
    if args.directories is not None:
        review = _review(directory_sides(*args.directories), args, console)
    else:
        with git_sides(args.repo, base=args.base, head=args.head, merge=args.merge) as sides:
            review = _review(sides, args, console)
    _write(review, args, console)
    if review.failed:
        return ExitStatus.RENDER_FAILED
    if args.exit_code and review.diff.has_changes:
        return ExitStatus.CHANGES
    return ExitStatus.OK


def _review(sides: Sides, args: DiffArgs, console: Console) -> report.Review:
    settings = config_mod.load(sides.base.root)
    layout = config_mod.with_overrides(
        settings, definitions=args.definitions, templates=args.templates
    )
    options = replace(args.options, layout=layout)
    renderer = TemplateRenderer()
    engine = EmbeddedEngine()
    try:
        base = _render(sides.base, options, engine, renderer, console)
        head = _render(sides.head, options, engine, renderer, console)
    finally:
        engine.close()
    diff_options = DiffOptions(context=args.context, differ=args.differ, noise=settings.noise)
    return report.Review(
        base=report.SideInfo(sides.base.ref, sides.base.sha),
        head=report.SideInfo(sides.head.ref, sides.head.sha),
        diff=diff_snapshots(base, head, options=diff_options),
        warnings=sides.warnings,
    )


def _render(
    side: Side,
    options: SideOptions,
    engine: EmbeddedEngine,
    renderer: TemplateRenderer,
    console: Console,
) -> Snapshot:
    console.info(f"rendering {side.label}: {side.ref}")
    return render_side(side.root, options=options, engine=engine, renderer=renderer)


def _write(review: report.Review, args: DiffArgs, console: Console) -> None:
    colour = args.output is None and console.colour
    if args.output_format == "json":
        text = json.dumps(report.to_json(review), indent=2) + "\n"
    elif args.output_format == "markdown":
        text = report.render_markdown(review)
    else:
        text = report.render_text(review, colour=colour)
    if args.output is None:
        console.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
        console.info(f"report written to {args.output}")
