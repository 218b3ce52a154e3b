"""What the sandbox child runs (see `reviewer.sandbox`): chart renders and Go templates.

Imported only inside the child, after its memory cap is set.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reviewer import postrender
from reviewer.engine import HelmEngine, RenderRequest, make_engine
from reviewer.errors import ReviewerError
from reviewer.gotmpl import Charts, render_batch, render_template
from reviewer.sandbox import Task
from reviewer.workers import Outcome, manifests


def output_limit_message(limit_mib: int) -> str:
    """The error of a release whose manifests are larger than the output limit."""
    return (
        f"rendered output exceeds the output limit of {limit_mib} MiB "
        "(limits.outputMiB in .reviewer.yaml, --render-output)"
    )


class Handler:
    """The child's state: one Helm engine and the Go template charts already loaded."""

    def __init__(self, engine: str, binary: str | None) -> None:
        self._engine: HelmEngine = make_engine(engine, binary=Path(binary) if binary else None)
        self._templates: Charts = {}

    def handle(self, task: Task) -> Any:
        """Run one task; every failure comes back as a value, never as a dead child."""
        try:
            if task.kind == "render":
                request, output_mib = task.payload
                return self._render(request, output_mib)
            if task.kind == "gotmpl-batch":
                return render_batch(self._templates, task.payload)
            text, values = task.payload
            return render_template(self._templates, text, values)
        except MemoryError:
            return _failed(task, "rendering ran out of memory (limits.memoryMiB)")
        except RecursionError:
            return _failed(task, "rendered output nests too deeply")
        except Exception as error:
            # Only the type: the message may quote a value. A child that died instead would
            # be reported as having hit the memory limit.
            return _failed(
                task, f"internal error while rendering (a bug in reviewer: {type(error).__name__})"
            )

    def _render(self, request: RenderRequest, output_mib: int) -> Outcome:
        try:
            info = self._engine.chart_info(request.chart)
            rendered = postrender.apply(self._engine.render(request), request.patches)
        except ReviewerError as error:
            return Outcome(None, error=error.render())
        size = sum(len(text) for text in rendered.values())
        if size > output_mib * 1024 * 1024:
            return Outcome(None, error=output_limit_message(output_mib))
        try:
            return Outcome(info, tuple(manifests(rendered)))
        except ReviewerError as error:
            return Outcome(None, error=error.render())


def _failed(task: Task, message: str) -> Any:
    if task.kind == "gotmpl-batch":
        return None  # the parent renders each template alone and reports the one at fault
    return Outcome(None, error=message) if task.kind == "render" else ("error", message)
