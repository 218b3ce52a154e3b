"""`reviewer explain`: every value of one release and the file that set it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from reviewer import config as config_mod
from reviewer.console import Console
from reviewer.errors import ExitStatus, ReviewerError
from reviewer.explain import leaf_provenance
from reviewer.gotmpl import TemplateRenderer
from reviewer.redact import Redactor
from reviewer.semantic import show_value
from reviewer.side import Selection, SideOptions, plan_twins
from reviewer.snapshot import ReleaseId
from reviewer.sops import KeylessMode, SopsDecoder


@dataclass(frozen=True)
class ExplainArgs:
    """Arguments of `reviewer explain`."""

    repo: Path
    cluster: str
    deployment: str
    release: str
    path: str | None = None
    secrets: KeylessMode = KeylessMode.FALLBACK


def run(args: ExplainArgs, console: Console) -> ExitStatus:
    """Print each value leaf of the release (or those under PATH) with its provenance."""
    settings = config_mod.load(args.repo)
    options = SideOptions(
        layout=settings.layout,
        selection=Selection(clusters=(args.cluster,), deployments=(args.deployment,)),
        display_root=str(args.repo),
    )
    decoder = SopsDecoder(keyless=args.secrets)
    planned = plan_twins(args.repo, options=options, renderer=TemplateRenderer(), secrets=decoder)
    redactor = Redactor(planned.replacements)
    console.guard = redactor.guard().check
    for error in planned.twin.errors:
        console.error(redactor.redact_text(error.message))
    plan = next((r for r in planned.twin.releases if _matches(r.id, args)), None)
    if plan is None:
        raise ReviewerError(
            f"no release '{args.release}' in deployment '{args.deployment}' of cluster "
            f"'{args.cluster}'",
            hint="release names are those of `reviewer render` (index.json)",
        )
    plan = replace(plan, values=redactor.redact_manifest(plan.values))
    for path, value, origin in leaf_provenance(plan):
        if args.path and not (path == args.path or path.startswith(args.path + ".")):
            continue
        line = f"{path}: {show_value(value)}  ← {origin.winner}"
        if origin.overridden:
            line += "  (overrides " + ", ".join(str(o) for o in origin.overridden) + ")"
        console.write(line + "\n")
    return ExitStatus.OK


def _matches(release: ReleaseId, args: ExplainArgs) -> bool:
    cluster = release.cluster
    return (
        args.cluster in (cluster, cluster.rsplit("/", 1)[-1])
        and release.deployment == args.deployment
        and release.release == args.release
    )
