"""Work handed to another process ends with the run: on an error, on SIGTERM, when killed."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest
from processes import children, left_in_session

from reviewer import ending

_SAID_STARTED = "started"


def _started_then_sleep(flag: str) -> None:
    """A long task that says when it runs (pickled by name: runs over there)."""
    Path(flag).write_text(_SAID_STARTED, encoding="ascii")
    time.sleep(600)


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert time.monotonic() < deadline, "the task never started"
        time.sleep(0.05)


def test_an_error_of_the_run_ends_the_task_over_there(tmp_path: Path) -> None:
    flag = tmp_path / "flag"
    with pytest.raises(ValueError), ending.one_process() as worker:
        future = worker.submit(_started_then_sleep, str(flag))
        _wait_for(flag)
        raise ValueError("this run failed")
    # Ended as SIGTERM ends a run, not finished (it would have slept ten minutes).
    failure = future.exception()
    assert isinstance(failure, SystemExit)
    assert failure.code == 128 + signal.SIGTERM


class _SlowToArrive:
    """An argument that takes two seconds to unpickle over there, saying when it begins."""

    def __init__(self, flag: str) -> None:
        self.flag = flag

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return _arrive_slowly, (self.flag,)


def _arrive_slowly(flag: str) -> _SlowToArrive:
    Path(flag).write_text(_SAID_STARTED, encoding="ascii")
    time.sleep(2)
    return _SlowToArrive(flag)


def _sleep(_: object) -> None:
    time.sleep(600)


def test_a_run_ending_before_the_task_starts_there_ends_it_too(tmp_path: Path) -> None:
    """The stop comes while the task is on its way: it must not start afterwards."""
    flag = tmp_path / "flag"
    with pytest.raises(ValueError), ending.one_process() as worker:
        future = worker.submit(_sleep, _SlowToArrive(str(flag)))
        _wait_for(flag)
        raise ValueError("this run failed")
    failure = future.exception()
    assert isinstance(failure, SystemExit)
    assert failure.code == 128 + signal.SIGTERM


def test_a_task_gives_its_answer() -> None:
    with ending.one_process() as worker:
        assert worker.submit(sorted, [3, 1, 2]).result() == [1, 2, 3]


_KILLED_WHILE = """
import os, sys, time
from pathlib import Path
from reviewer import ending

if __name__ == "__main__":
    flag = Path(sys.argv[1])
    with ending.one_process() as worker:
        if sys.argv[2] == "working":
            worker.submit(time.sleep, 600)
            time.sleep(2)  # the task runs over there
        else:
            worker.submit(sorted, [2, 1]).result()  # done: it waits for its next task
        flag.write_text("ready")
        os._exit(9)  # as SIGKILL would end it: nothing cleans up
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("moment", ["working", "idle"])
def test_the_process_over_there_outlives_no_killed_run(tmp_path: Path, moment: str) -> None:
    flag = tmp_path / "flag"
    with subprocess.Popen(
        [sys.executable, "-c", _KILLED_WHILE, str(flag), moment], start_new_session=True
    ) as run:
        assert run.wait(timeout=120) == 9
    assert flag.exists()
    assert left_in_session(run.pid) == []


def _say_pid(flag: str) -> None:
    said = Path(f"{flag}.part")
    said.write_text(str(os.getpid()), encoding="ascii")
    said.rename(flag)  # whole: read as soon as it exists


def _say_pid_then_sleep(flag: str) -> None:
    _say_pid(flag)
    time.sleep(600)


def _ended(pid: int) -> None:
    deadline = time.monotonic() + 60
    while any(child == pid and state != "Z" for child, state in children()):
        assert time.monotonic() < deadline, "the process over there is still running"
        time.sleep(0.05)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("moment", ["working", "idle"])
def test_a_process_ended_from_outside_leaves_its_work_to_the_run(
    tmp_path: Path, moment: str
) -> None:
    """An out-of-memory guard sends SIGTERM to the largest process: that process ends (a
    running task unwound first; an idle one at its next task, never while it answers), and
    the run is told it died, as when it is killed: the run then does the work itself
    (planning and the diff do)."""
    flag = tmp_path / "flag"
    with ending.one_process() as worker:
        if moment == "working":
            future = worker.submit(_say_pid_then_sleep, str(flag))
            _wait_for(flag)
            pid = int(flag.read_text(encoding="ascii"))
        else:
            pid = worker.submit(os.getpid).result(timeout=60)
        os.kill(pid, signal.SIGTERM)
        if moment == "working":
            with pytest.raises(BrokenProcessPool):
                future.result(timeout=60)
            _ended(pid)
        try:
            late = worker.submit(sorted, [2, 1])
        except OSError:
            pass  # the pool knows: no process to be had
        else:
            with pytest.raises(BrokenProcessPool):
                late.result(timeout=60)
        _ended(pid)


_ANSWER = 8 << 20  # bytes: an answer sent in many writes


def _slow_writes(flag: str) -> None:
    """Over there: each write of an answer takes 10 ms, and the first says the answer is
    on its way (`_say_pid`), so a signal lands mid-answer."""
    from multiprocessing import connection

    send = connection.Connection._send  # type: ignore[attr-defined]

    def slowly(self: object, buf: bytes, *_: object) -> None:
        for start in range(0, len(buf), 1 << 16):
            time.sleep(0.01)
            send(self, buf[start : start + (1 << 16)])
            if not Path(flag).exists():
                _say_pid(flag)

    connection.Connection._send = slowly  # type: ignore[attr-defined]


def _big_answer(flag: str) -> bytes:
    _slow_writes(flag)
    return b"x" * _ANSWER


_ENDED_WHILE_ANSWERING = """
import os, signal, sys, time
from pathlib import Path

sys.path.insert(0, sys.argv[2])
from reviewer import ending
from test_ending import _big_answer, _wait_for

if __name__ == "__main__":
    flag = Path(sys.argv[1])
    with ending.one_process() as worker:
        future = worker.submit(_big_answer, str(flag))
        _wait_for(flag)  # the answer is being written, 64 KiB every 10 ms
        os.kill(int(flag.read_text(encoding="ascii")), signal.SIGTERM)
        print(len(future.result(timeout=60)))
"""


def test_a_process_ended_from_outside_while_it_answers_still_answers(tmp_path: Path) -> None:
    """Ending while the answer is on its way would cut it short: the run would wait for
    the rest for ever (here: until the time-out below). The answer arrives whole; the
    process leaves at its next task."""
    flag = tmp_path / "flag"
    here = str(Path(__file__).parent)
    with subprocess.Popen(
        [sys.executable, "-c", _ENDED_WHILE_ANSWERING, str(flag), here],
        stdout=subprocess.PIPE,
        start_new_session=True,
    ) as run:
        try:
            out, _ = run.communicate(timeout=60)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run.pid, signal.SIGKILL)  # a hung run is not left behind
    assert run.returncode == 0
    assert out.split() == [str(_ANSWER).encode()]
