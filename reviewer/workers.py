"""Where charts are rendered: in this process, or in a pool of worker processes.

A worker receives a `RenderRequest` (chart path, values, name, namespace) and
returns the finished objects, so parsing and normalizing run in parallel too.
Workers are spawned, never forked: the Go runtime inside the Helm SDK does
not survive a fork.
"""

from __future__ import annotations

import multiprocessing
import posixpath
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from reviewer import postrender, yamlio
from reviewer.engine import ChartInfo, HelmEngine, RenderRequest, make_engine
from reviewer.errors import ReviewerError
from reviewer.model import Resource


@dataclass(frozen=True)
class Outcome:
    """What rendering one request gave: the chart and its objects, or an error."""

    chart: ChartInfo | None
    resources: tuple[Resource, ...] = ()
    error: str | None = None


def render_request(engine: HelmEngine, request: RenderRequest) -> Outcome:
    """Render one request with `engine`; failures become an `Outcome` with an error."""
    try:
        info = engine.chart_info(request.chart)
        rendered = postrender.apply(engine.render(request), request.patches)
        return Outcome(info, tuple(manifests(rendered)))
    except ReviewerError as error:
        return Outcome(None, error=error.render())


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


class InProcessPool:
    """Renders one request after the other with the given engine."""

    def __init__(self, engine: HelmEngine) -> None:
        self.engine = engine
        self.engine_id = f"{engine.name}/{engine.version}"

    def render(self, requests: Sequence[RenderRequest]) -> Iterator[tuple[int, Outcome]]:
        """Render in order, in this process."""
        for index, request in enumerate(requests):
            yield index, render_request(self.engine, request)

    def close(self) -> None:
        """Nothing to stop."""


# Set in each worker process by `_start_worker`.
_WORKER_ENGINE: HelmEngine | None = None


def _start_worker(engine_name: str, binary: str | None) -> None:
    global _WORKER_ENGINE
    _WORKER_ENGINE = make_engine(engine_name, binary=Path(binary) if binary else None)


def _render_in_worker(request: RenderRequest) -> Outcome:
    assert _WORKER_ENGINE is not None, "worker started without an engine"
    return render_request(_WORKER_ENGINE, request)


# Starting a worker costs about half a second (interpreter, imports, the SDK);
# below this many renders one process is faster than starting the pool.
PARALLEL_THRESHOLD = 48


class ProcessPool:
    """Renders requests in `jobs` spawned worker processes, each with its own engine.

    Small batches render in this process; workers start on the first large batch.
    """

    def __init__(self, engine: HelmEngine, *, jobs: int, binary: Path | None) -> None:
        self.engine_id = f"{engine.name}/{engine.version}"
        self._local = InProcessPool(engine)
        self._jobs = jobs
        self._binary = binary
        self._executor: ProcessPoolExecutor | None = None

    def render(self, requests: Sequence[RenderRequest]) -> Iterator[tuple[int, Outcome]]:
        """Render in the workers (or here, for a small batch); yields as results arrive."""
        if len(requests) < PARALLEL_THRESHOLD:
            yield from self._local.render(requests)
            return
        executor = self._start()
        futures: dict[Future[Outcome], int] = {
            executor.submit(_render_in_worker, request): index
            for index, request in enumerate(requests)
        }
        for future in as_completed(futures):
            yield futures[future], future.result()

    def _start(self) -> ProcessPoolExecutor:
        if self._executor is None:
            self._executor = ProcessPoolExecutor(
                max_workers=self._jobs,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start_worker,
                initargs=(self._local.engine.name, str(self._binary) if self._binary else None),
            )
        return self._executor

    def close(self) -> None:
        """Stop the workers, if they were started."""
        if self._executor is not None:
            self._executor.shutdown(cancel_futures=True)
            self._executor = None
