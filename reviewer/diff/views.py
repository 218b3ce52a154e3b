"""One object's diff: the unified diff of its normalized YAML and its path-level view.

Routine changes (covered by noise rules) are pruned from both views and listed
with their rule; the path-level view is built in, or dyff's report.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, replace

from reviewer import yamlio
from reviewer.diff.options import Differ, DiffOptions, HiddenChanges
from reviewer.diff.pairing import Pair
from reviewer.diff.resource import RegeneratedChange, ResourceDiff, ResourceStatus, RoutineChange
from reviewer.diff.result import DiffSide
from reviewer.model import ReleaseId, Resource, ResourceKey
from reviewer.noise import prune_pair
from reviewer.regenerated import RegeneratedField, Regeneration
from reviewer.semantic import (
    ChangeKind,
    Path,
    PathChange,
    default_list_keys,
    dyff_between,
    format_path,
    semantic_diff,
)
from reviewer.sources import bosh

NO_FILE = "/dev/null"


@dataclass(frozen=True)
class Settings:
    """The options of one comparison, with the differ resolved and the hidden changes."""

    options: DiffOptions
    differ: Differ
    hidden: HiddenChanges = frozenset()
    regeneration: Regeneration = field(default_factory=Regeneration)
    # Objects of a fleet share their paths: each path's noise rule is looked up once. The
    # segments' types are part of the key: 1, 1.0 and True are equal keys but match apart.
    _rules: dict[tuple[Path, tuple[type, ...]], str | None] = field(
        default_factory=dict, compare=False, repr=False
    )

    def path_rule(self, path: Path) -> str | None:
        """The noise rule that covers `path` (`NoiseRules.path_rule`), remembered."""
        key = (path, tuple(map(type, path)))
        try:
            return self._rules[key]
        except KeyError:
            found = self._rules[key] = self.options.noise.path_rule(path)
            return found


def file_label(side: DiffSide, release_id: ReleaseId, key: ResourceKey) -> str:
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


def diff_pair(pair: Pair, settings: Settings) -> ResourceDiff | None:
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
    same = pair.status is ResourceStatus.CHANGED and pair.base_id == pair.head_id
    regenerated = settings.regeneration.at(pair.head_id, head.key) if same else ()
    if pair.status is ResourceStatus.CHANGED and base.body == head.body:
        if (pair.head_id, head.key) in settings.regeneration.only:
            return replace(shell, regenerated=_listed(regenerated))
        hidden = (pair.head_id, head.key) in settings.hidden
        return replace(shell, secret_only=True) if hidden else None
    kind_rule = settings.options.noise.kind_rule(head.key)
    keys = bosh.list_keys if head.key.kind == bosh.BOSH_KIND else default_list_keys
    found, renewed = _split_regenerated(semantic_diff(base.body, head.body, keys=keys), regenerated)
    changes, routine = _classify(found, settings, kind_rule)
    unified, dyff = _main_views(
        pair, settings, changes, renewed, pruning=bool(routine) or bool(renewed)
    )
    only_routine = bool(routine) and not changes and pair.status is ResourceStatus.CHANGED
    return replace(
        shell,
        unified=unified,
        changes=changes,
        routine=routine,
        routine_only=kind_rule is not None or only_routine,
        dyff=dyff,
        regenerated=_listed(regenerated),
    )


def _listed(fields: tuple[RegeneratedField, ...]) -> tuple[RegeneratedChange, ...]:
    return tuple(RegeneratedChange(format_path(item.path), item.comparable) for item in fields)


def _split_regenerated(
    found: list[PathChange], regenerated: tuple[RegeneratedField, ...]
) -> tuple[list[PathChange], frozenset[Path]]:
    """Leave out value changes of fields regenerated on every render (and comparable).

    A regenerated field that cannot be compared stays a change; its note says why.
    """
    renewed = frozenset(item.path for item in regenerated if item.comparable)
    kept = [
        change
        for change in found
        if not (change.kind is ChangeKind.MODIFIED and change.path in renewed)
    ]
    return kept, renewed


def _classify(
    found: list[PathChange], settings: Settings, kind_rule: str | None
) -> tuple[tuple[PathChange, ...], tuple[RoutineChange, ...]]:
    """Split changes into shown ones and routine ones (each with the rule that covered it)."""
    changes: list[PathChange] = []
    routine: list[RoutineChange] = []
    for change in found:
        rule = kind_rule or settings.path_rule(change.path)
        if rule is None:
            changes.append(change)
        else:
            routine.append(RoutineChange(rule, change))
    return tuple(changes), tuple(routine)


def _main_views(
    pair: Pair,
    settings: Settings,
    changes: tuple[PathChange, ...],
    renewed: frozenset[Path],
    *,
    pruning: bool,
) -> tuple[str, str | None]:
    """The unified diff and dyff report of what is left once routine and regenerated paths
    are pruned.

    Nothing is pruned when no routine or regenerated change was found: covered fields that
    did not change stay as context.
    """
    if not changes:
        return "", None
    if pruning:
        pruned = prune_pair(
            pair.base.body,
            pair.head.body,
            lambda path: path in renewed or settings.path_rule(path) is not None,
        )
        before, after = yamlio.dump(pruned[0]), yamlio.dump(pruned[1])
    else:
        before, after = pair.base.text(), pair.head.text()
    labels = (
        file_label(DiffSide.BASE, pair.base_id, pair.base.key),
        file_label(DiffSide.HEAD, pair.head_id, pair.head.key),
    )
    unified = unified_diff(before, after, labels=labels, context=settings.options.context)
    dyff = dyff_between(before, after) if settings.differ == "dyff" else None
    return unified, dyff


def diff_one_side(
    status: ResourceStatus, release_id: ReleaseId, resource: Resource, settings: Settings
) -> ResourceDiff:
    """The diff of an object that exists on one side only."""
    added = status is ResourceStatus.ADDED
    kind_rule = settings.options.noise.kind_rule(resource.key)
    unified = ""
    routine: tuple[RoutineChange, ...] = ()
    if kind_rule is None:
        label = file_label(DiffSide.HEAD if added else DiffSide.BASE, release_id, resource.key)
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
