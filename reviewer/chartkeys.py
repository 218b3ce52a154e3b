"""Which values keys a chart can read: a guess from its template text, for no-effect warnings.

A key counts as unread only when the text proves it: `.Values` is never passed
whole, the key's parent is never passed whole (`toYaml .Values.podAnnotations`),
and the key's name appears nowhere in the templates. Anything else — charts
that are not local, keys reached through `index` with a computed name — counts
as read, so a warning is never raised on a guess.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from pathlib import Path

from reviewer.plan import ReleasePlan

ChartText = Callable[[ReleasePlan], str | None]
"""The template text of a release's chart, or None when it cannot be read."""

_TEMPLATE_SUFFIXES = (".yaml", ".yml", ".tpl", ".txt", ".json")


def local_chart_text(root: Path) -> ChartText:
    """Template text of local charts below `root` (remote charts: None)."""

    @cache
    def read(chart: str) -> str | None:
        path = (root / chart).resolve()
        if not path.is_dir() or not path.is_relative_to(root.resolve()):
            return None
        texts = [
            file.read_text(encoding="utf-8", errors="replace")
            for file in sorted(path.rglob("*"))
            if file.is_file()
            and "templates" in file.relative_to(path).parts[:-1]
            and file.suffix in _TEMPLATE_SUFFIXES
        ]
        return "\n".join(texts)

    def text(plan: ReleasePlan) -> str | None:
        return read(plan.chart.local) if plan.chart.local else None

    return text


_WHOLE_VALUES = re.compile(r"\.Values(?![\w.])")


def unread(keys: tuple[str, ...], text: str) -> bool:
    """Whether template `text` can be shown never to read the values key path `keys`."""
    if not keys or _WHOLE_VALUES.search(text):
        return False
    for depth, key in enumerate(keys):
        if not re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", text):
            return True
        parent = r"\.Values\." + r"\.".join(re.escape(k) for k in keys[: depth + 1])
        if re.search(parent + r"(?![\w.])", text):
            return False  # passed whole: any key below it may be read
    return False
