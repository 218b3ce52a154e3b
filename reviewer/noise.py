"""Noise rules: changes a repository declares routine.

Routine changes are left out of the main diff but are always counted and
listed, with the rule that matched them. Rules come from the `noise:` mapping
of `.reviewer.yaml`; every key is optional and takes a list of strings:

`labels`
    Label keys (glob: `*`, `?`, `[...]`), e.g. `helm.sh/chart`, `app.kubernetes.io/*`.
    Covers every `metadata.labels` map, also nested ones such as
    `spec.template.metadata.labels`. Selectors (`matchLabels`) are never
    covered: a selector change matters.
`annotations`
    Annotation keys (glob), e.g. `checksum/*`; every `metadata.annotations` map.
`paths`
    Field paths, dot-separated, e.g. `spec.template.metadata.annotations` or
    `metadata.annotations.checksum/*`. A rule covers the path and everything
    below it. A segment is a key glob; `**` matches any number of segments;
    `["a.b/c"]` quotes a key that contains dots; list items are picked with
    `[name=web]` (value glob), `[0]` (position) or `[*]` (any item).
`kinds`
    Kinds (glob) whose every change is routine, e.g. `Event` or `*.example.com`;
    a pattern with a dot is matched against `Kind.group`.

Two rules apply without any configuration, because every chart bump touches
them on every object: the chart-identity labels (`helm.sh/chart`,
`app.kubernetes.io/version`, `chart`) and the `checksum/*` annotations. They
are listed as `labels: helm.sh/chart (default)` and so on; `chart-labels: false`
and `checksum-annotations: false` turn them off.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, TypeAlias

from reviewer.errors import ConfigError
from reviewer.model import ResourceKey
from reviewer.semantic import Path, Select, keyed_items, list_key

NOISE_KEYS = ("labels", "annotations", "paths", "kinds", "chart-labels", "checksum-annotations")
CHART_LABELS = ("helm.sh/chart", "app.kubernetes.io/version", "chart")
"""Labels that name the chart and its version: routine unless `chart-labels: false`."""
CHECKSUM_ANNOTATIONS = ("checksum/*",)
"""Annotations charts use to roll pods on config changes: routine unless turned off."""


@dataclass(frozen=True)
class AnyItem:
    """`[*]`: any list item."""


@dataclass(frozen=True)
class AnyDepth:
    """`**`: any number of segments, including none."""


@dataclass(frozen=True)
class ItemWhere:
    """`[name=web*]`: a list item whose identifying field matches a glob."""

    field: str
    value: str


PatternSegment: TypeAlias = "str | int | AnyItem | AnyDepth | ItemWhere"

_PLAIN_KEY = re.compile(r"[^.\[]+")
_ITEM = re.compile(r"\[(?P<body>[^\]]*)\]")
_INDEX = re.compile(r"\d+")


@dataclass(frozen=True)
class PathPattern:
    """A parsed `paths` rule; `text` is what the user wrote."""

    text: str
    segments: tuple[PatternSegment, ...]

    @classmethod
    def parse(cls, text: str) -> PathPattern:
        """Parse a dotted path pattern; raise ValueError with the reason."""
        if not text:
            raise ValueError("empty pattern")  # it would cover every path
        return cls(text, tuple(_parse_segments(text)))

    def matches(self, path: Path) -> bool:
        """Whether `path` is at or below what this pattern names."""
        return _match(self.segments, path)


def _parse_segments(text: str) -> Iterator[PatternSegment]:
    pos = 0
    while pos < len(text):
        if pos and text[pos] == ".":
            pos += 1
        if pos >= len(text) or text[pos] == ".":
            raise ValueError("empty segment")
        if text.startswith('["', pos):
            key, end = json.JSONDecoder().raw_decode(text, pos + 1)
            if not text.startswith("]", end):
                raise ValueError('expected "]" after a quoted key')
            yield str(key)
            pos = end + 1
        elif text[pos] == "[":
            found = _ITEM.match(text, pos)
            if found is None:
                raise ValueError('unclosed "["')
            yield _item_segment(found.group("body"))
            pos = found.end()
        else:
            found = _PLAIN_KEY.match(text, pos)
            if found is None:
                raise ValueError("empty segment")
            yield AnyDepth() if found.group() == "**" else found.group()
            pos = found.end()


def _item_segment(body: str) -> PatternSegment:
    if body == "*":
        return AnyItem()
    if _INDEX.fullmatch(body):
        return int(body)
    field, equals, value = body.partition("=")
    if not equals or not field:
        raise ValueError(f"list selector [{body}] must be [*], [N] or [field=value]")
    return ItemWhere(field, value)


def _match(pattern: tuple[PatternSegment, ...], path: Path) -> bool:
    if not pattern:
        return True
    head, rest = pattern[0], pattern[1:]
    if isinstance(head, AnyDepth):
        return any(_match(rest, path[skip:]) for skip in range(len(path) + 1))
    return bool(path) and _segment_matches(head, path[0]) and _match(rest, path[1:])


def _segment_matches(pattern: PatternSegment, segment: Any) -> bool:
    if isinstance(pattern, AnyItem):
        return isinstance(segment, (int, Select))
    if isinstance(pattern, ItemWhere):
        return (
            isinstance(segment, Select)
            and segment.field == pattern.field
            and fnmatchcase(segment.value, pattern.value)
        )
    if isinstance(pattern, int):
        return isinstance(segment, int) and segment == pattern
    return isinstance(segment, str) and fnmatchcase(segment, str(pattern))


@dataclass(frozen=True)
class NoiseRules:
    """Which changes are routine; empty rules make nothing routine."""

    labels: tuple[str, ...] = ()
    annotations: tuple[str, ...] = ()
    paths: tuple[PathPattern, ...] = ()
    kinds: tuple[str, ...] = ()
    chart_labels: bool = True
    checksum_annotations: bool = True

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, source: str = ".reviewer.yaml") -> NoiseRules:
        """Build rules from the `noise:` mapping; ConfigError names the bad field."""
        unknown = sorted(str(key) for key in data if key not in NOISE_KEYS)
        if unknown:
            allowed = ", ".join(NOISE_KEYS)
            raise ConfigError(
                source, f"unknown key {unknown[0]!r} (allowed: {allowed})", field="noise"
            )
        paths = _strings(data, "paths", source)
        return cls(
            labels=_strings(data, "labels", source),
            annotations=_strings(data, "annotations", source),
            paths=tuple(_pattern(text, index, source) for index, text in enumerate(paths)),
            kinds=_strings(data, "kinds", source),
            chart_labels=_flag(data, "chart-labels", source),
            checksum_annotations=_flag(data, "checksum-annotations", source),
        )

    def __bool__(self) -> bool:
        return bool(
            self.labels
            or self.annotations
            or self.paths
            or self.kinds
            or self.chart_labels
            or self.checksum_annotations
        )

    def kind_rule(self, key: ResourceKey) -> str | None:
        """The rule that makes every change of this object routine, if any."""
        qualified = f"{key.kind}.{key.group}" if key.group else key.kind
        for pattern in self.kinds:
            if fnmatchcase(qualified if "." in pattern else key.kind, pattern):
                return f"kinds: {pattern}"
        return None

    def path_rule(self, path: Path) -> str | None:
        """The first rule that covers `path`, shown as `<key>: <pattern>`; None if none does.

        The repository's own rules come first, then the built-in defaults.
        """
        for where, patterns in (("labels", self.labels), ("annotations", self.annotations)):
            matched = _metadata_match(path, where, patterns)
            if matched is not None:
                return f"{where}: {matched}"
        for rule in self.paths:
            if rule.matches(path):
                return f"paths: {rule.text}"
        defaults = (
            ("labels", CHART_LABELS if self.chart_labels else ()),
            ("annotations", CHECKSUM_ANNOTATIONS if self.checksum_annotations else ()),
        )
        for where, patterns in defaults:
            matched = _metadata_match(path, where, patterns)
            if matched is not None:
                return f"{where}: {matched} (default)"
        return None


def _metadata_match(path: Path, where: str, patterns: tuple[str, ...]) -> str | None:
    """The first pattern matching the key below a `metadata.<where>` map on `path`."""
    key = _metadata_key(path, where)
    if key is None:
        return None
    return next((pattern for pattern in patterns if fnmatchcase(key, pattern)), None)


def _metadata_key(path: Path, where: str) -> str | None:
    """The key below a `metadata.<where>` map on `path`, at any depth."""
    for index in range(len(path) - 2):
        if path[index] == "metadata" and path[index + 1] == where:
            key = path[index + 2]
            return key if isinstance(key, str) else None
    return None


def _strings(data: Mapping[str, Any], key: str, source: str) -> tuple[str, ...]:
    value = data.get(key) or []
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise ConfigError(source, "must be a list of non-empty strings", field=f"noise.{key}")
    return tuple(value)


def _flag(data: Mapping[str, Any], key: str, source: str) -> bool:
    value = data.get(key, True)
    if not isinstance(value, bool):
        raise ConfigError(source, "must be true or false", field=f"noise.{key}")
    return value


def _pattern(text: str, index: int, source: str) -> PathPattern:
    try:
        return PathPattern.parse(text)
    except ValueError as exc:
        raise ConfigError(
            source, f"invalid path pattern: {exc}", field=f"noise.paths[{index}]"
        ) from None


_ABSENT: Any = object()
Matcher = Callable[[Path], bool]


def prune_pair(before: Any, after: Any, covered: Matcher) -> tuple[Any, Any]:
    """Copies of both documents without the covered paths; a map or list that pruning
    empties goes too when the other side lacks it (no stray `annotations: {}` line)."""
    return _prune((), before, after, covered)


def _prune(path: Path, before: Any, after: Any, covered: Matcher) -> tuple[Any, Any]:
    if _is(dict, before, after):
        return _prune_maps(path, before, after, covered)
    if _is(list, before, after):
        return _prune_lists(path, before, after, covered)
    return before, after


def _is(kind: type, before: Any, after: Any) -> bool:
    """Whether every side present (at least one) is a `kind`."""
    if before is _ABSENT:
        return after is not _ABSENT and isinstance(after, kind)
    return isinstance(before, kind) and (after is _ABSENT or isinstance(after, kind))


def _prune_maps(path: Path, before: Any, after: Any, covered: Matcher) -> tuple[Any, Any]:
    old: dict[str, Any] = {} if before is _ABSENT else before
    new: dict[str, Any] = {} if after is _ABSENT else after
    out_old: dict[str, Any] = {}
    out_new: dict[str, Any] = {}
    for key in [*old, *(key for key in new if key not in old)]:
        below = (*path, key)
        if covered(below):
            continue
        pair = (old.get(key, _ABSENT), new.get(key, _ABSENT))
        _store(out_old, out_new, key, pair, _prune(below, *pair, covered))
    return _absent_if(before, out_old), _absent_if(after, out_new)


def _prune_lists(path: Path, before: Any, after: Any, covered: Matcher) -> tuple[Any, Any]:
    old_items: list[Any] = [] if before is _ABSENT else before
    new_items: list[Any] = [] if after is _ABSENT else after
    name = list_key(old_items, new_items)
    old = dict(keyed_items(old_items, name))
    new = dict(keyed_items(new_items, name))
    out_old: dict[Any, Any] = {}
    out_new: dict[Any, Any] = {}
    for segment in [*old, *(segment for segment in new if segment not in old)]:
        below = (*path, segment)
        if covered(below):
            continue
        pair = (old.get(segment, _ABSENT), new.get(segment, _ABSENT))
        _store(out_old, out_new, segment, pair, _prune(below, *pair, covered))
    # Keep each side's own item order (the dicts above list old items first).
    kept_old = [out_old[s] for s in old if s in out_old]
    kept_new = [out_new[s] for s in new if s in out_new]
    return _absent_if(before, kept_old), _absent_if(after, kept_new)


def _store(
    out_old: dict[Any, Any],
    out_new: dict[Any, Any],
    key: Any,
    originals: tuple[Any, Any],
    pruned: tuple[Any, Any],
) -> None:
    old, new = pruned
    # A container emptied by pruning vanishes when the other side does not have it.
    if _emptied(originals[0], old) and new is _ABSENT:
        old = _ABSENT
    if _emptied(originals[1], new) and old is _ABSENT:
        new = _ABSENT
    if old is not _ABSENT:
        out_old[key] = old
    if new is not _ABSENT:
        out_new[key] = new


def _emptied(original: Any, pruned: Any) -> bool:
    return isinstance(original, (dict, list)) and bool(original) and not pruned


def _absent_if(original: Any, value: Any) -> Any:
    return _ABSENT if original is _ABSENT else value
