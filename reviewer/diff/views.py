"""One object's diff: the unified diff of its normalized YAML and its path-level view.

Routine changes (covered by noise rules) are pruned from both views and listed
with their rule; the path-level view is built in, or dyff's report.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, replace

from reviewer import yamlio
from reviewer.diff.options import Differ, DiffOptions, HiddenChanges
from reviewer.diff.pairing import Pair
from reviewer.diff.result import DiffSide, ResourceDiff, ResourceStatus, RoutineChange
from reviewer.model import ReleaseId, Resource, ResourceKey
from reviewer.noise import NoiseRules, prune_pair
from reviewer.semantic import ChangeKind, Path, PathChange, dyff_between, semantic_diff

NO_FILE = "/dev/null"


@dataclass(frozen=True)
class Settings:
    """The options of one comparison, with the differ resolved and the hidden changes."""

    options: DiffOptions
    differ: Differ
    hidden: HiddenChanges = frozenset()


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
    if pair.status is ResourceStatus.CHANGED and base.body == head.body:
        hidden = (pair.head_id, head.key) in settings.hidden
        return replace(shell, secret_only=True) if hidden else None
    kind_rule = settings.options.noise.kind_rule(head.key)
    changes, routine = _classify(
        semantic_diff(base.body, head.body), settings.options.noise, kind_rule
    )
    unified, dyff = _main_views(pair, settings, changes, pruning=bool(routine))
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
    pair: Pair, settings: Settings, changes: tuple[PathChange, ...], *, pruning: bool
) -> tuple[str, str | None]:
    """The unified diff and dyff report of what is left once routine paths are pruned.

    Nothing is pruned when no routine change was found: covered fields that did not
    change stay as context.
    """
    if not changes:
        return "", None
    before, after = pair.base.text(), pair.head.text()
    rules = settings.options.noise
    if pruning:
        pruned = prune_pair(pair.base.body, pair.head.body, lambda path: _covered(rules, path))
        before, after = yamlio.dump(pruned[0]), yamlio.dump(pruned[1])
    labels = (
        file_label(DiffSide.BASE, pair.base_id, pair.base.key),
        file_label(DiffSide.HEAD, pair.head_id, pair.head.key),
    )
    unified = unified_diff(before, after, labels=labels, context=settings.options.context)
    dyff = dyff_between(before, after) if settings.differ == "dyff" else None
    return unified, dyff


def _covered(rules: NoiseRules, path: Path) -> bool:
    return rules.path_rule(path) is not None


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
