"""`reviewer explain` and `reviewer values`: one release's values, and where they came from."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reviewer import config as config_mod
from reviewer import yamlio
from reviewer.console import Console
from reviewer.discover import HierarchySource, Layout
from reviewer.errors import ExitStatus, ReviewerError, UsageProblem
from reviewer.explain import leaf_provenance
from reviewer.filters import check_cluster, did_you_mean
from reviewer.gotmpl import TemplateRenderer
from reviewer.model import ReleaseId
from reviewer.paths import inside
from reviewer.plan import ReleasePlan
from reviewer.redact import LeakGuard, Redactor
from reviewer.semantic import show_value
from reviewer.side import KEYLESS_FIX, Selection, SideOptions, keyless_warning, plan_twins
from reviewer.sops import KeylessMode, SopsDecoder


@dataclass(frozen=True)
class ReleaseArgs:
    """Which release, in which checkout."""

    repo: Path
    cluster: str
    deployment: str
    release: str
    secrets: KeylessMode = KeylessMode.FALLBACK


@dataclass(frozen=True)
class Located:
    """A release's real plan, its redacted twin, the redactor of its side and its leak guard."""

    real: ReleasePlan
    twin: ReleasePlan
    redactor: Redactor
    guard: LeakGuard
    """Taken before the values are redacted for display: no map key counts as public."""
    keyless: tuple[str, ...] = ()
    """SOPS files read as placeholders because no key could decrypt them."""


def locate(args: ReleaseArgs, console: Console) -> Located:
    """Plan the release's deployment and find the release; planning errors are printed."""
    settings = config_mod.load(args.repo)
    _check_names(args, settings.layout)
    options = SideOptions(
        layout=settings.layout,
        selection=Selection(clusters=(args.cluster,), deployments=(args.deployment,)),
        display_root=str(args.repo),
    )
    decoder = SopsDecoder(keyless=args.secrets)
    planned = plan_twins(args.repo, options=options, renderer=TemplateRenderer(), secrets=decoder)
    redactor = Redactor(planned.replacements)
    for error in planned.twin.errors:
        console.error(redactor.redact_text(error.message))
    real = next((r for r in planned.plan.releases if _matches(r.id, args)), None)
    twin = next((r for r in planned.twin.releases if _matches(r.id, args)), None)
    if real is None or twin is None:
        names = [r.id.release for r in planned.plan.releases if _in_deployment(r.id, args)]
        raise UsageProblem(
            f"--release {args.release}: no such release in deployment '{args.deployment}' of "
            f"cluster '{args.cluster}'" + did_you_mean(args.release, names),
            hint="release names are those of `reviewer render` (index.json)",
        )
    keyless = tuple(decoder.keyless_sources)
    warning = keyless_warning(list(keyless))
    if warning is not None:
        console.warn(f"warning: {warning}")
    return Located(real, twin, redactor, redactor.guard(), keyless)


def explain(args: ReleaseArgs, path: str | None, console: Console) -> ExitStatus:
    """Print each value leaf of the release (or those under `path`) with its provenance."""
    located = locate(args, console)
    console = console.guarded(located.guard.check)
    plan = replace(located.twin, values=located.redactor.redact_manifest(located.twin.values))
    defaults = _chart_defaults(args.repo, plan)
    shown = 0
    for leaf, value, origin in leaf_provenance(plan, defaults or {}):
        if path and not (leaf == path or leaf.startswith(path + ".")):
            continue
        line = f"{leaf}: {show_value(value)}  ← {origin.winner}"
        if origin.overridden:
            line += "  (overrides " + ", ".join(str(o) for o in origin.overridden) + ")"
        console.write(line + "\n")
        shown += 1
    if defaults is None:
        console.info(
            f"chart defaults of {plan.chart.ref} are not shown (the chart is not in the "
            "repository); values not listed come from its values.yaml"
        )
    if path and not shown:
        raise UsageProblem(f"no value at or under '{path}' in release {plan.id}")
    return ExitStatus.OK


def _chart_defaults(repo: Path, plan: ReleasePlan) -> dict[str, Any] | None:
    """The values.yaml of a chart inside the repository; None when the chart is fetched."""
    if plan.chart.local is None:
        return None
    source = f"{plan.chart.local}/values.yaml"
    path = repo / inside(repo, ".", source, file=source, field="chart")
    if not path.is_file():
        return {}
    # Chart defaults are public (committed beside the chart): shown as they are.
    return yamlio.read_mapping(path, source=source)


def values(args: ReleaseArgs, *, redact: bool, in_ci: bool, console: Console) -> ExitStatus:
    """Print the merged values the chart receives, as YAML (redacted unless asked not to)."""
    if not redact and in_ci:
        raise ReviewerError("--no-redact is refused in CI: the values would expose secrets")
    located = locate(args, console)
    if redact:
        console = console.guarded(located.guard.check)
        console.write(yamlio.dump(located.redactor.redact_manifest(located.twin.values)))
        return ExitStatus.OK
    if located.keyless and args.secrets is not KeylessMode.ALWAYS:
        # Placeholders printed as clear text would pass for the real values (and feed
        # `helm template` through the suggested reproduction): refuse instead.
        raise ReviewerError(
            "--no-redact refused: secrets were not decrypted in "
            + ", ".join(located.keyless)
            + "; the values would hold placeholders, not the real secrets",
            hint=f"{KEYLESS_FIX}; or pass --secrets keyless to print the placeholders anyway",
        )
    if located.keyless:
        console.warn(
            "warning: these values hold placeholders (sops-placeholder, 0, false) where "
            "the secrets are, not the real values: --secrets keyless"
        )
    console.write(yamlio.dump(located.real.values))
    return ExitStatus.OK


def _matches(release: ReleaseId, args: ReleaseArgs) -> bool:
    return _in_deployment(release, args) and release.release == args.release


def _in_deployment(release: ReleaseId, args: ReleaseArgs) -> bool:
    cluster = release.cluster
    return (
        args.cluster in (cluster, cluster.rsplit("/", 1)[-1])
        and release.deployment == args.deployment
    )


def _check_names(args: ReleaseArgs, layout: Layout) -> None:
    """A misspelt cluster or deployment fails before planning, naming the nearest names."""
    fleet = HierarchySource(layout).discover(args.repo).clusters
    check_cluster(args.cluster, fleet)
    cluster = next(c for c in fleet if args.cluster in (c.path, c.name))
    if cluster.deployment(args.deployment) is None:
        names = [d.name for d in cluster.deployments]
        raise UsageProblem(
            f"--deployment {args.deployment}: cluster {cluster.path} has no such deployment"
            + did_you_mean(args.deployment, names)
        )
