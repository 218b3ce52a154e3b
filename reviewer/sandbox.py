"""A killable child process for everything that runs Go templates.

Helm's engine runs Go in-process, where a template that loops for hours cannot be
interrupted and one that allocates gigabytes crashes the whole interpreter. Renders
therefore run in a long-lived spawned child (never forked: the Go runtime does not survive
a fork) whose address space is capped with `RLIMIT_AS`; a render that runs past the time
limit gets the child killed and replaced, one that runs out of memory takes only the child
down. Either way the caller gets an error naming the limit and the next render goes on.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import resource
import tempfile
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from reviewer.engine import HelmEngine, RenderRequest
from reviewer.errors import ReviewerError
from reviewer.limits import Limits
from reviewer.workers import PARALLEL_THRESHOLD, Outcome


class LimitExceeded(ReviewerError):
    """A render crossed a resource limit; the message names the limit."""


class TimeLimitExceeded(LimitExceeded):
    """A render ran past the time limit: unlike a dying child (its memory limit, or a kill
    from outside), an outcome the same render would have again."""


@dataclass(frozen=True)
class Task:
    """What to run in the child: `kind` is `render` (a chart), `gotmpl` (one template) or
    `gotmpl-batch` (several, answered as a list)."""

    kind: str
    payload: Any


def time_limit_message(limits: Limits) -> str:
    """The error of a render stopped at the time limit."""
    return (
        f"rendering exceeded the time limit of {limits.seconds:g}s and was stopped "
        "(limits.renderSeconds in .reviewer.yaml, --render-timeout)"
    )


def memory_limit_message(limits: Limits) -> str:
    """The error of a render whose worker died, almost always at the memory limit."""
    return (
        f"rendering exceeded the memory limit of {limits.memory_mib} MiB and was stopped "
        "(limits.memoryMiB in .reviewer.yaml, --render-memory)"
    )


# Sandbox children alive in this process; when the last one stops, multiprocessing's
# resource tracker (started with the first spawned child) is stopped and reaped too.
# Left running, it outlives the reviewer, and where the container's init never reaps
# orphans (CI runners, sandboxes) it stays behind as a defunct process.
_alive = 0
_alive_lock = threading.Lock()


def _child_started() -> None:
    global _alive
    with _alive_lock:
        _alive += 1


def _child_stopped() -> None:
    global _alive
    with _alive_lock:
        _alive -= 1
        if _alive == 0 and not multiprocessing.active_children():
            _stop_resource_tracker()


def _stop_resource_tracker() -> None:
    """Close the tracker's pipe and wait for it (it exits once no child holds the pipe)."""
    from multiprocessing import resource_tracker

    tracker = resource_tracker._resource_tracker
    if getattr(tracker, "_pid", None) is None:
        return  # not started here: a spawned process shares its parent's, which stops it
    stop = getattr(tracker, "_stop", None)
    if stop is not None:
        stop()


class Sandbox:
    """One child process running tasks one at a time under `limits`; restarted after a kill."""

    def __init__(self, limits: Limits, *, engine: str = "embedded", binary: Path | None = None):
        self.limits = limits
        self._engine = engine
        self._binary = str(binary) if binary else None
        self._process: BaseProcess | None = None
        self._conn: Connection | None = None
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self._ended = False
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the child now (it imports the SDK while the caller does other work)."""
        with self._lock:
            self._ensure()

    def run(self, task: Task) -> Any:
        """The task's result; raises `LimitExceeded` when the child is stopped or dies."""
        with self._lock:
            if self._ended:
                raise LimitExceeded("rendering stopped: the run is ending")
            conn = self._ensure()
            conn.send(task)
            if not conn.poll(self.limits.seconds):
                self._stop()
                raise TimeLimitExceeded(time_limit_message(self.limits))
            try:
                return conn.recv()
            except (EOFError, OSError):
                self._stop()
                raise LimitExceeded(memory_limit_message(self.limits)) from None

    def close(self) -> None:
        """Stop the child."""
        with self._lock:
            self._stop()

    def end(self) -> None:
        """Kill the child now and start no other: the task running and every later one fail
        at once (the run is ending: Ctrl-C, SIGTERM)."""
        self._ended = True
        self.kill()

    def kill(self) -> None:
        """Kill the child now, even while a task runs (that task fails as at a limit, and
        the next one starts a new child)."""
        process = self._process
        if process is not None:
            # Stopped meanwhile by the thread running it: closed (ValueError) or half-closed.
            with contextlib.suppress(ValueError, AttributeError, OSError):
                process.kill()

    def _ensure(self) -> Connection:
        if self._conn is not None and self._process is not None and self._process.is_alive():
            return self._conn
        self._stop()
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        memory = self.limits.memory_mib * 1024 * 1024
        # The child is killed, never asked to stop, so it cannot remove what it writes
        # (chart copies, helm's home): its temporary files go where this process removes them.
        # TemporaryDirectory's cleanup also removes read-only directories (an archive may
        # unpack them).
        self._scratch = tempfile.TemporaryDirectory(
            prefix="reviewer-sandbox-", ignore_cleanup_errors=True
        )
        process = context.Process(
            target=_serve,
            args=(child, memory, self._engine, self._binary, self._scratch.name),
            daemon=True,
        )
        # Counted before it starts: a finalizer closing another sandbox may run (garbage
        # collection) while this one launches, and must not stop the resource tracker that
        # the launching child already holds (that waits forever: a deadlock).
        _child_started()
        try:
            process.start()
        except BaseException:
            _child_stopped()
            raise
        child.close()
        self._process, self._conn = process, parent
        return parent

    def _stop(self) -> None:
        # Forgotten first: interrupted half-way (SIGTERM), the next call must not stop a
        # closed process again.
        process, conn, scratch = self._process, self._conn, self._scratch
        self._process, self._conn, self._scratch = None, None, None
        if process is not None:
            try:
                process.kill()
                process.join()
                process.close()
            finally:
                _child_stopped()
        if conn is not None:
            conn.close()
        if scratch is not None:
            scratch.cleanup()


def _serve(conn: Connection, memory: int, engine: str, binary: str | None, scratch: str) -> None:
    """The child: load the engine, cap the address space, then answer tasks until EOF."""
    tempfile.tempdir = scratch
    # The Go runtime reserves address space when the SDK loads; capping after that makes
    # the limit bound what renders allocate, not whether the child can start at all.
    from reviewer import sandbox_tasks

    handler = sandbox_tasks.Handler(engine, binary)
    # From here on, what the Go runtime writes as it dies (a dump of every goroutine when a
    # render runs out of memory: thousands of lines) is not for the user: the parent says
    # which release failed and why. A failure to start is still printed above.
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    os.close(quiet)
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        conn.send(handler.handle(task))


class SandboxPool:
    """Renders requests in `jobs` sandboxes (one for small batches), under `limits`.

    Small batches use one child, started when the pool opens so that it loads while the
    fleet is planned; more start on the first large batch.
    """

    def __init__(
        self, engine: HelmEngine, *, jobs: int, binary: Path | None, limits: Limits
    ) -> None:
        self.engine_id = f"{engine.name}/{engine.version}"
        self.limits = limits
        self._sandboxes = [
            Sandbox(limits, engine=engine.name, binary=binary) for _ in range(max(jobs, 1))
        ]
        self._sandboxes[0].start()

    def render(self, requests: Sequence[RenderRequest]) -> Iterator[tuple[int, Outcome]]:
        """Render every request; yields (index, outcome) as each finishes."""
        workers = self._sandboxes if len(requests) >= PARALLEL_THRESHOLD else self._sandboxes[:1]
        if len(workers) == 1:
            for index, request in enumerate(requests):
                yield index, self._render(workers[0], request)
            return
        free: queue.SimpleQueue[Sandbox] = queue.SimpleQueue()
        for sandbox in workers:
            free.put(sandbox)
        executor = ThreadPoolExecutor(max_workers=len(workers))
        futures: dict[Future[Outcome], int] = {}
        try:
            for index, request in enumerate(requests):
                futures[executor.submit(self._render_with, free, request)] = index
            for future in as_completed(futures):
                yield futures[future], future.result()
        except BaseException:
            # Left early (an error, SIGTERM, the caller gone): what is queued is dropped and
            # what runs is killed, not waited for (a render may run to the time limit).
            for future in futures:
                future.cancel()
            for sandbox in workers:
                sandbox.kill()
            raise
        finally:
            executor.shutdown()

    def _render_with(self, free: queue.SimpleQueue[Sandbox], request: RenderRequest) -> Outcome:
        sandbox = free.get()
        try:
            return self._render(sandbox, request)
        finally:
            free.put(sandbox)

    def _render(self, sandbox: Sandbox, request: RenderRequest) -> Outcome:
        try:
            outcome: Outcome = sandbox.run(Task("render", (request, self.limits.output_mib)))
        except LimitExceeded as error:
            return Outcome(None, error=error.message)
        return outcome

    def close(self) -> None:
        """Stop every child."""
        for sandbox in self._sandboxes:
            sandbox.close()
