"""One side planned in two processes: each plans a share of the clusters, the shares merge.

Planning is Python (one core for all its threads, whatever their number) plus Go
templates in the sandbox child. A large side planned from scratch, as the base side of a
first review is, takes a second core when a spawned process plans half of its clusters
with its own template sandbox and SOPS decoder, and stores what it planned in the plan
cache, as this process does. The merged side is what planning it in one process gives:
releases, errors and deployments in the fleet's order, maps and sets joined.

Only a hierarchy source alone is split (its clusters are independent), and only when
enough selected deployments are missing from the plan cache to pay for starting the
process (about half a second).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from pathlib import Path

from reviewer import ending
from reviewer.discover import Fleet, HierarchySource
from reviewer.errors import ReviewerError
from reviewer.gotmpl import TemplateRenderer
from reviewer.limits import Limits
from reviewer.plan import Plan
from reviewer.plan_cache import SidePlans
from reviewer.proc import Programs
from reviewer.render_cache import spelling
from reviewer.reuse import DeploymentKey, Reuse, key_of
from reviewer.side import PlannedSide, Selection, Shard, SideOptions, plan_twins
from reviewer.side_twins import twin_replacements, unsure_keys
from reviewer.sops import KeylessMode, SopsDecoder
from reviewer.sources.hierarchy import Hierarchy, fleet_key
from reviewer.sources.protocol import SideBuilds

SPLIT_AT = 300
"""Deployments to plan (selected, not in the plan cache) from which a side is planned in
two processes: below, starting the second one costs about as much as it saves."""

_SALT = "plan part\0"  # shares are drawn apart from `--shard`'s


@dataclass(frozen=True)
class _Share:
    """What the spawned process gives back besides its planned side."""

    planned: PlannedSide
    keyless: tuple[str, ...]
    plan_hits: int
    plans_written: int
    plans_learned: dict[str, str]


def plan_side_in_parts(
    root: Path,
    *,
    options: SideOptions,
    renderer: TemplateRenderer,
    decoder: SopsDecoder,
    limits: Limits,
    stored: SidePlans | None,
    reuse: Reuse | None = None,
) -> PlannedSide:
    """`plan_twins` (fast path) of a side, in two processes when at least `SPLIT_AT` of
    its selected deployments must be planned (neither reused nor in the plan cache)."""
    fleet = _fleet(root, options)
    to_plan = [] if fleet is None else _to_plan(fleet, options, stored, reuse)

    def here(selection: Selection) -> PlannedSide:
        builds = SideBuilds()
        if fleet is not None:  # walked above: planning takes it instead of walking again
            builds.once(fleet_key(fleet.layout), lambda: fleet)
        return plan_twins(
            root,
            options=replace(options, selection=selection),
            renderer=renderer,
            secrets=decoder,
            fast=True,
            reuse=reuse,
            stored=stored,
            builds=builds,
        )

    if fleet is None or len(to_plan) < SPLIT_AT:
        return here(options.selection)
    theirs = frozenset(key for key in to_plan if in_second_share(key[0]))
    other = replace(options, selection=replace(options.selection, only=theirs))
    share: _Share | None = None
    future: Future[_Share] | None = None
    try:
        with ending.one_process() as worker:  # a slow template there does not hold us up
            # The process gets copies (pickled): its caches and counts are its own.
            with contextlib.suppress(OSError):  # no process to be had (limits): plan it here
                future = worker.submit(_plan_share, root, other, limits, decoder.settings(), stored)
            planned = [here(replace(options.selection, elsewhere=theirs))]
            with contextlib.suppress(BrokenProcessPool):  # it died (out of memory): here, then
                share = future.result() if future is not None else None
        if share is None:
            if future is not None:  # it ran, then died
                _forget(stored, fleet, theirs)
            planned.append(here(other.selection))
        else:
            planned.append(_taken(share, decoder, stored))
        side = merged(fleet, planned)
        if stored is not None:
            _forget_spelling(stored, side)
    except BaseException:
        # Until the plans it stored are checked, none of them is kept; it has ended (the
        # block above waits for it), so it stores nothing more.
        if future is not None:
            _forget(stored, fleet, theirs)
        raise
    return side


def _forget(stored: SidePlans | None, fleet: Fleet, keys: frozenset[DeploymentKey]) -> None:
    """Drop whatever plans the spawned process may have stored when its answer is lost: no
    one checked them against the secrets this process decrypted."""
    if stored is None:
        return
    for cluster in fleet.clusters:
        for deployment in cluster.deployments:
            if (cluster.path, deployment.name) in keys:
                stored.forget(cluster, deployment)


def in_second_share(cluster: str) -> bool:
    """Whether the spawned process plans the cluster's deployments (half of the clusters,
    by a hash of the path, independent of `--shard`'s)."""
    return Shard(2, 2).holds(cluster, salt=_SALT)


def _taken(share: _Share, decoder: SopsDecoder, stored: SidePlans | None) -> PlannedSide:
    """The share's side, with what its process counted added to this one's counts."""
    decoder.note_keyless(share.keyless)
    if stored is not None:
        stored.hits += share.plan_hits
        stored.store.written += share.plans_written
        stored.learned.update(share.plans_learned)
    return share.planned


def _forget_spelling(stored: SidePlans, side: PlannedSide) -> None:
    """Drop the stored plans that spell a secret only the other share decrypted: planned in
    one process, the plan cache would not have taken them (`side._store`)."""
    if not side.leaves:
        return
    # Deployments a SOPS file reached are never stored; reused ones the base side stored.
    candidates = [
        release
        for release in side.plan.releases
        if key_of(release.id) not in side.secret_keys | side.reused
    ]
    for key in sorted({key_of(rid) for rid in spelling(candidates, side.leaves)}):
        stored.forget(*side.seen[key])


def _fleet(root: Path, options: SideOptions) -> Fleet | None:
    """The side's hierarchy when it is the only source (the only kind split)."""
    if len(options.sources) != 1 or not isinstance(options.sources[0], Hierarchy):
        return None
    try:
        return HierarchySource(options.sources[0].layout).discover(root)
    except ReviewerError:
        return None  # planning reports it, in one process


def _to_plan(
    fleet: Fleet, options: SideOptions, stored: SidePlans | None, reuse: Reuse | None
) -> list[DeploymentKey]:
    """Selected deployments to plan: neither taken from the base side nor from the cache."""
    return [
        (cluster.path, deployment.name)
        for cluster in fleet.clusters
        for deployment in cluster.deployments
        if options.selection(cluster, deployment)
        and (reuse is None or not reuse.reusable(cluster, deployment))
        and (stored is None or not stored.holds(cluster, deployment))
    ]


def _plan_share(
    root: Path,
    options: SideOptions,
    limits: Limits,
    decoding: tuple[KeylessMode, Path | None, Programs],
    stored: SidePlans | None,
) -> _Share:
    """Runs in the spawned process: its share planned with its own sandbox and decoder."""
    keyless, binary, programs = decoding
    decoder = SopsDecoder(keyless=keyless, binary=binary, programs=programs)
    if stored is not None:
        # The copy was pickled while the parent planned: its counts may include the parent's,
        # and what it learned is sent back over the parent's own.
        stored.hits = 0
        stored.learned = {}
    renderer = TemplateRenderer(limits)
    try:
        planned = plan_twins(
            root, options=options, renderer=renderer, secrets=decoder, fast=True, stored=stored
        )
    finally:
        renderer.close()
    return _Share(
        planned,
        tuple(decoder.keyless_sources),
        stored.hits if stored is not None else 0,
        stored.store.written if stored is not None else 0,
        stored.learned if stored is not None else {},
    )


def merged(fleet: Fleet, parts: Sequence[PlannedSide]) -> PlannedSide:
    """The sides planned for disjoint shares of `fleet`'s clusters, as one side."""
    position = {
        (cluster.path, deployment.name): index
        for index, (cluster, deployment) in enumerate(
            (cluster, deployment)
            for cluster in fleet.clusters
            for deployment in cluster.deployments
        )
    }

    def order(key: DeploymentKey) -> int:
        return position.get(key, len(position))

    plan = _merged_plans([part.plan for part in parts], order)
    twin = plan
    if any(part.has_secrets for part in parts):
        twin = _merged_plans([part.twin for part in parts], order)
    seen = sorted(
        ((key, where) for part in parts for key, where in part.seen.items()),
        key=lambda item: order(item[0]),
    )
    return PlannedSide(
        plan=plan,
        twin=twin,
        replacements=_replacements(parts, plan, twin),
        leaves=frozenset().union(*(part.leaves for part in parts)),
        seen=dict(seen),
        reused=frozenset().union(*(part.reused for part in parts)),
        secret_keys=frozenset().union(*(part.secret_keys for part in parts), *_unsure(parts)),
        read_sops=any(part.read_sops for part in parts),
    )


def _replacements(parts: Sequence[PlannedSide], plan: Plan, twin: Plan) -> dict[str, str]:
    """{secret: redacted} as one process pairs them: in the fleet's order, so a secret shown
    two ways (two files holding it) takes the same form as planned in one process."""
    if twin is plan:
        return {real: shown for part in parts for real, shown in part.replacements.items()}
    return twin_replacements(plan, twin, frozenset().union(*(part.reused for part in parts)))


def _unsure(parts: Sequence[PlannedSide]) -> list[set[DeploymentKey]]:
    """Deployments the one-process side counts as secret once any share read a SOPS file:
    those that failed or planned no release (`twin_keys`) in shares that read none."""
    if not any(part.read_sops for part in parts):
        return []
    return [unsure_keys(part.plan, part.seen) - part.reused for part in parts if not part.read_sops]


def _merged_plans(plans: Sequence[Plan], order: Callable[[DeploymentKey], int]) -> Plan:
    releases = [release for plan in plans for release in plan.releases]
    errors = [error for plan in plans for error in plan.errors]
    return Plan(
        releases=tuple(sorted(releases, key=lambda release: order(key_of(release.id)))),
        errors=tuple(sorted(errors, key=lambda error: order((error.cluster, error.deployment)))),
        objects=tuple(objects for plan in plans for objects in plan.objects),
        replacements={real: shown for plan in plans for real, shown in plan.replacements.items()},
        inputs={rid: inputs for plan in plans for rid, inputs in plan.inputs.items()},
    )
