"""`reviewer render` as a function (`reviewer.commands.render.run`) with its `RenderArgs`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from commandargs import memory_console, tooling
from conftest import Repo

from reviewer.commands.render import RenderArgs, run
from reviewer.errors import ExitStatus, ReviewerError
from reviewer.side import SideOptions

APP = "apps: [{template: app}]\n"


def test_render_writes_the_snapshot_and_counts_the_releases(repo: Repo, tmp_path: Path) -> None:
    repo.write("deployments/a/apps/web/deployment.yaml", APP)
    repo.write("deployments/b/apps/web/deployment.yaml", APP)
    console, out, err = memory_console()
    args = RenderArgs(repo.root, tmp_path / "out", SideOptions(), tooling=tooling(tmp_path))
    assert run(args, console) is ExitStatus.OK
    index = json.loads((tmp_path / "out" / "index.json").read_text())
    assert sorted(r["cluster"] for r in index["releases"]) == ["a", "b"]
    assert "2 release(s) rendered, 0 failed" in err.getvalue()
    assert out.getvalue() == ""


def test_a_failed_release_is_named_and_sets_the_status(repo: Repo, tmp_path: Path) -> None:
    repo.write("deployments/a/apps/web/deployment.yaml", "apps: [{template: nosuch}]\n")
    console, _, err = memory_console()
    args = RenderArgs(repo.root, tmp_path / "out", SideOptions(), tooling=tooling(tmp_path))
    assert run(args, console) is ExitStatus.RENDER_FAILED
    assert "FAILED a/web/*" in err.getvalue()


def test_clear_text_output_is_refused_in_ci(repo: Repo, tmp_path: Path) -> None:
    console, _, _ = memory_console()
    args = RenderArgs(repo.root, tmp_path / "out", SideOptions(), redact=False, in_ci=True)
    with pytest.raises(ReviewerError, match="--no-redact is refused in CI"):
        run(args, console)
    assert not (tmp_path / "out").exists()
