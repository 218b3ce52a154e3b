"""`reviewer diff` and `reviewer merge` as functions, with their `DiffArgs` and `ReportArgs`."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from commandargs import diff_args, memory_console
from conftest import GitRepo

from reviewer.commands import diff, merge
from reviewer.errors import ExitStatus

APP = "apps: [{template: app}]\n"


def changed(git_repo: GitRepo) -> GitRepo:
    """Two clusters committed on main; the working tree changes the replicas of one."""
    git_repo.write("deployments/a/apps/web/deployment.yaml", APP)
    git_repo.write("deployments/b/apps/web/deployment.yaml", APP)
    git_repo.commit("fleet")
    git_repo.write("deployments/b/cluster.values.yaml", "replicas: 3\n")
    return git_repo


def test_diff_reports_the_changed_release_as_json(git_repo: GitRepo, tmp_path: Path) -> None:
    console, out, _ = memory_console()
    status = diff.run(diff_args(changed(git_repo).root, tmp_path), console)
    assert status is ExitStatus.OK
    report = json.loads(out.getvalue())
    assert report["schema"] == "reviewer.report/v1"
    assert {r["cluster"]: r["status"] for r in report["releases"]} == {
        "a": "unchanged",
        "b": "changed",
    }
    assert report["summary"]["releases"]["changed"] == 1


def test_exit_code_asks_for_status_two_on_changes(git_repo: GitRepo, tmp_path: Path) -> None:
    args = diff_args(changed(git_repo).root, tmp_path, output_format="text")
    args = replace(args, report=replace(args.report, exit_code=True))
    console, out, _ = memory_console()
    assert diff.run(args, console) is ExitStatus.CHANGES
    assert "1 changed, 0 added, 0 removed, 0 failed, 1 unchanged release(s)" in out.getvalue()


def test_saved_sides_merge_into_the_same_report(git_repo: GitRepo, tmp_path: Path) -> None:
    repo = changed(git_repo).root
    console, direct, _ = memory_console()
    diff.run(diff_args(repo, tmp_path, save=tmp_path / "saved"), console)
    console, merged, _ = memory_console()
    status = merge.run([tmp_path / "saved"], diff_args(repo, tmp_path).report, console)
    assert status is ExitStatus.OK
    assert json.loads(merged.getvalue())["releases"] == json.loads(direct.getvalue())["releases"]
