"""Processes read from /proc (Linux): to show that none is left behind."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path


def _processes() -> Iterator[tuple[int, list[str]]]:
    """Every process's pid and the fields of its `stat` after the command name."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="ascii", errors="replace")
        except OSError:
            continue  # gone meanwhile
        yield int(entry.name), stat[stat.rindex(")") + 2 :].split()


def children(parent: int | None = None) -> list[tuple[int, str]]:
    """The child processes of `parent` (default: this process) and their states (R, S, Z,
    ...)."""
    parent = os.getpid() if parent is None else parent
    return [(pid, fields[0]) for pid, fields in _processes() if int(fields[1]) == parent]


def in_session(session: int) -> list[tuple[int, str]]:
    """Every process of session `session` (a child started with `start_new_session`) and
    its state: what it leaves behind is found even once reparented."""
    return [(pid, fields[0]) for pid, fields in _processes() if int(fields[3]) == session]


def left_in_session(session: int, *, within: float = 30) -> list[tuple[int, str]]:
    """What is still in session `session` once it empties, or after `within` seconds
    (processes of a killed run end on their own, not at once)."""
    deadline = time.monotonic() + within
    while (left := in_session(session)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left
