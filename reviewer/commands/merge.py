"""`reviewer merge`: one report from the saved sides of several CI shards."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from reviewer import shards
from reviewer.commands.diff import ReportArgs, finish
from reviewer.console import Console
from reviewer.errors import ExitStatus


def run(directories: Sequence[Path], args: ReportArgs, console: Console) -> ExitStatus:
    """Load every shard's saved sides, combine them, and report like `reviewer diff`.

    Every shard must be given exactly once: a missing or doubled shard is an error, never a
    partial review.
    """
    pair = shards.merge_saved(directories)
    return finish(pair, args, console)
