"""What the command tests share: a console writing to memory, the arguments the CLI builds,
and the CLI itself run through `cli.main`."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import GitRepo

from reviewer.cli import main
from reviewer.commands.diff import DiffArgs, ReportArgs
from reviewer.console import Console
from reviewer.errors import ExitStatus
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


def run_cli(args: Sequence[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`reviewer ARGS` through `cli.main`: its exit status, standard output and error."""
    with pytest.raises(SystemExit) as done:
        main(list(args))
    captured = capsys.readouterr()
    code = done.value.code
    assert isinstance(code, int)
    return code, captured.out, captured.err


def diff_json(repo: GitRepo, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    """The JSON report of `reviewer diff --base main` on `repo`'s working tree (exit 0)."""
    code, out, _ = run_cli(
        ["diff", "--repo", str(repo.root), "--base", "main", "--format", "json", *extra], capsys
    )
    assert code == ExitStatus.OK, out
    report: dict[str, Any] = json.loads(out)
    return report
