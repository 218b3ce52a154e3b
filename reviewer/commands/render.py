"""`reviewer render`: render every release of one checkout into a snapshot directory."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from reviewer import config as config_mod
from reviewer import snapshot as snapshot_mod
from reviewer.console import Console, progress_bar
from reviewer.engine import EmbeddedEngine
from reviewer.errors import ExitStatus
from reviewer.gotmpl import TemplateRenderer
from reviewer.render import render_plan
from reviewer.side import SideOptions, plan_side


@dataclass(frozen=True)
class RenderArgs:
    """Arguments of `reviewer render`."""

    repo: Path
    out: Path
    options: SideOptions
    definitions: str | None = None
    templates: str | None = None


def run(args: RenderArgs, console: Console) -> ExitStatus:
    """Render, write the snapshot, print failures; non-zero when any release failed."""
    layout = config_mod.with_overrides(
        config_mod.load(args.repo), definitions=args.definitions, templates=args.templates
    )
    options = replace(args.options, layout=layout)
    renderer = TemplateRenderer()
    engine = EmbeddedEngine()
    plan = plan_side(args.repo, options=options, renderer=renderer)
    total = len(plan.releases)
    try:
        with progress_bar(console, total=total, label="rendering") as advance:
            snapshot = render_plan(
                plan, root=args.repo, engine=engine, progress=lambda _: advance()
            )
    finally:
        engine.close()
    snapshot_mod.write(snapshot, args.out)
    failed = snapshot.failed
    rendered = len(snapshot.releases) - len(failed)
    for release in failed:
        console.error(f"FAILED {release.id}: {release.error}")
        if release.reproduce:
            console.error(f"  reproduce: {release.reproduce}")
    console.info(f"{rendered} release(s) rendered, {len(failed)} failed → {args.out}")
    return ExitStatus.RENDER_FAILED if failed else ExitStatus.OK
