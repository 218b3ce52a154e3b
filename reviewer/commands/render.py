"""`reviewer render`: render every release of one checkout into a snapshot directory."""

from __future__ import annotations

import functools
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

from reviewer import snapshot as snapshot_mod
from reviewer.checkout import fleet_root
from reviewer.commands.diff import markers
from reviewer.console import Console, progress_bar
from reviewer.errors import ExitStatus, ReviewerError
from reviewer.model import WHOLE_DEPLOYMENT, Snapshot
from reviewer.prepare import SideRequest, prepare_sides
from reviewer.side import SideOptions
from reviewer.sops import KeylessMode
from reviewer.tooling import Tooling


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
    marker_key: bytes | None = None
    """Secret-marker key shared by a CI run's jobs (`marker_keys`); None: random."""


def run(args: RenderArgs, console: Console) -> ExitStatus:
    """Render, write the snapshot, print failures; non-zero when any release failed."""
    if not args.redact and args.in_ci:
        raise ReviewerError("--no-redact is refused in CI: rendered output would expose secrets")
    request = SideRequest(
        args.options, args.definitions, args.templates, args.secrets, args.tooling
    )
    repo = fleet_root(args.repo, markers(args.options.config_file, args.definitions))
    prepared = prepare_sides(
        (repo,),
        request,
        config_root=repo,
        marker_key=args.marker_key,
        watch=lambda _, __: nullcontext(
            functools.partial(progress_bar, console, label="rendering")
        ),
    )
    console.info(prepared.sources)
    warnings = [prepared.keyless] if prepared.keyless else []
    if args.redact:
        (redacted,) = prepared.redacted
        snapshot = replace(redacted, warnings=(*redacted.warnings, *warnings))
        console = console.guarded(prepared.guard().check)
        snapshot_mod.write(snapshot, args.out, guard=console.check)
    else:
        (side,) = prepared.rendered
        snapshot = replace(side.snapshot, warnings=(*side.snapshot.warnings, *warnings))
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
    console.info(f"{counts_line(snapshot)} → {out}")
    return ExitStatus.RENDER_FAILED if failed else ExitStatus.OK


def counts_line(snapshot: Snapshot) -> str:
    """Releases rendered and failed, then deployments that failed to plan, never mixed."""
    releases = [r for r in snapshot.releases if r.id.release != WHOLE_DEPLOYMENT]
    failed = sum(1 for release in releases if release.error is not None)
    line = f"{len(releases) - failed} release(s) rendered, {failed} failed"
    # One deployment.yaml shared by a group fails alike in each of its clusters: one cause.
    broken: dict[tuple[str, str], set[str]] = {}
    for release in snapshot.releases:
        if release.id.release == WHOLE_DEPLOYMENT and release.error is not None:
            cause = (release.id.deployment, release.error)
            broken.setdefault(cause, set()).add(release.id.cluster)
    if broken:
        named = ", ".join(
            f"{deployment} in {len(clusters)} cluster(s)"
            for (deployment, _), clusters in sorted(broken.items())
        )
        line += f"; {len(broken)} deployment(s) failed to plan ({named})"
    return line
