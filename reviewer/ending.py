"""How a run ends when asked to (SIGTERM): as an error does, in every process of the run.

SIGTERM's default action kills a process at once: the template sandboxes, a planning
process and their temporary directories would outlive it. Turned into `SystemExit`, it
unwinds the run as an exception does. A planning process started by the run is also
ended when the run ends, or when the process that started it is gone (killed).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.connection import Connection


def terminated(signal_number: int, _: object) -> None:
    """SIGTERM's handler: raise `SystemExit(143)`; a second SIGTERM kills at once."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise SystemExit(128 + signal_number)


def follow(stop: Connection) -> None:
    """In a spawned process: end it as SIGTERM does when `stop` says so, or closes
    because the process holding its other end is gone."""
    signal.signal(signal.SIGTERM, terminated)

    def watch() -> None:
        with contextlib.suppress(EOFError, OSError):
            stop.recv()
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="ending", daemon=True).start()


def leave_if_orphaned() -> None:
    """In a spawned process, once its work is cleaned up: exit when the process that
    started it is gone, as nobody would collect a result or tell it to stop (it would wait
    for its next task for ever)."""
    parent = multiprocessing.parent_process()
    if parent is not None and not parent.is_alive():
        os._exit(128 + signal.SIGTERM)


@contextlib.contextmanager
def one_process() -> Iterator[ProcessPoolExecutor]:
    """A pool of one spawned process that ends with this run: an exception leaving the
    block (an error, SIGTERM, Ctrl-C) ends its work as SIGTERM would, and leaving waits
    for it, so that no process is left behind."""
    spawn = multiprocessing.get_context("spawn")
    stop, stop_there = spawn.Pipe()
    executor = ProcessPoolExecutor(1, mp_context=spawn, initializer=follow, initargs=(stop_there,))
    try:
        yield executor
    except BaseException:
        stop.close()  # the run is ending: so is the other process's work
        raise
    finally:
        executor.shutdown(cancel_futures=True)
        stop.close()
        stop_there.close()
