"""Explain: why releases change, and what else an edit touches.

- values diff: the merged values each changed release received on both sides,
  path by path (redacted: built from the redacted twin plans);
- provenance: for every value path, the file and level that set it, and the
  files it overrode;
- blast radius: for every file that differs between the sides, the releases
  built from it;
- no-effect warnings: changed values that reached no rendered object, because
  a higher level overrides them or because the chart ignores the key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reviewer.changes import changes_between
from reviewer.chartkeys import ChartText, unread
from reviewer.diff.result import ReleaseStatus, SnapshotDiff
from reviewer.model import ReleaseId
from reviewer.plan import ReleasePlan
from reviewer.proc import ISOLATED_GIT
from reviewer.semantic import ChangeKind, PathChange, format_path, semantic_diff
from reviewer.values import ATLAS, Layer

CHART_DEFAULT = "chart default"
Redact = Callable[[Any], Any]


@dataclass(frozen=True)
class Origin:
    """Where a value came from: a file (or inline entry) and its hierarchy level."""

    source: str
    level: str

    def __str__(self) -> str:
        return f"{self.source} ({self.level})"


_CHART = Origin("chart values.yaml", CHART_DEFAULT)
_ATLAS = Origin("atlas context", "reviewer")


@dataclass(frozen=True)
class Provenance:
    """The origin that won for one path, and the ones it overrode (highest first)."""

    winner: Origin
    overridden: tuple[Origin, ...] = ()


@dataclass(frozen=True)
class ValueChange:
    """One changed value path of a release, with where it came from on each side."""

    path: str
    text: str  # e.g. `image.tag: "1.4.2" → "1.5.0"`
    base: Origin | None
    head: Origin | None

    @classmethod
    def of(cls, change: PathChange, base: Origin | None, head: Origin | None) -> ValueChange:
        """From a path-level change and the winning origins on each side."""
        return cls(format_path(change.path), change.lines()[0], base, head)

    def line(self) -> str:
        """`path: a → b  ← origin` (or `← base origin → head origin` when it moved)."""
        text = self.text
        if self.base == self.head or self.base is None or self.head is None:
            origin = self.head or self.base
            return f"{text}  ← {origin}" if origin else text
        return f"{text}  ← {self.base} → {self.head}"


@dataclass(frozen=True)
class FileImpact:
    """A file that differs between the sides and the releases built from it."""

    file: str
    releases: tuple[ReleaseId, ...]
    changed: int

    @property
    def clusters(self) -> int:
        """How many clusters those releases run in."""
        return len({release.cluster for release in self.releases})

    def line(self) -> str:
        """`file → N releases in M clusters (K changed)`."""
        if not self.releases:
            return f"{self.file} → no release"
        return (
            f"{self.file} → {len(self.releases)} release(s) in {self.clusters} cluster(s), "
            f"{self.changed} changed"
        )


@dataclass(frozen=True)
class NoEffect:
    """A changed value in a values file that changed no rendered object."""

    file: str
    path: str
    reason: str

    def line(self) -> str:
        """The warning text."""
        return f"{self.file}: {self.path} had no effect: {self.reason}"


@dataclass(frozen=True)
class Explanation:
    """Everything the reports show about why things change."""

    values: Mapping[ReleaseId, tuple[ValueChange, ...]] = field(default_factory=dict)
    blast_radius: tuple[FileImpact, ...] = ()
    no_effect: tuple[NoEffect, ...] = ()


# --- provenance --------------------------------------------------------------------------------


def _key_path(path: tuple[Any, ...]) -> tuple[str, ...]:
    """The leading map keys of a path: lists are replaced whole by a merge."""
    keys: list[str] = []
    for segment in path:
        if not isinstance(segment, str):
            break
        keys.append(segment)
    return tuple(keys)


def _defines(values: Mapping[str, Any], keys: tuple[str, ...]) -> bool:
    """Whether a layer sets `keys` (or replaces one of its parents with a non-map)."""
    node: Any = values
    for depth, key in enumerate(keys):
        if not isinstance(node, Mapping) or key not in node:
            return False
        node = node[key]
        if depth < len(keys) - 1 and not isinstance(node, Mapping):
            return True
    return True


def provenance(layers: Iterable[Layer], path: tuple[Any, ...]) -> Provenance:
    """Which layer set `path` last (it wins) and which earlier layers it overrode."""
    keys = _key_path(path)
    if keys[:1] == (ATLAS,):
        return Provenance(_ATLAS)
    setters = [
        Origin(layer.source, layer.level) for layer in layers if _defines(layer.values, keys)
    ]
    if not setters:
        return Provenance(_CHART)
    setters.reverse()
    return Provenance(setters[0], tuple(setters[1:]))


def leaf_provenance(
    plan: ReleasePlan, chart_defaults: Mapping[str, Any] | None = None
) -> list[tuple[str, Any, Provenance]]:
    """Every leaf of a release's values with its provenance, in path order.

    With the chart's own values.yaml, its defaults are the lowest level: leaves nothing else
    sets are listed as chart defaults, and a value overriding one names it.
    """
    defaults = dict(chart_defaults or {})
    leaves = semantic_diff({}, _merged(defaults, plan.values))
    result = []
    for change in leaves:
        origin = provenance(plan.layers, change.path)
        if origin.winner != _CHART and defaults and _defines(defaults, _key_path(change.path)):
            origin = Provenance(origin.winner, (*origin.overridden, _CHART))
        result.append((format_path(change.path), change.after, origin))
    return result


def _merged(defaults: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """Helm's coalescing of chart defaults under the release's values (maps merge, null unsets)."""
    merged = dict(defaults)
    for key, value in values.items():
        below = merged.get(key)
        if isinstance(value, Mapping) and isinstance(below, Mapping):
            merged[key] = _merged(below, value)
        elif value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


# --- values diff -------------------------------------------------------------------------------


def values_diff(
    base: ReleasePlan | None, head: ReleasePlan | None, redact: Redact
) -> tuple[ValueChange, ...]:
    """Path-level changes of a release's merged values, each with its origins."""
    before = redact(base.values) if base else {}
    after = redact(head.values) if head else {}
    result = []
    for change in semantic_diff(before, after):
        origin_base = provenance(base.layers, change.path).winner if base else None
        origin_head = provenance(head.layers, change.path).winner if head else None
        if change.kind is ChangeKind.REMOVED:
            origin_head = None
        if change.kind is ChangeKind.ADDED:
            origin_base = None
        result.append(ValueChange.of(change, origin_base, origin_head))
    return tuple(result)


# --- blast radius ------------------------------------------------------------------------------


def changed_files(
    base: Path,
    head: Path,
    *,
    ignored: Iterable[str] = (),
    env: Mapping[str, str] = ISOLATED_GIT,
) -> list[str]:
    """Repository-relative files added, removed or modified between two checkouts.

    `ignored`: paths git ignores in the head checkout (directories end in `/`), left out.
    """
    return list(changes_between(base, head, ignored=ignored, env=env).reported)


def _reads(plan: ReleasePlan, file: str) -> bool:
    return reads(plan.inputs, file)


def reads(inputs: Iterable[str], file: str) -> bool:
    """Whether a release built from `inputs` (files or directories) reads `file`."""
    return any(file == used or file.startswith(used + "/") for used in inputs)


def affected_by(files: Iterable[str], inputs: Iterable[str]) -> list[str]:
    """The changed `files` a release built from `inputs` reads: its own blast radius."""
    inputs = list(inputs)
    return sorted(file for file in files if reads(inputs, file))


def blast_radius(
    files: Iterable[str],
    plans: Iterable[ReleasePlan],
    status: Mapping[ReleaseId, ReleaseStatus],
) -> tuple[FileImpact, ...]:
    """For each changed file, the releases (of either side) built from it."""
    plans = list(plans)
    impacts = []
    for file in files:
        releases = sorted({plan.id for plan in plans if _reads(plan, file)})
        changed = sum(
            1 for rid in releases if status.get(rid) not in (None, ReleaseStatus.UNCHANGED)
        )
        impacts.append(FileImpact(file, tuple(releases), changed))
    impacts.sort(key=lambda impact: (-len(impact.releases), impact.file))
    return tuple(impacts)


# --- no-effect warnings ------------------------------------------------------------------------


def _value_at(values: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    node: Any = values
    for key in keys:
        if not isinstance(node, Mapping) or key not in node:
            return _MISSING
        node = node[key]
    return node


_MISSING = object()


# Mutable on purpose: `no_effect` fills one per changed key while it walks the layers;
# it never leaves that function.
@dataclass
class _Finding:
    overridden_by: set[str] = field(default_factory=set)
    effective: bool = False
    unread: bool = False


def _no_chart_text(plan: ReleasePlan) -> str | None:
    return None


def no_effect(
    base: Mapping[ReleaseId, ReleasePlan],
    head: Mapping[ReleaseId, ReleasePlan],
    changed: Iterable[str],
    status: Mapping[ReleaseId, ReleaseStatus],
    chart_text: ChartText = _no_chart_text,
) -> tuple[NoEffect, ...]:
    """Changed values of changed files that no rendered object shows.

    Files the head side no longer reads (deleted ones) are left out; a key the chart's
    templates never read is reported even when its release changed for other reasons.
    """
    wanted = set(changed)
    findings: dict[tuple[str, str], _Finding] = {}
    for rid in sorted(base.keys() & head.keys()):
        old, new = base[rid], head[rid]
        if old is new:
            continue  # taken from the base side as it was (reviewer/reuse.py): no layer changed
        text = chart_text(new)
        for source, before, after in _changed_layers(old.layers, new.layers, wanted):
            for change in semantic_diff(before, after):
                keys = _key_path(change.path)
                finding = findings.setdefault((source, format_path(keys)), _Finding())
                if _value_at(old.values, keys) == _value_at(new.values, keys):
                    winner = provenance(new.layers, change.path).winner
                    if winner.source != source:  # an equivalent edit is not an override
                        finding.overridden_by.add(str(winner))
                elif text is not None and unread(keys, text):
                    finding.unread = True
                elif status.get(rid) is not ReleaseStatus.UNCHANGED:
                    finding.effective = True
    return tuple(
        NoEffect(source, path, _reason(finding))
        for (source, path), finding in sorted(findings.items())
        if not finding.effective
    )


def _changed_layers(
    old: Iterable[Layer], new: Iterable[Layer], wanted: set[str]
) -> Iterable[tuple[str, dict[str, Any], dict[str, Any]]]:
    old, new = list(old), list(new)
    before = {layer.source: layer.values for layer in old}
    after = {layer.source: layer.values for layer in new}
    moved = _moved(old, new)
    # Only files the head side reads: a deleted file has no values left to take effect.
    for source in sorted(after):
        previous = before.get(source, before.get(moved.get(source, ""), {}))
        if source in wanted and previous != after[source]:
            yield source, previous, after[source]


def _moved(old: Sequence[Layer], new: Sequence[Layer]) -> dict[str, str]:
    """{head source: base source} for files renamed or moved: a source only the head reads,
    paired with one of the same level only the base reads, in order."""
    old_sources = {layer.source for layer in old}
    new_sources = {layer.source for layer in new}
    gone: dict[str, list[str]] = {}
    for layer in old:
        if layer.source not in new_sources:
            gone.setdefault(layer.level, []).append(layer.source)
    pairs: dict[str, str] = {}
    for layer in new:
        if layer.source not in old_sources and gone.get(layer.level):
            pairs[layer.source] = gone[layer.level].pop(0)
    return pairs


def _reason(finding: _Finding) -> str:
    if finding.overridden_by:
        return "overridden by " + ", ".join(sorted(finding.overridden_by))
    if finding.unread:
        return "no rendered object changed: the chart's templates never read this key (a typo?)"
    return "no rendered object changed (a key the chart does not use, or a typo?)"


# --- all together ------------------------------------------------------------------------------


def explain(
    *,
    base: Mapping[ReleaseId, ReleasePlan],
    head: Mapping[ReleaseId, ReleasePlan],
    files: Iterable[str],
    diff: SnapshotDiff,
    redact: Redact,
    chart_text: ChartText = _no_chart_text,
) -> Explanation:
    """Values diffs of changed releases, blast radius of changed files, no-effect warnings."""
    files = list(files)
    status = {release.id: release.status for release in diff.releases}
    # Added and removed releases show all their objects; their values would add nothing.
    changed = [rid for rid, state in status.items() if state is ReleaseStatus.CHANGED]
    values = {
        rid: values_diff(base.get(rid), head.get(rid), redact)
        for rid in changed
        if rid in base or rid in head
    }
    return Explanation(
        values={rid: found for rid, found in values.items() if found},
        blast_radius=blast_radius(files, [*base.values(), *head.values()], status),
        no_effect=no_effect(base, head, files, status, chart_text),
    )
