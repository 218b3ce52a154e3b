"""Red team, CI logs: no text from a pull request is taken for a GitHub Actions workflow command.

The runner reads every line a step prints: one starting with `::` (after blanks) or holding
`##[` is a command (annotations, `add-mask`, `stop-commands`). File names and values come
from the pull request, and reviewer prints both (release ids, diff lines).
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys

from conftest import GitRepo, git

from reviewer.console import Console, stopping_workflow_commands

_INJECTED = "\n::error title=injected::from a directory name"
_STOP = re.compile(r"::stop-commands::([0-9a-f]{64})")


def _hostile_change(git_repo: GitRepo) -> None:
    git_repo.write("deployments/apps/web/deployment.yaml", "apps: [{template: app}]\n")
    git_repo.write("deployments/prod/eu/cluster.values.yaml", "where: eu\n")
    git_repo.write("deployments/prod/eu/apps/.keep", "")
    git_repo.commit("fleet")
    git(git_repo.root, "checkout", "--quiet", "-b", "feature")
    cluster = f"deployments/prod/eu{_INJECTED}"
    git_repo.write(f"{cluster}/cluster.values.yaml", "where: there\n")
    git_repo.write(f"{cluster}/apps/.keep", "")
    git_repo.write("deployments/prod/eu/cluster.values.yaml", "where: '##[error]from a value'\n")


def _diff(git_repo: GitRepo, **env: str) -> subprocess.CompletedProcess[str]:
    local = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS")}
    return subprocess.run(
        [sys.executable, "-m", "reviewer", "diff", "--base", "main", "-j1"],
        cwd=git_repo.root,
        capture_output=True,
        text=True,
        env={**local, **env},
        check=False,
    )


def _commands(lines: list[str]) -> list[str]:
    """The lines the runner takes for commands: it starts and resumes as the runner does."""
    taken, stopped = [], None
    for line in lines:
        if stopped is not None:
            if line.strip() == f"::{stopped}::":
                stopped = None
            continue
        if line.lstrip().startswith("::") or "##[" in line:
            taken.append(line)
            found = _STOP.fullmatch(line.strip())
            stopped = found.group(1) if found else None
    return taken


def test_pull_request_text_in_the_log_is_never_a_workflow_command(git_repo: GitRepo) -> None:
    _hostile_change(git_repo)
    done = _diff(git_repo, GITHUB_ACTIONS="true")
    both = done.stderr + done.stdout
    assert "::error title=injected::" in both and "##[error]from a value" in both
    errors = done.stderr.splitlines()
    # Stopped before anything else is printed, resumed at the end, with a token nobody
    # could have written into the pull request.
    stop = _STOP.fullmatch(errors[0])
    assert stop is not None
    assert errors[-1] == f"::{stop.group(1)}::"
    assert _commands(errors) == [errors[0]]
    # The report on stdout is printed while commands are stopped (stderr's first line).
    assert _commands([errors[0], *done.stdout.splitlines(), errors[-1]]) == [errors[0]]
    assert done.stdout.count(stop.group(1)) == 0


def test_outside_github_actions_nothing_is_added(git_repo: GitRepo) -> None:
    _hostile_change(git_repo)
    done = _diff(git_repo)
    assert "stop-commands" not in done.stderr + done.stdout
    assert "::error title=injected::" in done.stdout


def test_our_own_notices_still_reach_the_runner() -> None:
    """`::notice` annotations reviewer writes itself (a closed pull request, no permission
    to comment) resume commands for their line only."""
    out = io.StringIO()
    errors = io.StringIO()
    with stopping_workflow_commands({"GITHUB_ACTIONS": "true"}, errors) as token:
        console = Console(out=out, err=errors, commands_token=token)
        console.write(f"release prod/eu{_INJECTED}\n")
        console.workflow_command("::notice title=reviewer::#12 is closed")
    lines = [*errors.getvalue().splitlines()[:1], *out.getvalue().splitlines()]
    lines.append(errors.getvalue().splitlines()[-1])
    assert _commands(lines) == [lines[0], "::notice title=reviewer::#12 is closed", lines[0]]


def test_our_notice_stays_one_line_whatever_it_quotes() -> None:
    """A notice naming a pull request's branch or file: a line feed in it must not give
    the runner a second command while commands are resumed for that one line."""
    out, errors = io.StringIO(), io.StringIO()
    with stopping_workflow_commands({"GITHUB_ACTIONS": "true"}, errors) as token:
        Console(out=out, err=errors, commands_token=token).workflow_command(
            f"::notice title=reviewer::branch {_INJECTED}"
        )
    lines = [errors.getvalue().splitlines()[0], *out.getvalue().splitlines()]
    assert _commands(lines) == [
        lines[0],
        "::notice title=reviewer::branch \\n::error title=injected::from a directory name",
        lines[0],
    ]
