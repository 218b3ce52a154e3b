"""Render failures: which fail the run (the change's own) and which are only still there."""

from __future__ import annotations

import json

import pytest
from conftest import GitRepo, git
from test_diff_command import fleet, run_diff

from reviewer.errors import ExitStatus

__all__ = ["fleet"]  # the fixture, used by name

BROKEN = "deployments/dev/a/cluster.values.yaml:1: malformed YAML"


def broken_on_main(fleet: GitRepo) -> None:
    """dev/a fails on the target branch; the change touches only the prod group."""
    fleet.write("deployments/dev/a/cluster.values.yaml", "where: [broken\n")
    fleet.commit("broken on main")
    git(fleet.root, "branch", "--quiet", "-f", "main")
    fleet.write("deployments/prod/group.values.yaml", "tier: platinum\n")


def test_a_failure_on_both_sides_is_still_failing_and_does_not_fail_the_run(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    broken_on_main(fleet)
    code, out, _ = run_diff(["--repo", str(fleet.root), "--base", "main"], capsys)
    assert code == ExitStatus.OK
    assert out.count(BROKEN) == 1
    assert (
        "warning: dev/a/base/* still fails to render, with the same error on both sides "
        "(target branch and merge result)" in out
    )
    assert "failing (not blocking) dev/a/base/*: on the target branch and merge result" in out


def test_still_failing_is_listed_once_in_json_and_markdown(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    broken_on_main(fleet)
    base = ["--repo", str(fleet.root), "--base", "main"]
    code, out, _ = run_diff([*base, "--format", "json"], capsys)
    assert code == ExitStatus.OK
    report = json.loads(out)
    assert (report["base"]["errors"], report["head"]["errors"]) == ([], [])
    (still,) = report["stillFailing"]
    assert (still["cluster"], still["deployment"], still["blocking"]) == ("dev/a", "base", False)
    assert out.count(BROKEN) == 1
    code, markdown, _ = run_diff([*base, "--format", "markdown"], capsys)
    assert code == ExitStatus.OK
    assert markdown.count(BROKEN) == 1
    assert "does not render" not in markdown.splitlines()[0]
    assert "fails to render on the target branch and merge result (not blocking)" in markdown


def test_fail_on_preexisting_makes_a_still_failing_release_fail_the_run(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    broken_on_main(fleet)
    args = ["--repo", str(fleet.root), "--base", "main", "--fail-on-preexisting"]
    code, out, _ = run_diff(args, capsys)
    assert code == ExitStatus.RENDER_FAILED
    assert "FAILED dev/a/base/*: on the target branch and merge result" in out
    code, out, _ = run_diff([*args, "--format", "json"], capsys)
    assert json.loads(out)["stillFailing"][0]["blocking"] is True


def test_a_failure_the_change_introduces_fails_the_run_and_names_its_side(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    broken_on_main(fleet)
    fleet.write("deployments/dev/b/cluster.values.yaml", "where: [also broken\n")
    code, out, _ = run_diff(["--repo", str(fleet.root), "--base", "main"], capsys)
    assert code == ExitStatus.RENDER_FAILED
    assert "FAILED dev/b/base/*: on the merge result: deployments/dev/b/" in out
    assert "failing (not blocking) dev/a/base/*" in out


def test_a_failure_that_changes_its_error_counts_as_the_changes_own(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    broken_on_main(fleet)
    fleet.write("deployments/dev/a/cluster.values.yaml", "where: {broken differently\n")
    code, out, _ = run_diff(["--repo", str(fleet.root), "--base", "main"], capsys)
    assert code == ExitStatus.RENDER_FAILED
    assert "FAILED dev/a/base/*: on the merge result" in out
    assert "target branch failed to render dev/a/base/*" in out
