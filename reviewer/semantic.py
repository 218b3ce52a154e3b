"""The path-level ("semantic") view of how one object changed: `spec.replicas: 2 → 3`.

Maps are compared key by key down to their leaves (a map that appears or
disappears is listed leaf by leaf). Lists are matched by the first of `name`,
`key`, `id` that every item of both lists carries with distinct values (as
dyff does), shown as `containers[name=web]`; otherwise by position, `args[2]`.
A keyed list whose items only moved gets one `order changed` entry.

Keys that would be ambiguous in a dotted path are quoted:
`metadata.labels["app.kubernetes.io/name"]`.
"""

from __future__ import annotations

import difflib
import json
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path as FilePath
from typing import Any, TypeAlias

from reviewer import proc


@dataclass(frozen=True)
class Select:
    """A list item picked by the value of its identifying field: `[name=web]`."""

    field: str
    value: str

    def __str__(self) -> str:
        value = json.dumps(self.value) if _NEEDS_QUOTES.search(self.value) else self.value
        return f"[{self.field}={value}]"


Segment: TypeAlias = "str | int | Select"
Path: TypeAlias = "tuple[Segment, ...]"

LIST_KEYS = ("name", "key", "id")
"""Fields that identify list items, in order of preference."""

_NEEDS_QUOTES = re.compile(r'[.\[\]"*=\s]|^$')
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class ChangeKind(str, Enum):
    """What happened at a path."""

    ADDED = "added"
    REMOVED = "removed"
    MODIFIED = "modified"
    ORDER = "order"


def format_path(path: Path) -> str:
    """Render a path as `spec.template.spec.containers[name=web].image`."""
    if not path:
        return "(object)"
    text = ""
    for segment in path:
        if isinstance(segment, Select):
            text += str(segment)
        elif isinstance(segment, int):
            text += f"[{segment}]"
        elif _NEEDS_QUOTES.search(segment):
            text += f"[{json.dumps(segment, ensure_ascii=False)}]"
        else:
            text += f".{segment}" if text else segment
    return text


def show_value(value: Any) -> str:
    """A value as one line: JSON, so strings are quoted and numbers are not."""
    return json.dumps(value, ensure_ascii=False, default=str)


@dataclass(frozen=True)
class PathChange:
    """One change at one path; `before`/`after` are the values on each side."""

    path: Path
    kind: ChangeKind
    before: Any = None
    after: Any = None

    def lines(self) -> list[str]:
        """The change as text; multi-line strings get an indented line diff below."""
        where = format_path(self.path)
        if self.kind is ChangeKind.ORDER:
            return [f"{where}: order changed {_names(self.before)} → {_names(self.after)}"]
        if not self.path:
            return [f"{where}: {self.kind.value}"]
        if self.kind is ChangeKind.MODIFIED:
            if _multiline(self.before) or _multiline(self.after):
                return [f"{where}: text changed", *_text_diff(self.before, self.after)]
            return [f"{where}: {show_value(self.before)} → {show_value(self.after)}"]
        value = self.after if self.kind is ChangeKind.ADDED else self.before
        if _multiline(value):
            sign = "+" if self.kind is ChangeKind.ADDED else "-"
            return [f"{where}: {self.kind.value}"] + [f"    {sign} {x}" for x in value.splitlines()]
        return [f"{where}: {self.kind.value} {show_value(value)}"]

    def __str__(self) -> str:
        return "\n".join(self.lines())


def _names(value: Any) -> str:
    return "[" + ", ".join(str(item) for item in value) + "]"


def _multiline(value: Any) -> bool:
    return isinstance(value, str) and "\n" in value.rstrip("\n")


def _text_diff(before: Any, after: Any) -> list[str]:
    old = str(before).splitlines() if isinstance(before, str) else [show_value(before)]
    new = str(after).splitlines() if isinstance(after, str) else [show_value(after)]
    # Skip the ---/+++ header: the path line above already names what changed.
    body = list(difflib.unified_diff(old, new, lineterm="", n=2))[2:]
    return [f"    {line}" for line in body]


ListKeys = Callable[[Path], Sequence[str]]
"""The fields that may key the items of the list at a path, in order of preference."""


def default_list_keys(path: Path) -> Sequence[str]:
    """`name`, `key`, `id` for every list (Kubernetes objects)."""
    return LIST_KEYS


def list_key(
    before: Sequence[Any], after: Sequence[Any], keys: Sequence[str] = LIST_KEYS
) -> str | None:
    """The field that identifies items of both lists, or None to match by position."""
    if not before and not after:
        return None
    for name in keys:
        if _keyed_by(before, name) and _keyed_by(after, name):
            return name
    return None


def _keyed_by(items: Sequence[Any], name: str) -> bool:
    values = [item.get(name) if isinstance(item, dict) else None for item in items]
    if not all(isinstance(value, (str, int)) and not isinstance(value, bool) for value in values):
        return False
    return len({str(value) for value in values}) == len(values)


def keyed_items(items: Sequence[Any], name: str | None) -> list[tuple[Segment, Any]]:
    """Each list item with the path segment that names it."""
    if name is None:
        return list(enumerate(items))
    return [(Select(name, str(item[name])), item) for item in items]


def semantic_diff(
    before: Any, after: Any, *, keys: ListKeys = default_list_keys
) -> list[PathChange]:
    """Every change between two documents, down to the changed leaves.

    `keys` names the fields that key list items at each path (BOSH: `alias` for stemcells).
    """
    return list(_diff((), before, after, keys))


def _diff(path: Path, before: Any, after: Any, keys: ListKeys) -> Iterator[PathChange]:
    if isinstance(before, dict) and isinstance(after, dict):
        yield from _diff_maps(path, before, after, keys)
    elif isinstance(before, list) and isinstance(after, list):
        yield from _diff_lists(path, before, after, keys)
    elif before != after or type(before) is not type(after):
        yield PathChange(path, ChangeKind.MODIFIED, before, after)


def _diff_maps(
    path: Path, before: dict[str, Any], after: dict[str, Any], keys: ListKeys
) -> Iterator[PathChange]:
    for key in [*before, *(key for key in after if key not in before)]:
        if key not in after:
            yield from _leaves((*path, key), before[key], ChangeKind.REMOVED)
        elif key not in before:
            yield from _leaves((*path, key), after[key], ChangeKind.ADDED)
        else:
            yield from _diff((*path, key), before[key], after[key], keys)


def _leaves(path: Path, value: Any, kind: ChangeKind) -> Iterator[PathChange]:
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from _leaves((*path, key), item, kind)
    elif kind is ChangeKind.ADDED:
        yield PathChange(path, kind, after=value)
    else:
        yield PathChange(path, kind, before=value)


def _diff_lists(
    path: Path, before: list[Any], after: list[Any], keys: ListKeys
) -> Iterator[PathChange]:
    name = list_key(before, after, keys(path))
    old = dict(keyed_items(before, name))
    new = dict(keyed_items(after, name))
    for segment, item in old.items():
        if segment not in new:
            yield PathChange((*path, segment), ChangeKind.REMOVED, before=item)
    for segment, item in new.items():
        if segment in old:
            yield from _diff((*path, segment), old[segment], item, keys)
        else:
            yield PathChange((*path, segment), ChangeKind.ADDED, after=item)
    if name is not None:
        common_old = [s.value for s in old if s in new and isinstance(s, Select)]
        common_new = [s.value for s in new if s in old and isinstance(s, Select)]
        if common_old != common_new:
            yield PathChange(path, ChangeKind.ORDER, common_old, common_new)


def dyff_available() -> bool:
    """Whether a `dyff` executable is on PATH."""
    return shutil.which("dyff") is not None


def dyff_between(before: str, after: str, *, timeout: float = 60.0) -> str:
    """dyff's report of two YAML documents (empty when they agree); runs the `dyff` CLI."""
    with tempfile.TemporaryDirectory(prefix="reviewer-dyff-") as tmp:
        base, head = FilePath(tmp, "base.yaml"), FilePath(tmp, "head.yaml")
        base.write_text(before, encoding="utf-8")
        head.write_text(after, encoding="utf-8")
        # The same executable `dyff_available` found; it runs with an empty environment.
        found = shutil.which("dyff") or "dyff"
        argv = proc.argv(found, "between", "--omit-header", "--set-exit-code", base, head)
        # Exit 1 means "differences found"; 255 (error) raises CommandError. The
        # documents are not echoed into the error: an error message must never carry values.
        command = proc.Command(argv, ok_codes=(0, 1))
        done = proc.run(command, timeout=timeout, show_output=False)
    if done.returncode == 0:
        return ""
    return _ANSI.sub("", done.stdout.decode("utf-8", "replace")).strip("\n")
