"""`reviewer explain` and `reviewer values`: one release's values and files, and where they
came from (every source kind: object sets have files, not values)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from reviewer import checkout, yamlio
from reviewer import config as config_mod
from reviewer.console import Console
from reviewer.discover import HierarchySource
from reviewer.errors import ExitStatus, ReviewerError, UsageProblem
from reviewer.explain import affected_by, changed_files, leaf_provenance
from reviewer.filters import check_cluster, did_you_mean
from reviewer.gotmpl import TemplateRenderer
from reviewer.model import LAYER_LABEL, ReleaseId
from reviewer.paths import inside
from reviewer.plan import Plan, ReleasePlan
from reviewer.proc import Programs
from reviewer.redact import LeakGuard, Redactor
from reviewer.semantic import show_value
from reviewer.side import Selection, SideOptions, plan_side, plan_twins
from reviewer.side_redact import KEYLESS_FIX, keyless_warning
from reviewer.sops import KeylessMode, SopsDecoder
from reviewer.sources import registry
from reviewer.sources.hierarchy import Hierarchy
from reviewer.sources.protocol import Source
from reviewer.visible import visible


@dataclass(frozen=True)
class ReleaseArgs:
    """Which release, in which checkout."""

    repo: Path
    cluster: str
    deployment: str
    release: str
    secrets: KeylessMode = KeylessMode.FALLBACK
    programs: Programs = field(default_factory=Programs)


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


@dataclass(frozen=True)
class ObjectSet:
    """An object set a source built itself (plain manifests, a generator's output)."""

    id: ReleaseId
    inputs: frozenset[str]
    guard: LeakGuard


def locate(args: ReleaseArgs, console: Console) -> Located | ObjectSet:
    """Plan the release's location and find the release or object set there.

    Planning errors are printed; a name that matches nothing is a usage problem naming
    the nearest names.
    """
    settings = config_mod.load(args.repo)
    sources = settings.sources or registry.detect(args.repo, settings.layout)
    _check_names(args, sources)
    options = SideOptions(
        layout=settings.layout,
        selection=Selection(clusters=(args.cluster,), deployments=(args.deployment,)),
        display_root=str(args.repo),
        sources=sources,
        programs=args.programs,
    )
    decoder = SopsDecoder(keyless=args.secrets, programs=args.programs)
    planned = plan_twins(args.repo, options=options, renderer=TemplateRenderer(), secrets=decoder)
    redactor = Redactor(planned.replacements)
    for error in planned.twin.errors:
        console.error(redactor.redact_text(error.message))
    keyless = tuple(sorted(decoder.keyless_sources))
    warning = keyless_warning(list(keyless))
    if warning is not None:
        console.warn(f"warning: {warning}")
    real = next((r for r in planned.plan.releases if _matches(r.id, args)), None)
    twin = next((r for r in planned.twin.releases if _matches(r.id, args)), None)
    if real is not None and twin is not None:
        return Located(real, twin, redactor, redactor.guard(), keyless)
    built = next((r for r in planned.plan.objects if _matches(r.id, args)), None)
    if built is None:
        raise _not_found(args, planned.plan, replace(options, selection=Selection((args.cluster,))))
    if built.error:
        console.error(redactor.redact_text(built.error))
    return ObjectSet(built.id, planned.plan.inputs.get(built.id, frozenset()), redactor.guard())


def _not_found(args: ReleaseArgs, plan: Plan, everywhere: SideOptions) -> UsageProblem:
    """No such release at a location that has some; else no such location (planned
    `everywhere` in the source or cluster to name its locations)."""
    ids = [r.id for r in plan.releases] + [r.id for r in plan.objects]
    if ids:
        return _no_release(args, ids)
    decoder = SopsDecoder(keyless=KeylessMode.ALWAYS)  # names only: no secret is needed
    whole = plan_side(args.repo, options=everywhere, renderer=TemplateRenderer(), secrets=decoder)
    locations = [r.id.deployment for r in whole.releases] + [r.id.deployment for r in whole.objects]
    # A location whose releases fail to plan without keys is still one to suggest.
    locations += [e.deployment for e in whole.errors if e.deployment != "*"]
    return UsageProblem(
        f"--deployment {args.deployment}: nothing is planned there in '{args.cluster}'"
        + did_you_mean(args.deployment, locations),
        hint="locations are those of `reviewer render` (index.json): cluster/deployment/release",
    )


def _no_release(args: ReleaseArgs, ids: list[ReleaseId]) -> UsageProblem:
    names = [rid.release for rid in ids if _in_deployment(rid, args)]
    return UsageProblem(
        f"--release {args.release}: no such release in deployment '{args.deployment}' of "
        f"cluster '{args.cluster}'" + did_you_mean(args.release, names),
        hint="release names are those of `reviewer render` (index.json)",
    )


def explain(
    args: ReleaseArgs,
    path: str | None,
    console: Console,
    *,
    since: str | None = None,
    path_hint: str | None = None,
) -> ExitStatus:
    """Print each value leaf of the release (or those under `path`) with its provenance,
    then (without `path`) the files it is built from and those changed since `since`."""
    found = locate(args, console)
    if isinstance(found, ObjectSet):
        if path:
            raise UsageProblem(
                f"{found.id} is an object set built by its source, not a Helm release: "
                f"it has no values to look up '{path}' in",
                hint="leave PATH out to see the files it is built from",
            )
        console = console.guarded(found.guard.check)
        console.info(f"{found.id}: an object set built by its source (no Helm values)")
        _files(args.repo, found.inputs, since, console, git=args.programs.git())
        return ExitStatus.OK
    console = console.guarded(found.guard.check)
    layer = found.twin.labels.get(LAYER_LABEL)
    if layer is not None and not path:
        console.info(f"{found.twin.id}: a release of Kraan layer '{layer}'")
    shown = _values(args.repo, found, path, console)
    if path and not shown:
        raise UsageProblem(
            f"no value at or under '{path}' in release {found.twin.id}",
            hint=path_hint,
        )
    if not path or since is not None:
        _files(args.repo, found.twin.inputs, since, console, git=args.programs.git())
    return ExitStatus.OK


def _values(repo: Path, located: Located, path: str | None, console: Console) -> int:
    """Print the value leaves (under `path`) with their provenance; how many were shown."""
    plan = replace(located.twin, values=located.redactor.redact_manifest(located.twin.values))
    defaults = _chart_defaults(repo, plan)
    shown = 0
    for leaf, value, origin in leaf_provenance(plan, defaults or {}):
        if path and not (leaf == path or leaf.startswith(path + ".")):
            continue
        line = f"{leaf}: {show_value(value)}  ← {origin.winner}"
        if origin.overridden:
            line += "  (overrides " + ", ".join(str(o) for o in origin.overridden) + ")"
        console.write(visible(line) + "\n")  # one line, whatever a name or value holds
        shown += 1
    if defaults is None:
        console.info(
            f"chart defaults of {plan.chart.ref} are not shown (the chart is not in the "
            "repository); values not listed come from its values.yaml"
            + (" as its valuesFiles replace it" if plan.chart_defaults else "")
        )
    return shown


def _files(
    repo: Path,
    inputs: frozenset[str],
    since: str | None,
    console: Console,
    *,
    git: Mapping[str, str],
) -> None:
    """The repository files a release is built from and, with `since`, those changed since
    (git sees `git`, the environment the edge gives it)."""
    console.write(f"built from ({len(inputs)}):\n")
    for file in sorted(inputs):
        console.write(f"  {visible(file)}\n")
    if since is None:
        return
    affecting = affected_by(changed_since(repo, since, env=git), inputs)
    if not affecting:
        console.write(f"changed since {since}: none of its files\n")
        return
    console.write(f"changed since {since} ({len(affecting)}):\n")
    for file in affecting:
        console.write(f"  {visible(file)}\n")


def changed_since(repo: Path, ref: str, *, env: Mapping[str, str]) -> list[str]:
    """Files of the working tree at `repo` that differ from git ref `ref` (ignored ones not)."""
    with checkout.git_sides(repo, base=ref, head=None, merge=False, env=env) as sides:
        return changed_files(sides.base.root, sides.head.root, ignored=sides.head.ignored, env=env)


def _chart_defaults(repo: Path, plan: ReleasePlan) -> dict[str, Any] | None:
    """The values.yaml of a chart inside the repository (or what a HelmRelease's
    `valuesFiles` replace it with); None when not known without fetching the chart."""
    replaced = plan.chart_defaults
    if replaced is not None:
        # Merged from files of the repository already, or files inside the chart.
        text = replaced.text
        return None if text is None else yamlio.load_mapping(text, source="valuesFiles")
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
    if isinstance(located, ObjectSet):
        raise UsageProblem(
            f"{located.id} is an object set built by its source, not a Helm release: "
            "it has no values",
            hint="`reviewer render` writes its objects; `reviewer explain` names its files",
        )
    if redact:
        console = console.guarded(located.guard.check)
        redacted = located.redactor.redact_manifest(located.twin.values)
        # The guard knows a secret's spellings, not YAML's escapes (`"\xE9"`) that
        # `dump_printable` may choose: it reads the document as plainly written first.
        console.check(yamlio.dump(redacted), "output")
        console.write(yamlio.dump_printable(redacted))
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
    console.write(yamlio.dump_printable(located.real.values))
    return ExitStatus.OK


def _matches(release: ReleaseId, args: ReleaseArgs) -> bool:
    return _in_deployment(release, args) and release.release == args.release


def _in_deployment(release: ReleaseId, args: ReleaseArgs) -> bool:
    cluster = release.cluster
    return (
        args.cluster in (cluster, cluster.rsplit("/", 1)[-1])
        and release.deployment == args.deployment
    )


def _check_names(args: ReleaseArgs, sources: Sequence[Source]) -> None:
    """A misspelt cluster or deployment fails before planning, naming the nearest names.

    `--cluster` names a hierarchy cluster or, for every other kind, a source.
    """
    others = [source.name for source in sources if not isinstance(source, Hierarchy)]
    if args.cluster in others:
        return
    hierarchies = [source for source in sources if isinstance(source, Hierarchy)]
    if not hierarchies:
        raise UsageProblem(
            f"--cluster {args.cluster}: no such source" + did_you_mean(args.cluster, others),
            hint="--cluster names a source: " + ", ".join(others),
        )
    fleet = [c for h in hierarchies for c in HierarchySource(h.layout).discover(args.repo).clusters]
    if others and not any(args.cluster in (c.path, c.name) for c in fleet):
        raise UsageProblem(
            f"--cluster {args.cluster}: no such cluster or source"
            + did_you_mean(args.cluster, [*others, *(c.path for c in fleet)])
        )
    check_cluster(args.cluster, fleet)
    cluster = next(c for c in fleet if args.cluster in (c.path, c.name))
    if cluster.deployment(args.deployment) is None:
        names = [d.name for d in cluster.deployments]
        raise UsageProblem(
            f"--deployment {args.deployment}: cluster {cluster.path} has no such deployment"
            + did_you_mean(args.deployment, names)
        )


@dataclass(frozen=True)
class Operands:
    """What `reviewer explain [REPO] [PATH]` was given, sorted out."""

    repo: Path
    path: str | None
    path_hint: str | None = None
    """Said when PATH finds nothing and it may have been meant as the repository."""


def operands(words: Sequence[str], repo: str | None) -> Operands:
    """REPO and PATH from the positional words (and `--repo`).

    Two words are REPO PATH. One word is REPO when it is a directory, else PATH in the
    current directory's repository, unless it reads as a file-system path (a typo'd REPO).
    """
    if repo is not None:
        if len(words) > 1:
            raise UsageProblem(f"with --repo {repo}, give at most PATH: got {' '.join(words)}")
        return Operands(_directory(repo, "--repo"), words[0] if words else None)
    if len(words) > 2:
        raise UsageProblem(f"expected [REPO] [PATH], got {len(words)} arguments")
    if len(words) == 2:
        return Operands(_directory(words[0], "REPO"), words[1])
    if not words:
        return Operands(Path("."), None)
    (word,) = words
    if Path(word).is_dir():
        return Operands(Path(word), None)
    if _looks_like_a_directory(word):
        _directory(word, "REPO")
    return Operands(
        Path("."),
        word,
        path_hint=f"'{word}' was read as PATH (it is no directory) in the repository here; "
        "to name a repository, give REPO PATH or --repo",
    )


def _directory(text: str, what: str) -> Path:
    path = Path(text)
    if not path.is_dir():
        raise UsageProblem(
            f"{what} {text}: no such directory",
            hint="usage: reviewer explain [REPO] --cluster C --deployment D --release R [PATH]",
        )
    return path


def _looks_like_a_directory(word: str) -> bool:
    """A value path never starts like a file-system path, nor has a bare `/` (keys with one
    are quoted: `podAnnotations["a/b"]`)."""
    if word.startswith(("/", "./", "../", "~")) or word in (".", ".."):
        return True
    return os.sep in word.split("[", 1)[0]
