"""Resource limits on rendering: time, memory and output size per release, nesting depth.

A pull request controls the templates and values that are rendered; these limits turn a
template that loops for hours, allocates gigabytes or nests values thousands of levels deep
into an error for that one release. Defaults fit a 2-core CI runner; `.reviewer.yaml` of the
base side (`limits:`) and the command line (which wins) can change them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from reviewer.errors import ConfigError

MAX_DEPTH = 100
"""Deepest nesting of maps and lists accepted in any YAML document (values or rendered)."""


@dataclass(frozen=True)
class Limits:
    """What one render (a release's chart, or one Go template file) may use."""

    seconds: float = 60.0
    """Wall-clock time of one render."""
    memory_mib: int = 2048
    """Address space of a render worker process (Go heap, Python and the rendered text)."""
    output_mib: int = 32
    """Total size of one release's rendered manifests."""


_KEYS = {"renderSeconds": "seconds", "memoryMiB": "memory_mib", "outputMiB": "output_mib"}


def from_mapping(data: object, *, source: str) -> Limits:
    """The `limits:` map of `.reviewer.yaml`; each key optional, each a positive number."""
    if data is None:
        return Limits()
    if not isinstance(data, dict):
        raise ConfigError(source, "must be a map", field="limits")
    given: dict[str, Any] = {}
    for key, value in data.items():
        name = _KEYS.get(str(key))
        if name is None:
            allowed = ", ".join(_KEYS)
            raise ConfigError(source, f"unknown key; allowed: {allowed}", field=f"limits.{key}")
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise ConfigError(source, "must be a positive number", field=f"limits.{key}")
        given[name] = float(value) if name == "seconds" else int(value)
    return replace(Limits(), **given)


@dataclass(frozen=True)
class LimitFlags:
    """Limits given on the command line (None: not given); they win over `.reviewer.yaml`."""

    seconds: float | None = None
    memory_mib: int | None = None
    output_mib: int | None = None

    def over(self, limits: Limits) -> Limits:
        """`limits` with every flag that was given applied."""
        return Limits(
            seconds=self.seconds if self.seconds is not None else limits.seconds,
            memory_mib=self.memory_mib if self.memory_mib is not None else limits.memory_mib,
            output_mib=self.output_mib if self.output_mib is not None else limits.output_mib,
        )


def too_deep(value: object, limit: int = MAX_DEPTH) -> bool:
    """True when maps and lists nest deeper than `limit` (checked without recursion)."""
    if not isinstance(value, (dict, list)):
        return False
    # Every parsed document is checked: only maps and lists go on the stack, as scalars
    # (most of the items) cannot nest.
    stack: list[tuple[dict[Any, Any] | list[Any], int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if not children:
            continue
        if depth >= limit:
            return True
        deeper = depth + 1
        stack.extend((child, deeper) for child in children if isinstance(child, (dict, list)))
    return False
