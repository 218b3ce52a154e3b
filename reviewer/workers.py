"""What a render pool gives back: the finished objects of one release, or its error.

The pool itself is `reviewer.sandbox.SandboxPool`; the child splits and normalises the
objects (`manifests`), so that work runs in parallel with the renders too.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from reviewer import yamlio
from reviewer.engine import ChartInfo, RenderRequest
from reviewer.model import Resource


@dataclass(frozen=True)
class Outcome:
    """What rendering one request gave: the chart and its objects, or an error."""

    chart: ChartInfo | None
    resources: tuple[Resource, ...] = ()
    error: str | None = None


def manifests(rendered: dict[str, str]) -> list[Resource]:
    """Split rendered template outputs into normalized objects, like `helm template` does."""
    resources: list[Resource] = []
    for template in sorted(rendered):
        base = posixpath.basename(template)
        if base == "NOTES.txt" or base.startswith("_"):
            continue
        for document in yamlio.load_manifests(rendered[template], source=template):
            resources.extend(Resource.from_body(body, source=template) for body in items(document))
    resources.sort(key=lambda r: r.key)
    return resources


def items(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects a document stands for: a list's items, or the document itself.

    `helm template` prints a list (`kind: List`, `ConfigMapList`, ...) as it is, but
    what reaches the cluster are its items: Helm's install and kubectl decode any
    document with an `items` list as a list and apply each item. So the diff pairs
    the items. An item without apiVersion and kind takes the list's apiVersion and
    its kind without the `List` suffix, as Kubernetes' decoder does.
    """
    found = document.get("items")
    if not isinstance(found, list):
        return [document]
    implied = {
        "apiVersion": document.get("apiVersion", ""),
        "kind": str(document.get("kind", "")).removesuffix("List"),
    }
    return [
        item if "apiVersion" in item or "kind" in item else {**implied, **item}
        for item in found
        if isinstance(item, dict)
    ]


class Pool(Protocol):
    """Renders many requests; yields (index, outcome) as each one finishes."""

    engine_id: str
    """Engine name and Helm version: part of every input digest."""

    def render(self, requests: Sequence[RenderRequest]) -> Iterator[tuple[int, Outcome]]:
        """Render every request (order of completion, not of input)."""
        ...

    def close(self) -> None:
        """Stop workers, if any."""
        ...


# Starting a worker costs about half a second (interpreter, imports, the SDK);
# below this many renders one process is faster than starting the pool.
PARALLEL_THRESHOLD = 48
