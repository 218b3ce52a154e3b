"""`reviewer render`: render every release of one checkout into a snapshot directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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


def run(args: RenderArgs, console: Console) -> ExitStatus:
    """Render, write the snapshot, print failures; non-zero when any release failed."""
    renderer = TemplateRenderer()
    engine = EmbeddedEngine()
    plan = plan_side(args.repo, options=args.options, renderer=renderer)
    total = len(plan.releases)
    with progress_bar(console, total=total, label="rendering") as advance:
        snapshot = render_plan(plan, root=args.repo, engine=engine, progress=lambda _: advance())
    snapshot_mod.write(snapshot, args.out)
    failed = snapshot.failed
    rendered = len(snapshot.releases) - len(failed)
    for release in failed:
        console.error(f"FAILED {release.id}: {release.error}")
        if release.reproduce:
            console.error(f"  reproduce: {release.reproduce}")
    console.info(f"{rendered} release(s) rendered, {len(failed)} failed → {args.out}")
    return ExitStatus.RENDER_FAILED if failed else ExitStatus.OK
