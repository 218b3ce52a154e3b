"""Red team, resources: loops, allocations and deep nesting fail one release (issue #12 item 5)."""

from __future__ import annotations

import pytest
from conftest import Repo

from reviewer.gotmpl import TemplateRenderer
from reviewer.limits import LimitFlags, Limits
from reviewer.model import Snapshot
from reviewer.sandbox import Sandbox, Task
from reviewer.side import SideOptions, render_side
from reviewer.tooling import Tooling, open_tooling


def _render(repo: Repo, limits: LimitFlags) -> Snapshot:
    tooling = Tooling(limits=limits)
    with open_tooling(tooling) as tools:
        return render_side(
            repo.root,
            options=SideOptions(),
            tools=tools,
            renderer=TemplateRenderer(limits.over(Limits())),
        ).snapshot


def _two_releases(repo: Repo, hostile: str) -> Repo:
    repo.write("charts/bad/Chart.yaml", "apiVersion: v2\nname: bad\nversion: 1.0.0\n")
    repo.write("charts/bad/templates/x.yaml", hostile)
    repo.write(
        "templates/app/helmfile.yaml.gotmpl",
        "releases:\n  - {name: good, chart: ../../charts/dump}\n"
        "  - {name: bad, chart: ../../charts/bad}\n",
    )
    return repo.write("deployments/g/c/apps/d/deployment.yaml", "apps: [{template: app}]\n")


def _by_name(snapshot: Snapshot) -> dict[str, str | None]:
    return {r.id.release: r.error for r in snapshot.releases}


def test_endless_loop_is_stopped_at_the_time_limit(repo: Repo) -> None:
    hostile = "{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}\n"
    snapshot = _render(_two_releases(repo, hostile), LimitFlags(seconds=3))
    errors = _by_name(snapshot)
    assert errors["good"] is None
    assert "time limit of 3s" in (errors["bad"] or "")


def test_huge_allocation_is_stopped_at_the_memory_or_output_limit(
    repo: Repo, capfd: pytest.CaptureFixture[str]
) -> None:
    # The cap is the child's whole address space, and the Go runtime alone reserves well
    # over 1 GiB of it: a cap near that left the good release no room for one more thread
    # or heap arena when the machine was busy. 4 GiB is twice the default every other
    # render of the suite runs under; 40 GB can never fit, so the hostile release dies
    # at its first allocation instead of first writing hundreds of megabytes.
    hostile = 'a: {{ "x" | repeat 40000000000 }}\n'
    snapshot = _render(_two_releases(repo, hostile), LimitFlags(memory_mib=4096, output_mib=8))
    errors = _by_name(snapshot)
    assert errors["good"] is None
    assert "limit" in (errors["bad"] or "")
    assert "memory limit of 4096 MiB" in (errors["bad"] or "")
    # The child's dying words (Go's dump of every goroutine) are not printed.
    printed = capfd.readouterr()
    assert "goroutine" not in printed.err + printed.out


def test_output_limit(repo: Repo) -> None:
    hostile = 'a: {{ "x" | repeat 3000000 }}\n'
    snapshot = _render(_two_releases(repo, hostile), LimitFlags(output_mib=1))
    errors = _by_name(snapshot)
    assert errors["good"] is None
    assert "output limit of 1 MiB" in (errors["bad"] or "")


def test_values_nested_1500_levels_is_a_depth_error(repo: Repo) -> None:
    deep = "".join("  " * i + "k:\n" for i in range(1500)) + "  " * 1500 + "v: 1\n"
    repo.write("deployments/g/c/apps/d/deployment.yaml", "apps: [{template: app}]\n")
    repo.write("deployments/g/c/apps/d/values.yaml", deep)
    snapshot = _render(repo, LimitFlags())
    assert "depth limit" in "".join(r.error or "" for r in snapshot.releases)


def test_endless_loop_in_app_template_is_stopped(repo: Repo) -> None:
    repo.write(
        "templates/app/helmfile.yaml.gotmpl",
        "{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}releases: []\n",
    )
    repo.write("deployments/g/c/apps/d/deployment.yaml", "apps: [{template: app}]\n")
    snapshot = _render(repo, LimitFlags(seconds=3))
    assert "time limit of 3s" in "".join(r.error or "" for r in snapshot.releases)


_ENDLESS = "{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}\n"
_HUGE = '{{ "x" | repeat 40000000000 }}\n'


@pytest.mark.parametrize(
    ("hostile", "limits", "said", "runs"),
    [
        # Past the time limit once, past it every time: run once, not once per deployment
        # (with many deployments a pull request could hold a review for hours).
        (_ENDLESS, LimitFlags(seconds=2), "time limit of 2s", 1),
        # A child that died is not remembered (it may have been killed from outside, or
        # filled by earlier renders): each render gets a fresh child.
        (_HUGE, LimitFlags(memory_mib=4096), "memory limit of 4096 MiB", 3),
    ],
)
def test_a_file_every_deployment_reads_past_a_limit(
    repo: Repo,
    monkeypatch: pytest.MonkeyPatch,
    hostile: str,
    limits: LimitFlags,
    said: str,
    runs: int,
) -> None:
    """A cluster's values template crosses a limit: each of its deployments fails, naming
    the file and the limit."""
    repo.write("deployments/g/c/cluster.values.yaml.gotmpl", hostile)
    repo.write(
        "templates/app/helmfile.yaml.gotmpl", "releases: [{name: app, chart: ../../charts/dump}]\n"
    )
    for index in range(3):
        repo.write(f"deployments/g/c/apps/d{index}/deployment.yaml", "apps: [{template: app}]\n")
    alone: list[object] = []
    run = Sandbox.run

    def counted(sandbox: Sandbox, task: Task) -> object:
        if task.kind == "gotmpl" and task.payload[0] == hostile:
            alone.append(task)
        return run(sandbox, task)

    monkeypatch.setattr(Sandbox, "run", counted)
    snapshot = _render(repo, limits)
    errors = [*snapshot.errors, *(r.error for r in snapshot.releases if r.error)]
    assert len(errors) == 3, errors
    for error in errors:
        assert "cluster.values.yaml.gotmpl" in error and said in error
    assert len(alone) == runs
