"""Processes read from /proc (Linux): to show that none is left behind."""

from __future__ import annotations

import os
from pathlib import Path


def children() -> list[tuple[int, str]]:
    """This process's child processes and their states (R, S, Z, ...)."""
    found: list[tuple[int, str]] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="ascii", errors="replace")
        except OSError:
            continue  # gone meanwhile
        state, parent = stat[stat.rindex(")") + 2 :].split()[:2]
        if int(parent) == os.getpid():
            found.append((int(entry.name), state))
    return found


def in_session(session: int) -> list[tuple[int, str]]:
    """Every process of session `session` (a child started with `start_new_session`) and
    its state: what it leaves behind is found even once reparented."""
    found: list[tuple[int, str]] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="ascii", errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[3]) == session:
            found.append((int(entry.name), fields[0]))
    return found
