"""Compare two snapshots: which releases and objects change, and how.

Releases pair by identity; objects by (API group, kind, namespace, name), so an
apiVersion bump within one API group is a change. Two more pairings follow:

- move: within one cluster, an object that leaves one release and appears with
  the same identity in another (both owners are kept);
- rename: within one release, a removed and an added object of the same group,
  kind and namespace whose YAML, ignoring the name, is near-identical (a
  hash-suffixed ConfigMap); best pairs are taken first.

Each changed object gets a unified diff of its normalized YAML and a path-level
view (built in, or dyff's). Changes covered by noise rules are routine: left out
of both views but listed with the rule that covered them.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Literal

from reviewer import yamlio
from reviewer.errors import ReviewerError
from reviewer.noise import NoiseRules, prune_pair
from reviewer.semantic import (
    ChangeKind,
    Path,
    PathChange,
    dyff_available,
    dyff_between,
    semantic_diff,
)
from reviewer.snapshot import (
    WHOLE_DEPLOYMENT,
    ReleaseId,
    RenderedRelease,
    Resource,
    ResourceKey,
    Snapshot,
)

DifferChoice = Literal["builtin", "dyff", "auto"]
Differ = Literal["builtin", "dyff"]

NO_FILE = "/dev/null"
SECRET_ONLY_NOTE = "a secret value changed; its redacted form is the same, so no line shows it"
HiddenChanges = AbstractSet[tuple[ReleaseId, ResourceKey]]
"""Objects whose unredacted content differs between the sides while the redacted does not."""


class ReleaseStatus(str, Enum):
    """How a release differs between the two sides."""

    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"
    UNCHANGED = "unchanged"
    ERROR = "error"


class ResourceStatus(str, Enum):
    """How one object differs between the two sides (unchanged objects are only counted)."""

    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"
    MOVED = "moved"
    RENAMED = "renamed"


class Side(str, Enum):
    """Base is the target branch, head the merge result."""

    BASE = "base"
    HEAD = "head"


@dataclass(frozen=True)
class DiffOptions:
    """How to diff: context lines, which path-level differ, noise rules, rename threshold."""

    context: int = 3
    differ: DifferChoice = "auto"
    noise: NoiseRules = field(default_factory=NoiseRules)
    rename_threshold: float = 0.9

    def __post_init__(self) -> None:
        if self.context < 0:
            raise ValueError("context must be >= 0")
        if not 0.0 < self.rename_threshold <= 1.0:
            raise ValueError("rename_threshold must be in (0, 1]")


def resolve_differ(choice: DifferChoice) -> Differ:
    """`auto` is dyff when installed, else builtin; an explicit `dyff` must be installed."""
    if choice == "builtin":
        return "builtin"
    if dyff_available():
        return "dyff"
    if choice == "auto":
        return "builtin"
    raise ReviewerError(
        "differ 'dyff' was chosen but no `dyff` executable is on PATH",
        hint="install dyff (https://github.com/homeport/dyff) or use --differ builtin",
    )


@dataclass(frozen=True)
class RoutineChange:
    """A change left out of the main view, with the rule that covered it."""

    rule: str
    change: PathChange

    def __str__(self) -> str:
        return f"{self.change.lines()[0]}  [{self.rule}]"


@dataclass(frozen=True)
class ResourceDiff:
    """One object that differs; `base_*`/`head_*` are None on the side where it is absent."""

    status: ResourceStatus
    base_release: ReleaseId | None
    head_release: ReleaseId | None
    base_key: ResourceKey | None
    head_key: ResourceKey | None
    base_api_version: str = ""
    head_api_version: str = ""
    unified: str = ""
    """Unified diff of the normalized YAML, without routine changes; empty when none remain."""
    changes: tuple[PathChange, ...] = ()
    """Path-level changes that are not routine (empty for added/removed objects)."""
    routine: tuple[RoutineChange, ...] = ()
    routine_only: bool = False
    """True when every change is routine: reports may collapse this object."""
    dyff: str | None = None
    """dyff's report of the non-routine changes, when dyff was the differ."""
    similarity: float | None = None
    """For renames: how alike the two objects are, ignoring the name (0..1)."""
    secret_only: bool = False
    """The object's unredacted content changed but its redacted form did not."""

    @property
    def key(self) -> ResourceKey:
        """The object's identity on the head side, or on the base side when removed."""
        key = self.head_key or self.base_key
        assert key is not None, "a resource diff has at least one side"
        return key

    @property
    def release(self) -> ReleaseId:
        """The owning release on the head side, or on the base side when removed."""
        owner = self.head_release or self.base_release
        assert owner is not None, "a resource diff has at least one side"
        return owner

    @property
    def body(self) -> str:
        """The unified diff without its two file-label lines (identical changes compare equal)."""
        return self.unified.partition("\n")[2].partition("\n")[2]

    def semantic_lines(self) -> list[str]:
        """The path-level view as text lines: dyff's report when it ran, else the built-in one."""
        if self.secret_only:
            return [SECRET_ONLY_NOTE]
        if self.dyff is not None:
            return self.dyff.splitlines()
        return [line for change in self.changes for line in change.lines()]


@dataclass(frozen=True)
class ReleaseDiff:
    """One release on both sides and its objects that differ."""

    id: ReleaseId
    status: ReleaseStatus
    base: RenderedRelease | None
    head: RenderedRelease | None
    resources: tuple[ResourceDiff, ...] = ()
    """Objects that differ, by key; a move is listed under both of its owners."""
    unchanged: int = 0

    @property
    def base_error(self) -> str | None:
        """Why the release failed on the target branch (a warning)."""
        return self.base.error if self.base is not None else None

    @property
    def head_error(self) -> str | None:
        """Why the release failed on the merge result (fails the run)."""
        return self.head.error if self.head is not None else None

    @property
    def routine_only(self) -> bool:
        """A changed release whose object changes are all routine."""
        return (
            self.status is ReleaseStatus.CHANGED
            and bool(self.resources)
            and all(diff.routine_only for diff in self.resources)
            and _release_meta(self.base) == _release_meta(self.head)
        )

    def routine_counts(self) -> dict[str, int]:
        """How many routine changes each rule covered in this release."""
        return dict(Counter(item.rule for diff in self.resources for item in diff.routine))


@dataclass(frozen=True)
class Failure:
    """A render failure on one side; `release` is None for failures outside any release."""

    side: Side
    release: ReleaseId | None
    message: str
    reproduce: str | None = None
    helm_command: str | None = None


@dataclass(frozen=True)
class ChangeGroup:
    """One distinct change and every (release, object) it applies to."""

    status: ResourceStatus
    group: str
    kind: str
    name: str
    body: str
    changes: tuple[PathChange, ...]
    members: tuple[tuple[ReleaseId, ResourceKey], ...]
    example: ResourceDiff
    """The first member's diff, for its file labels and dyff report."""


@dataclass(frozen=True)
class ClusterSummary:
    """Release counts of one cluster; `routine_only` is the part of `changed` that is routine."""

    cluster: str
    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    failed: int = 0
    routine_only: int = 0


@dataclass(frozen=True)
class SnapshotDiff:
    """Everything that differs between two snapshots."""

    releases: tuple[ReleaseDiff, ...]
    groups: tuple[ChangeGroup, ...]
    failures: tuple[Failure, ...]
    differ: Differ

    @property
    def has_changes(self) -> bool:
        """Whether any release is added, removed or changed (routine-only changes count)."""
        changing = (ReleaseStatus.ADDED, ReleaseStatus.REMOVED, ReleaseStatus.CHANGED)
        return any(release.status in changing for release in self.releases)

    @property
    def head_errors(self) -> tuple[Failure, ...]:
        """Failures of the merge result: they fail the run."""
        return tuple(failure for failure in self.failures if failure.side is Side.HEAD)

    @property
    def base_errors(self) -> tuple[Failure, ...]:
        """Failures of the target branch: warnings only (the PR may be the fix)."""
        return tuple(failure for failure in self.failures if failure.side is Side.BASE)

    def summary(self) -> tuple[ClusterSummary, ...]:
        """Per-cluster release counts, by cluster path."""
        clusters = sorted({release.id.cluster for release in self.releases})
        return tuple(_cluster_summary(name, self.releases) for name in clusters)

    def routine_counts(self) -> dict[str, int]:
        """How many routine changes each rule covered, over all releases (moves once)."""
        counts: Counter[str] = Counter()
        for _, diff in self.resource_diffs():
            counts.update(item.rule for item in diff.routine)
        return dict(counts)

    def resource_diffs(self) -> Iterator[tuple[ReleaseId, ResourceDiff]]:
        """Every object diff once, with its owning release (a move under its head owner)."""
        for release in self.releases:
            for diff in release.resources:
                if diff.release == release.id:
                    yield release.id, diff


def _cluster_summary(cluster: str, releases: Iterable[ReleaseDiff]) -> ClusterSummary:
    mine = [release for release in releases if release.id.cluster == cluster]
    counts = Counter(release.status for release in mine)
    return ClusterSummary(
        cluster=cluster,
        added=counts[ReleaseStatus.ADDED],
        changed=counts[ReleaseStatus.CHANGED],
        removed=counts[ReleaseStatus.REMOVED],
        unchanged=counts[ReleaseStatus.UNCHANGED],
        failed=counts[ReleaseStatus.ERROR],
        routine_only=sum(1 for release in mine if release.routine_only),
    )


# --- pairing -----------------------------------------------------------------------------------


@dataclass
class _Pairing:
    """Objects of one release: matched by key, and what is left on each side."""

    matched: list[tuple[Resource, Resource]] = field(default_factory=list)
    removed: list[Resource] = field(default_factory=list)
    added: list[Resource] = field(default_factory=list)


@dataclass(frozen=True)
class _Pair:
    """Two objects to compare, with their owners (different owners make a move)."""

    status: ResourceStatus
    base_id: ReleaseId
    base: Resource
    head_id: ReleaseId
    head: Resource
    similarity: float | None = None


def _pair_release(base: RenderedRelease | None, head: RenderedRelease | None) -> _Pairing:
    if _failed(base) or _failed(head):
        # A failed side has no objects to compare; nothing of it may count as removed.
        return _Pairing()
    old = _by_key(base.resources if base else [])
    new = _by_key(head.resources if head else [])
    return _Pairing(
        matched=[(old[key], new[key]) for key in sorted(old.keys() & new.keys())],
        removed=[old[key] for key in sorted(old.keys() - new.keys())],
        added=[new[key] for key in sorted(new.keys() - old.keys())],
    )


def _failed(release: RenderedRelease | None) -> bool:
    return release is not None and release.error is not None


def _by_key(resources: Iterable[Resource]) -> dict[tuple[ResourceKey, int], Resource]:
    # A chart may render one identity twice; pair the copies in order rather than drop one.
    seen: Counter[ResourceKey] = Counter()
    keyed: dict[tuple[ResourceKey, int], Resource] = {}
    for resource in resources:
        keyed[(resource.key, seen[resource.key])] = resource
        seen[resource.key] += 1
    return keyed


def _find_moves(pairings: dict[ReleaseId, _Pairing]) -> list[_Pair]:
    """Pair objects that leave one release and arrive in another of the same cluster."""
    leaving: dict[tuple[str, ResourceKey], list[tuple[ReleaseId, Resource]]] = {}
    for release_id, pairing in sorted(pairings.items()):
        for resource in pairing.removed:
            where = (release_id.cluster, resource.key)
            leaving.setdefault(where, []).append((release_id, resource))
    moves: list[_Pair] = []
    for release_id, pairing in sorted(pairings.items()):
        for resource in pairing.added:
            sources = leaving.get((release_id.cluster, resource.key))
            if sources:
                source_id, source = sources.pop(0)
                moves.append(_Pair(ResourceStatus.MOVED, source_id, source, release_id, resource))
    taken = {id(pair.base) for pair in moves} | {id(pair.head) for pair in moves}
    for pairing in pairings.values():
        pairing.removed = [r for r in pairing.removed if id(r) not in taken]
        pairing.added = [r for r in pairing.added if id(r) not in taken]
    return moves


def _find_renames(release_id: ReleaseId, pairing: _Pairing, threshold: float) -> list[_Pair]:
    """Pair removed and added objects of one release that differ (almost) only in name."""
    old_texts = [_nameless_text(resource) for resource in pairing.removed]
    new_texts = [_nameless_text(resource) for resource in pairing.added]
    scored: list[tuple[float, int, int]] = []
    for i, old in enumerate(pairing.removed):
        for j, new in enumerate(pairing.added):
            if _rename_compatible(old.key, new.key):
                score = similarity(old_texts[i], new_texts[j], floor=threshold)
                if score >= threshold:
                    scored.append((score, i, j))
    renames: list[_Pair] = []
    used_old: set[int] = set()
    used_new: set[int] = set()
    for score, i, j in sorted(scored, key=lambda item: (-item[0], item[1], item[2])):
        if i not in used_old and j not in used_new:
            used_old.add(i)
            used_new.add(j)
            old, new = pairing.removed[i], pairing.added[j]
            renames.append(_Pair(ResourceStatus.RENAMED, release_id, old, release_id, new, score))
    pairing.removed = [r for i, r in enumerate(pairing.removed) if i not in used_old]
    pairing.added = [r for j, r in enumerate(pairing.added) if j not in used_new]
    return renames


def _rename_compatible(old: ResourceKey, new: ResourceKey) -> bool:
    return (old.group, old.kind, old.namespace) == (new.group, new.kind, new.namespace)


def _nameless_text(resource: Resource) -> str:
    metadata = {k: v for k, v in (resource.body.get("metadata") or {}).items() if k != "name"}
    return yamlio.dump({**resource.body, "metadata": metadata})


def similarity(a: str, b: str, *, floor: float = 0.0) -> float:
    """How alike two texts are, 0..1: difflib's ratio, matched line by line, then by character.

    Returns 0.0 early when the texts' lengths alone show the ratio is below `floor`.
    """
    total = len(a) + len(b)
    if total == 0:
        return 1.0
    if 2 * min(len(a), len(b)) / total < floor:
        return 0.0
    old, new = a.splitlines(keepends=True), b.splitlines(keepends=True)
    # A character-level matcher over whole manifests is quadratic (seconds for 20 kB); lines
    # first, then characters only inside replaced runs, gives nearly the same ratio quickly.
    matched = 0.0
    for tag, i1, i2, j1, j2 in _matcher(old, new).get_opcodes():
        if tag == "equal":
            matched += sum(len(line) for line in old[i1:i2])
        elif tag == "replace":
            matched += _matched_chars("".join(old[i1:i2]), "".join(new[j1:j2]))
    return 2 * matched / total


_CHAR_LIMIT = 4000


def _matched_chars(a: str, b: str) -> float:
    if len(a) + len(b) > _CHAR_LIMIT:
        return 0.0  # too long to compare by character: count as different (conservative)
    return _matcher(a, b).ratio() * (len(a) + len(b)) / 2


def _matcher(a: Sequence[str], b: Sequence[str]) -> difflib.SequenceMatcher[str]:
    # autojunk would treat frequent lines or characters as noise in longer inputs
    # and understate how alike two manifests are.
    return difflib.SequenceMatcher(None, a, b, autojunk=False)


# --- building diffs ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Settings:
    options: DiffOptions
    differ: Differ
    hidden: HiddenChanges = frozenset()


def file_label(side: Side, release_id: ReleaseId, key: ResourceKey) -> str:
    """A unified-diff file label: `base/<cluster>/<deployment>/<release>/<Kind>/<name>`."""
    return f"{side.value}/{release_id}/{key.kind}/{key.name}"


def unified_diff(before: str, after: str, *, labels: tuple[str, str], context: int) -> str:
    """A unified diff of two texts (empty when they are equal)."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=labels[0],
        tofile=labels[1],
        n=context,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _diff_pair(pair: _Pair, settings: _Settings) -> ResourceDiff | None:
    """The diff of two paired objects; None when a same-key pair is identical."""
    base, head = pair.base, pair.head
    shell = ResourceDiff(
        status=pair.status,
        base_release=pair.base_id,
        head_release=pair.head_id,
        base_key=base.key,
        head_key=head.key,
        base_api_version=base.api_version,
        head_api_version=head.api_version,
        similarity=pair.similarity,
    )
    if pair.status is ResourceStatus.CHANGED and base.body == head.body:
        hidden = (pair.head_id, head.key) in settings.hidden
        return replace(shell, secret_only=True) if hidden else None
    kind_rule = settings.options.noise.kind_rule(head.key)
    changes, routine = _classify(
        semantic_diff(base.body, head.body), settings.options.noise, kind_rule
    )
    unified, dyff = _main_views(pair, settings, changes)
    only_routine = bool(routine) and not changes and pair.status is ResourceStatus.CHANGED
    return replace(
        shell,
        unified=unified,
        changes=changes,
        routine=routine,
        routine_only=kind_rule is not None or only_routine,
        dyff=dyff,
    )


def _classify(
    found: list[PathChange], rules: NoiseRules, kind_rule: str | None
) -> tuple[tuple[PathChange, ...], tuple[RoutineChange, ...]]:
    """Split changes into shown ones and routine ones (each with the rule that covered it)."""
    changes: list[PathChange] = []
    routine: list[RoutineChange] = []
    for change in found:
        rule = kind_rule or rules.path_rule(change.path)
        if rule is None:
            changes.append(change)
        else:
            routine.append(RoutineChange(rule, change))
    return tuple(changes), tuple(routine)


def _main_views(
    pair: _Pair, settings: _Settings, changes: tuple[PathChange, ...]
) -> tuple[str, str | None]:
    """The unified diff and dyff report of what is left once routine paths are pruned."""
    if not changes:
        return "", None
    before, after = pair.base.text(), pair.head.text()
    rules = settings.options.noise
    if rules:
        pruned = prune_pair(pair.base.body, pair.head.body, lambda path: _covered(rules, path))
        before, after = yamlio.dump(pruned[0]), yamlio.dump(pruned[1])
    labels = (
        file_label(Side.BASE, pair.base_id, pair.base.key),
        file_label(Side.HEAD, pair.head_id, pair.head.key),
    )
    unified = unified_diff(before, after, labels=labels, context=settings.options.context)
    dyff = dyff_between(before, after) if settings.differ == "dyff" else None
    return unified, dyff


def _covered(rules: NoiseRules, path: Path) -> bool:
    return rules.path_rule(path) is not None


def _diff_one_side(
    status: ResourceStatus, release_id: ReleaseId, resource: Resource, settings: _Settings
) -> ResourceDiff:
    """The diff of an object that exists on one side only."""
    added = status is ResourceStatus.ADDED
    kind_rule = settings.options.noise.kind_rule(resource.key)
    unified = ""
    routine: tuple[RoutineChange, ...] = ()
    if kind_rule is None:
        label = file_label(Side.HEAD if added else Side.BASE, release_id, resource.key)
        labels = (NO_FILE, label) if added else (label, NO_FILE)
        texts = ("", resource.text()) if added else (resource.text(), "")
        unified = unified_diff(*texts, labels=labels, context=settings.options.context)
    else:
        kind = ChangeKind.ADDED if added else ChangeKind.REMOVED
        routine = (RoutineChange(kind_rule, PathChange((), kind)),)
    return ResourceDiff(
        status=status,
        base_release=None if added else release_id,
        head_release=release_id if added else None,
        base_key=None if added else resource.key,
        head_key=resource.key if added else None,
        base_api_version="" if added else resource.api_version,
        head_api_version=resource.api_version if added else "",
        unified=unified,
        routine=routine,
        routine_only=kind_rule is not None,
    )


# --- assembling the result ---------------------------------------------------------------------


def diff_snapshots(
    base: Snapshot, head: Snapshot, *, options: DiffOptions, hidden: HiddenChanges = frozenset()
) -> SnapshotDiff:
    """Pair releases and objects of two snapshots and describe every difference.

    `hidden` names objects whose only change is invisible after redaction: they
    are reported as changed with a note instead of being dropped as identical.
    """
    settings = _Settings(options, resolve_differ(options.differ), hidden)
    old, new = base.by_id(), head.by_id()
    old.update(_stand_ins(base, new))
    new.update(_stand_ins(head, old))
    ids = sorted(old.keys() | new.keys())
    pairings = {rid: _pair_release(old.get(rid), new.get(rid)) for rid in ids}
    pairs = _find_moves(pairings)
    for rid, pairing in pairings.items():
        pairs.extend(_find_renames(rid, pairing, options.rename_threshold))
    per_release, unchanged = _collect(pairings, pairs, settings)
    releases = tuple(
        _release_diff(rid, old.get(rid), new.get(rid), per_release.get(rid, []), unchanged[rid])
        for rid in ids
    )
    return SnapshotDiff(
        releases=releases,
        groups=group_changes(releases),
        failures=_failures(base, Side.BASE) + _failures(head, Side.HEAD),
        differ=settings.differ,
    )


def _stand_ins(
    side: Snapshot, other: dict[ReleaseId, RenderedRelease]
) -> dict[ReleaseId, RenderedRelease]:
    """Failed stand-ins for releases hidden by a whole-deployment failure on `side`.

    Without them, the releases of a deployment whose deployment.yaml broke would
    look removed (or added) instead of unknown.
    """
    broken = {
        (release.id.cluster, release.id.deployment): release
        for release in side.releases
        if release.id.release == WHOLE_DEPLOYMENT and release.error is not None
    }
    stand_ins: dict[ReleaseId, RenderedRelease] = {}
    for rid, release in other.items():
        failure = broken.get((rid.cluster, rid.deployment))
        if failure is not None and rid.release != WHOLE_DEPLOYMENT:
            stand_ins[rid] = RenderedRelease(
                id=rid,
                namespace=release.namespace,
                error=f"not rendered: deployment {rid.deployment} failed as a whole",
                reproduce=failure.reproduce,
            )
    return stand_ins


def _collect(
    pairings: dict[ReleaseId, _Pairing], pairs: list[_Pair], settings: _Settings
) -> tuple[dict[ReleaseId, list[ResourceDiff]], Counter[ReleaseId]]:
    """Object diffs per release (a move under both owners) and counts of unchanged objects."""
    per_release: dict[ReleaseId, list[ResourceDiff]] = {}
    unchanged: Counter[ReleaseId] = Counter()
    for rid, pairing in pairings.items():
        mine = per_release.setdefault(rid, [])
        for old, new in pairing.matched:
            diff = _diff_pair(_Pair(ResourceStatus.CHANGED, rid, old, rid, new), settings)
            if diff is None:
                unchanged[rid] += 1
            else:
                mine.append(diff)
        for status, resources in (
            (ResourceStatus.REMOVED, pairing.removed),
            (ResourceStatus.ADDED, pairing.added),
        ):
            mine.extend(_diff_one_side(status, rid, r, settings) for r in resources)
    for pair in pairs:
        found = _diff_pair(pair, settings)
        assert found is not None, "moves and renames always produce a diff"
        for owner in dict.fromkeys((pair.base_id, pair.head_id)):
            per_release.setdefault(owner, []).append(found)
    return per_release, unchanged


def _release_diff(
    rid: ReleaseId,
    base: RenderedRelease | None,
    head: RenderedRelease | None,
    resources: list[ResourceDiff],
    unchanged: int,
) -> ReleaseDiff:
    ordered = tuple(sorted(resources, key=lambda diff: (diff.key, diff.status.value)))
    return ReleaseDiff(
        id=rid,
        status=_release_status(base, head, ordered),
        base=base,
        head=head,
        resources=ordered,
        unchanged=unchanged,
    )


def _release_status(
    base: RenderedRelease | None, head: RenderedRelease | None, resources: tuple[ResourceDiff, ...]
) -> ReleaseStatus:
    if _failed(base) or _failed(head):
        return ReleaseStatus.ERROR
    if base is None:
        return ReleaseStatus.ADDED
    if head is None:
        return ReleaseStatus.REMOVED
    if resources or _release_meta(base) != _release_meta(head):
        return ReleaseStatus.CHANGED
    return ReleaseStatus.UNCHANGED


def _release_meta(release: RenderedRelease | None) -> tuple[str, str, str] | None:
    if release is None:
        return None
    return (release.namespace, release.chart, release.version)


def _failures(snapshot: Snapshot, side: Side) -> tuple[Failure, ...]:
    found = [
        Failure(side, release.id, release.error, release.reproduce, release.helm_command)
        for release in snapshot.releases
        if release.error is not None
    ]
    found.extend(Failure(side, None, message) for message in snapshot.errors)
    return tuple(found)


def _group_identity(diff: ResourceDiff) -> tuple[str, ...]:
    key = diff.key
    if diff.status is ResourceStatus.CHANGED and diff.changes and diff.dyff is None:
        return (diff.status.value, key.group, key.kind, *(str(c) for c in diff.changes))
    return (diff.status.value, key.group, key.kind, key.name, diff.body)


def group_changes(releases: Iterable[ReleaseDiff]) -> tuple[ChangeGroup, ...]:
    """Identical changes listed once with every (release, object) they apply to.

    Changed objects group by kind and their path-level changes, so one value
    edit that touches differently named objects in many releases shows once;
    added and removed objects group by kind, name and diff body. Routine-only
    diffs are left out: they are counted per release instead.
    """
    members: dict[tuple[str, ...], list[tuple[ReleaseId, ResourceKey]]] = {}
    examples: dict[tuple[str, ...], ResourceDiff] = {}
    for release in releases:
        for diff in release.resources:
            if diff.routine_only or diff.release != release.id:
                continue
            key = diff.key
            ident = _group_identity(diff)
            members.setdefault(ident, []).append((release.id, key))
            examples.setdefault(ident, diff)
    return tuple(
        ChangeGroup(
            status=example.status,
            group=example.key.group,
            kind=example.key.kind,
            name=example.key.name,
            body=example.body,
            changes=example.changes,
            members=tuple(members[ident]),
            example=example,
        )
        for ident, example in examples.items()
    )
