"""`reviewer render`: render every release of one checkout into a snapshot directory."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from reviewer import config as config_mod
from reviewer import snapshot as snapshot_mod
from reviewer.console import Console, progress_bar
from reviewer.errors import ExitStatus, ReviewerError
from reviewer.gotmpl import TemplateRenderer
from reviewer.model import Snapshot
from reviewer.redact import Redactor, shared_marker_key
from reviewer.side import (
    SideOptions,
    Tooling,
    keyless_warning,
    open_tooling,
    redact_snapshot,
    render_side,
)
from reviewer.sops import KeylessMode, SopsDecoder


@dataclass(frozen=True)
class RenderArgs:
    """Arguments of `reviewer render`."""

    repo: Path
    out: Path
    options: SideOptions
    definitions: str | None = None
    templates: str | None = None
    secrets: KeylessMode = KeylessMode.FALLBACK
    tooling: Tooling = field(default_factory=Tooling)
    redact: bool = True
    in_ci: bool = False


def run(args: RenderArgs, console: Console) -> ExitStatus:
    """Render, write the snapshot, print failures; non-zero when any release failed."""
    if not args.redact and args.in_ci:
        raise ReviewerError("--no-redact is refused in CI: rendered output would expose secrets")
    layout = config_mod.with_overrides(
        config_mod.load(args.repo, args.options.config_file),
        definitions=args.definitions,
        templates=args.templates,
    )
    options = replace(args.options, layout=layout)
    decoder = SopsDecoder(keyless=args.secrets)
    with open_tooling(args.tooling) as tools:
        side = render_side(
            args.repo,
            options=options,
            tools=tools,
            renderer=TemplateRenderer(),
            secrets=decoder,
            bar=functools.partial(progress_bar, console, label="rendering"),
        )
    warning = keyless_warning(decoder.keyless_sources)
    snapshot = replace(side.snapshot, warnings=(*side.snapshot.warnings, *filter(None, [warning])))
    if args.redact:
        redactor = Redactor(side.replacements, key=shared_marker_key(os.environ))
        snapshot = redact_snapshot(snapshot, redactor)
        console.guard = redactor.guard().check
        snapshot_mod.write(snapshot, args.out, guard=console.guard)
    else:
        console.warn("--no-redact: secret values are written in clear text")
        snapshot_mod.write(snapshot, args.out)
    return _summary(snapshot, args.out, console)


def _summary(snapshot: Snapshot, out: Path, console: Console) -> ExitStatus:
    for warning in snapshot.warnings:
        console.warn(f"warning: {warning}")
    failed = snapshot.failed
    for release in failed:
        console.error(f"FAILED {release.id}: {release.error}")
        if release.reproduce:
            console.error(f"  reproduce: {release.reproduce}")
        if release.helm_command:
            console.error(f"  with helm: {release.helm_command}")
    rendered = len(snapshot.releases) - len(failed)
    console.info(f"{rendered} release(s) rendered, {len(failed)} failed → {out}")
    return ExitStatus.RENDER_FAILED if failed else ExitStatus.OK
