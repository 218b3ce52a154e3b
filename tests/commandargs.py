"""What the command tests share: a console writing to memory, and the arguments the CLI builds."""

from __future__ import annotations

import io
import os
from pathlib import Path

from reviewer.commands.diff import DiffArgs, ReportArgs
from reviewer.console import Console
from reviewer.proc import Programs
from reviewer.side import SideOptions
from reviewer.tooling import Tooling


def memory_console() -> tuple[Console, io.StringIO, io.StringIO]:
    """A console and its two streams: results (`out`) and messages (`err`)."""
    out, err = io.StringIO(), io.StringIO()
    return Console(out=out, err=err, no_color=True), out, err


def tooling(tmp_path: Path) -> Tooling:
    """One process, a chart cache under `tmp_path`."""
    return Tooling(cache_dir=tmp_path / "chart-cache", jobs=1)


def diff_args(
    repo: Path, tmp_path: Path, *, output_format: str = "json", save: Path | None = None
) -> DiffArgs:
    """`reviewer diff --base main` on the working tree of `repo`, report to stdout."""
    return DiffArgs(
        repo=repo,
        base="main",
        head=None,
        merge=False,
        directories=None,
        options=SideOptions(programs=Programs.from_environment(os.environ)),
        definitions=None,
        templates=None,
        report=ReportArgs(output_format=output_format, differ="builtin", pager=False),
        tooling=tooling(tmp_path),
        save=save,
    )
