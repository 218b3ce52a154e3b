"""How a run ends when asked to (SIGTERM): as an error does, in every process of the run.

SIGTERM's default action kills a process at once: the template sandboxes, a planning
process and their temporary directories would outlive it. Turned into `SystemExit`, it
unwinds the run as an exception does.

Work handed to another process (the second planning process, the diff's other process)
runs in `one_process()`: when the run ends early (an error, SIGTERM, Ctrl-C) the task
there ends too, as SIGTERM ends this process, instead of finishing first (a slow template
waits up to the time limit); when the run is killed outright (SIGKILL, out of memory),
that process ends itself instead of waiting for its next task for ever. SIGTERM sent to that
process alone (an out-of-memory guard picking the largest process) ends it once its task
has unwound, or at its next task when it is idle or answering (an answer cut short would
leave the run waiting for the rest): the run, told by its pool that the process died, does
the work itself.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, TypeVar

T = TypeVar("T")

_ENDED = 128 + signal.SIGTERM


def terminated(signal_number: int, _: object) -> None:
    """SIGTERM's handler: raise `SystemExit(143)`; a second SIGTERM kills at once."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise SystemExit(128 + signal_number)


class Worker:
    """The process of `one_process()`: runs tasks for this run."""

    def __init__(self, executor: ProcessPoolExecutor | None) -> None:
        self._executor = executor

    def submit(self, task: Callable[..., T], *args: Any) -> Future[T]:
        """Run `task(*args)` over there; OSError when there is no process to be had (none
        could start, or it has ended)."""
        if self._executor is None:
            raise OSError("no process to be had")
        try:
            return self._executor.submit(_run, task, *args)
        except BrokenProcessPool:  # it died (killed, or ended by a signal from outside)
            raise OSError("no process to be had: it has ended") from None


@contextlib.contextmanager
def one_process() -> Iterator[Worker]:
    """One spawned process that ends with this run: an exception leaving the block ends
    the task running there, and leaving the block waits for the process to end."""
    spawn = multiprocessing.get_context("spawn")
    ends: tuple[Connection, Connection] | None = None
    executor: ProcessPoolExecutor | None = None
    try:
        ends = spawn.Pipe()
        executor = ProcessPoolExecutor(
            1, mp_context=spawn, initializer=_follow, initargs=(ends[1], gc.get_threshold())
        )
    except OSError:  # no descriptors left: no process, the work is done here
        pass
    try:
        yield Worker(executor)
    except BaseException:
        if ends is not None:
            ends[0].close()  # the run is ending: so is the task over there
        raise
    finally:
        if executor is not None:
            executor.shutdown(cancel_futures=True)
        for end in ends or ():
            end.close()


@dataclass
class _Task:
    """What the process of `one_process()` is doing, for its SIGTERM handler."""

    running: bool = False
    by_run: bool = False
    """The stop came from the run (it closed `stop`), not from a signal sent from outside."""
    stopped: bool = False
    """Asked to stop (SIGTERM, or `stop` closed): a task not started yet does not start."""
    interrupted: bool = False
    """The running task was ended once: a second SIGTERM (the group's, then `stop`) is the
    same request."""


_task = _Task()


def _follow(stop: Connection, thresholds: tuple[int, int, int]) -> None:
    """The process's initializer: SIGTERM ends its task (only the task: not its start, nor
    its answer on the way back) and any task queued after it; so does `stop` closing,
    whether the run closed it or died. A SIGTERM the run did not ask for then ends the
    process too. Ctrl-C reaches the run, which closes `stop`. Garbage
    is collected at the run's thresholds: what it is sent is many long-lived objects (at
    the default ones, the diff of a global change at 10,000 releases took 1.9 s longer)."""
    gc.set_threshold(*thresholds)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _task_terminated)

    def watch() -> None:
        with contextlib.suppress(EOFError, OSError):
            stop.recv()
        _task.by_run = True
        _task.stopped = True  # before the signal: a task about to start sees it
        os.kill(os.getpid(), signal.SIGTERM)
        parent = multiprocessing.parent_process()
        if parent is None:
            return
        # Whenever the run dies, nobody will collect an answer or send the last task
        # (the end of the queue): between tasks, leave; a running task leaves in `_run`.
        multiprocessing.connection.wait([parent.sentinel])
        if not _task.running:
            os._exit(_ENDED)

    threading.Thread(target=watch, name="ending", daemon=True).start()


def _task_terminated(signal_number: int, _: object) -> None:
    _task.stopped = True
    if _task.running:
        if not _task.interrupted:
            _task.interrupted = True
            # The task unwinds as the run would (its sandboxes stopped, its temporary files
            # removed); `_run` then leaves if the run is gone.
            raise SystemExit(_ENDED)
    elif _orphaned():
        os._exit(_ENDED)  # between tasks, or answering: nobody would collect the answer


def _run(task: Callable[..., T], *args: Any) -> T:
    if _task.stopped:  # asked to stop before it started (queued, or arriving)
        if not _task.by_run:
            os._exit(_ENDED)  # from outside, while idle or answering: leave now, between messages
        raise SystemExit(_ENDED)
    try:
        _task.running = True  # inside: a SIGTERM right after it is the task's, caught below
        return task(*args)
    except SystemExit:  # raised by `_task_terminated`
        if not _task.by_run:
            os._exit(_ENDED)  # unwound (its sandbox stopped): ended from outside, as above
        raise
    finally:
        _task.running = False
        if _orphaned():  # killed meanwhile: the answer has nowhere to go
            os._exit(_ENDED)


def _orphaned() -> bool:
    parent = multiprocessing.parent_process()
    return parent is not None and not parent.is_alive()
