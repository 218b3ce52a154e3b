"""`reviewer explain` and `reviewer values` as functions, with their `ReleaseArgs`."""

from __future__ import annotations

import pytest
from commandargs import memory_console
from conftest import Repo

from reviewer.commands.explain import ReleaseArgs, explain, values
from reviewer.errors import ExitStatus, ReviewerError, UsageProblem


@pytest.fixture
def layered(repo: Repo) -> Repo:
    """One release whose replicas the cluster level overrides."""
    repo.write("deployments/global.values.yaml", "replicas: 2\n")
    repo.write("deployments/c/cluster.values.yaml", "replicas: 5\n")
    repo.write("deployments/c/apps/web/deployment.yaml", "apps: [{template: app}]\n")
    return repo


def test_explain_names_the_winning_file_and_what_it_overrides(layered: Repo) -> None:
    console, out, _ = memory_console()
    status = explain(ReleaseArgs(layered.root, "c", "web", "app"), "replicas", console)
    assert status is ExitStatus.OK
    (line,) = out.getvalue().splitlines()
    assert line.startswith("replicas: 5  ← deployments/c/cluster.values.yaml")
    assert line.split("(overrides ", 1)[1].startswith("deployments/global.values.yaml")


def test_explain_of_a_path_with_no_value_is_a_usage_problem(layered: Repo) -> None:
    console, _, _ = memory_console()
    with pytest.raises(UsageProblem, match="no value at or under 'nothing'"):
        explain(ReleaseArgs(layered.root, "c", "web", "app"), "nothing", console)


def test_values_prints_the_merged_values_as_yaml(layered: Repo) -> None:
    console, out, _ = memory_console()
    args = ReleaseArgs(layered.root, "c", "web", "app")
    assert values(args, redact=True, in_ci=False, console=console) is ExitStatus.OK
    assert "replicas: 5\n" in out.getvalue()
    assert "atlas:" in out.getvalue()


def test_clear_text_values_are_refused_in_ci(layered: Repo) -> None:
    console, out, _ = memory_console()
    args = ReleaseArgs(layered.root, "c", "web", "app")
    with pytest.raises(ReviewerError, match="--no-redact is refused in CI"):
        values(args, redact=False, in_ci=True, console=console)
    assert out.getvalue() == ""
