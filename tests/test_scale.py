"""Rendering each distinct release once, in parallel, with deterministic output."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from conftest import GitRepo, Repo
from processes import children, in_session, left_in_session

from reviewer import plan_parts
from reviewer.cli import main
from reviewer.commands import diff as diff_cmd
from reviewer.console import Console
from reviewer.errors import ExitStatus
from reviewer.side import SideOptions
from reviewer.workers import PARALLEL_THRESHOLD

CLUSTERS = [f"g{g}/g{g}c{c}" for g in range(3) for c in range(6)]


AnyRepo = TypeVar("AnyRepo", bound=Repo)

# A Go template that renders for hours: only a time limit or a kill stops it.
_ENDLESS = "{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}\n"


def fleet(repo: AnyRepo, deployments: int = 3) -> AnyRepo:
    for cluster in CLUSTERS:
        repo.write(f"deployments/{cluster}/cluster.values.yaml", f"where: {cluster}\n")
        for number in range(deployments):
            repo.write(
                f"deployments/{cluster}/apps/d{number}/deployment.yaml", "apps: [{template: app}]\n"
            )
    return repo


def test_a_one_cluster_change_renders_only_that_clusters_releases(
    git_repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet(git_repo).commit("fleet")
    git_repo.write("deployments/g1/g1c2/cluster.values.yaml", "where: changed\n")
    with pytest.raises(SystemExit) as done:
        main(
            [
                "diff",
                "--repo",
                str(git_repo.root),
                "--base",
                "main",
                "--format",
                "json",
                "--jobs",
                "1",
            ]
        )
    assert done.value.code == ExitStatus.OK
    captured = capsys.readouterr()
    releases = len(CLUSTERS) * 3
    unrendered = f"{releases - 3} not rendered (every input the same on both sides)"
    assert f"base: 3 release(s) rendered, {unrendered}" in captured.err
    assert f"head: 3 release(s) rendered, {unrendered}" in captured.err
    report = json.loads(captured.out)
    assert report["summary"]["releases"]["changed"] == 3


def test_parallel_rendering_gives_identical_output(repo: Repo, tmp_path: Path) -> None:
    fleet(repo)
    assert len(CLUSTERS) * 3 >= PARALLEL_THRESHOLD, "the pool must really start"
    outputs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"out-{jobs}"
        with pytest.raises(SystemExit) as done:
            main(["render", str(repo.root), "--out", str(out), "--jobs", jobs])
        assert done.value.code == ExitStatus.OK
        outputs.append(
            {p.relative_to(out): p.read_text() for p in sorted(out.rglob("*")) if p.is_file()}
        )
    assert outputs[0] == outputs[1]
    assert len(outputs[0]) == len(CLUSTERS) * 3 + 1


def test_parallel_failures_stay_per_release(repo: Repo, tmp_path: Path) -> None:
    fleet(repo)
    repo.write(
        "charts/dump/templates/fail.yaml",
        '{{ if eq .Values.where "g2/g2c5" }}{{ fail "boom" }}{{ end }}\n',
    )
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as done:
        main(["render", str(repo.root), "--out", str(out), "--jobs", "2"])
    assert done.value.code == ExitStatus.RENDER_FAILED
    index = json.loads((out / "index.json").read_text())["releases"]
    failed = sorted(e["cluster"] for e in index if e["status"] == "error")
    assert failed == ["g2/g2c5"] * 3
    assert [e["cluster"] for e in index] == sorted(e["cluster"] for e in index)


def _json_report(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    with pytest.raises(SystemExit) as done:
        main([*args, "--format", "json"])
    assert done.value.code == ExitStatus.OK
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report


def test_shards_merge_into_the_unsharded_report(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet(git_repo).commit("fleet")
    git_repo.write("deployments/global.values.yaml", "tier: gold\n")
    git_repo.remove("deployments/g0/g0c1/apps/d2")
    git_repo.write("deployments/g2/g2c3/apps/new/deployment.yaml", "apps: [{template: app}]\n")
    diff = ["diff", "--repo", str(git_repo.root), "--base", "main", "--jobs", "1"]
    whole = _json_report(diff, capsys)
    saved = []
    for index in (1, 2, 3):
        directory = tmp_path / f"shard-{index}"
        shard = _json_report([*diff, "--shard", f"{index}/3", "--save", str(directory)], capsys)
        assert 0 < len(shard["releases"]) < len(whole["releases"])
        saved.append(str(directory))
    merged = _json_report(["merge", *saved], capsys)
    assert merged["releases"] == whole["releases"]
    assert merged["summary"] == whole["summary"]
    assert merged["base"] == whole["base"] and merged["head"] == whole["head"]


def test_shard_argument_is_validated(git_repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["diff", "--repo", str(git_repo.root), "--shard", "4/3"])
    assert done.value.code == ExitStatus.USAGE
    assert "'4/3' is not I/N with 1 <= I <= N" in capsys.readouterr().err


class _Terminal(io.StringIO):
    """A stream that says it is a terminal, like a user's shell."""

    def isatty(self) -> bool:
        return True


def test_progress_bars_show_on_a_terminal_only(git_repo: GitRepo) -> None:
    fleet(git_repo).commit("fleet")
    git_repo.write("deployments/global.values.yaml", "tier: gold\n")
    args = diff_cmd.DiffArgs(
        repo=git_repo.root,
        base="main",
        head=None,
        merge=False,
        directories=None,
        options=SideOptions(),
        definitions=None,
        templates=None,
        report=diff_cmd.ReportArgs(output_format="json"),
    )
    terminal, pipe = _Terminal(), io.StringIO()
    assert diff_cmd.run(args, Console(out=io.StringIO(), err=terminal)) == ExitStatus.OK
    assert diff_cmd.run(args, Console(out=io.StringIO(), err=pipe)) == ExitStatus.OK
    assert "rendering base" in terminal.getvalue() and "━" in terminal.getvalue()
    assert "━" not in pipe.getvalue()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_a_parallel_diff_leaves_no_process_behind(
    git_repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet(git_repo).commit("fleet")
    # Read by every deployment: both sides render every release, so the pool starts.
    git_repo.write("deployments/global.values.yaml", "everywhere: true\n")
    before = children()
    with pytest.raises(SystemExit) as done:
        main(["diff", "--repo", str(git_repo.root), "--base", "main", "--jobs", "2"])
    assert done.value.code == ExitStatus.OK
    assert "base: 54 release(s) rendered" in capsys.readouterr().err
    gc.collect()  # a template renderer's child is stopped when the renderer is collected
    assert [child for child in children() if child not in before] == []


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_a_parallel_diff_process_leaves_no_defunct_child(git_repo: GitRepo, tmp_path: Path) -> None:
    fleet(git_repo).commit("fleet")
    git_repo.write("deployments/global.values.yaml", "everywhere: true\n")  # renders all
    command = [sys.executable, "-m", "reviewer", "diff", "--repo", str(git_repo.root)]
    command += ["--base", "main", "--jobs", "2", "--output", str(tmp_path / "report.md")]
    # A new session whose id is the child's pid: whatever it leaves behind is findable,
    # even once reparented (an init that never reaps orphans keeps them defunct).
    with subprocess.Popen(
        command, stderr=subprocess.PIPE, start_new_session=True, cwd=tmp_path
    ) as process:
        _, errors = process.communicate()
    assert process.returncode == ExitStatus.OK, errors.decode()[-2000:]
    assert in_session(process.pid) == []


def _with_a_slow_release(git_repo: GitRepo) -> list[str]:
    """The fleet committed, then a global change and a new release that renders until the
    time limit; the `reviewer diff` command line that reviews them."""
    fleet(git_repo).commit("fleet")
    git_repo.write("deployments/global.values.yaml", "everywhere: true\n")  # renders all
    git_repo.write("charts/slow/Chart.yaml", "apiVersion: v2\nname: slow\nversion: 1.0.0\n")
    git_repo.write("charts/slow/templates/loop.yaml", _ENDLESS)
    helmfile = "releases: [{name: slow, chart: ../../charts/slow}]\n"
    git_repo.write("templates/slow/helmfile.yaml.gotmpl", helmfile)
    git_repo.write("deployments/g0/g0c0/apps/slow/deployment.yaml", "apps: [{template: slow}]\n")
    command = [sys.executable, "-m", "reviewer", "diff", "--repo", str(git_repo.root)]
    return [*command, "--base", "main", "--jobs", "2", "--format", "json"]


def test_a_diff_leaves_no_temporary_files_even_when_a_render_is_killed(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    """Sandboxes are killed, never asked to stop: what they write must still be removed."""
    command = [*_with_a_slow_release(git_repo), "--render-timeout", "2"]
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    # Every release's chart is copied (skipSchemaValidation defaults to true) in a sandbox.
    done = subprocess.run(
        command, capture_output=True, cwd=tmp_path, env={**os.environ, "TMPDIR": str(scratch)}
    )
    assert done.returncode == ExitStatus.RENDER_FAILED, done.stderr.decode()[-2000:]
    releases = json.loads(done.stdout)["releases"]
    assert [r["release"] for r in releases if r["status"] == "error"] == ["slow"]
    assert "time limit of 2s" in done.stdout.decode()
    assert sorted(p.name for p in scratch.iterdir()) == []


def _terminated(
    command: list[str],
    tmp_path: Path,
    *,
    under_way: Callable[[int, bytes], bool],
    settle: float,
    group: bool = False,
) -> None:
    """Run `command`, send it SIGTERM `settle` seconds after it is `under_way` (given its pid
    and stderr so far), and check that it ends as an error does: status 143, no process and
    no temporary file left. `group`: every process of the run gets SIGTERM (`timeout`,
    systemd), not only the command's."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    said = tmp_path / "stderr"
    with (
        said.open("wb") as errors,
        subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            cwd=tmp_path,
            env={**os.environ, "TMPDIR": str(scratch)},
            start_new_session=True,
        ) as process,
    ):
        try:
            deadline = time.monotonic() + 120
            while not under_way(process.pid, said.read_bytes()) and process.poll() is None:
                assert time.monotonic() < deadline, said.read_text()
                time.sleep(0.1)
            time.sleep(settle)
            if group:
                os.killpg(process.pid, signal.SIGTERM)
            else:
                process.terminate()
            status = process.wait(timeout=60)
        except BaseException:
            os.killpg(process.pid, signal.SIGKILL)  # a failing run is not left behind
            raise
    assert status == 128 + signal.SIGTERM, said.read_text()[-2000:]
    assert in_session(process.pid) == []
    assert sorted(p.name for p in scratch.iterdir()) == []


def test_a_terminated_diff_stops_its_processes_and_removes_its_files(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    """`kill`, `timeout` or a process manager sends SIGTERM: the run ends as on an error."""
    # The slow render would go on for ten minutes: the run must stop long before.
    command = [*_with_a_slow_release(git_repo), "--render-timeout", "600"]
    # A second after "rendering head", the slow release is rendering in a sandbox.
    _terminated(command, tmp_path, under_way=lambda _, said: b"rendering head" in said, settle=1)


def test_a_diff_terminated_while_planning_does_not_wait_for_a_slow_template(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    fleet(git_repo).commit("fleet")
    git_repo.write("deployments/g0/g0c0/cluster.values.yaml.gotmpl", _ENDLESS)  # planned on head
    command = [sys.executable, "-m", "reviewer", "diff", "--repo", str(git_repo.root)]
    command += ["--base", "main", "--format", "json", "--render-timeout", "600"]
    # Nothing is printed while planning: once a sandbox runs (the run is under way), four
    # seconds later the head side waits for the endless template.
    _terminated(command, tmp_path, under_way=lambda pid, _: len(in_session(pid)) > 1, settle=4)


def _with_a_slow_share(git_repo: GitRepo) -> list[str]:
    """306 deployments (a side planned in two processes), one of whose clusters in the
    other process's share has an endless Go template on both sides; a global change."""
    fleet(git_repo, deployments=17)
    cluster = next(cluster for cluster in CLUSTERS if plan_parts.in_second_share(cluster))
    git_repo.write(f"deployments/{cluster}/cluster.values.yaml.gotmpl", _ENDLESS)
    git_repo.commit("fleet")
    git_repo.write("deployments/global.values.yaml", "everywhere: true\n")
    command = [sys.executable, "-m", "reviewer", "diff", "--repo", str(git_repo.root)]
    return [*command, "--base", "main", "--format", "json", "--jobs", "2"]


def _planning_in_two(pid: int, _: bytes) -> bool:
    # This process, the resource tracker, the other planning process and a template
    # sandbox each: both halves are under way, and the other one is stuck.
    return len(in_session(pid)) >= 5


@pytest.mark.parametrize("group", [False, True])
def test_a_diff_terminated_while_planning_in_two_processes_stops_both(
    git_repo: GitRepo, tmp_path: Path, group: bool
) -> None:
    assert plan_parts.SPLIT_AT <= 306
    command = [*_with_a_slow_share(git_repo), "--render-timeout", "600"]
    _terminated(command, tmp_path, under_way=_planning_in_two, settle=2, group=group)


def test_a_planning_process_ended_from_outside_leaves_its_share_to_the_run(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    """An out-of-memory guard sends SIGTERM to the other planning process alone: the run
    plans that share itself and reports as usual (here the endless template fails at the
    time limit, in this process), instead of ending with status 143 and no word."""
    command = [*_with_a_slow_share(git_repo), "--render-timeout", "10"]
    with _planning_in_two_processes(command, subprocess.PIPE) as process:
        # The other planning process is the run's child with a child (its sandbox).
        deadline = time.monotonic() + 120
        while len(planning := [pid for pid, _ in children(process.pid) if children(pid)]) != 1:
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        os.kill(planning[0], signal.SIGTERM)
        out, errors = process.communicate(timeout=300)
    # The endless template fails on both sides alike: not a failure of the change.
    assert process.returncode == ExitStatus.OK, errors.decode()[-2000:]
    report = json.loads(out)
    failed = report["stillFailing"]
    assert len(failed) == 17
    (cluster,) = {error["cluster"] for error in failed}
    assert plan_parts.in_second_share(cluster)
    assert all("time limit of 10s" in error["message"] for error in failed)
    # Every other deployment of both shares was planned, rendered and compared.
    assert report["summary"]["releases"]["changed"] == len(CLUSTERS) * 17 - 17
    assert in_session(process.pid) == []


def test_a_killed_diff_leaves_no_planning_process_behind(git_repo: GitRepo, tmp_path: Path) -> None:
    """Killed outright (SIGKILL, the out-of-memory killer): nothing can clean up after this
    process, but the planning process it started, and that one's sandbox, end too."""
    command = [*_with_a_slow_share(git_repo), "--render-timeout", "600"]
    with _planning_in_two_processes(command, subprocess.DEVNULL) as process:
        process.kill()
        process.wait()
        assert left_in_session(process.pid) == []


@contextlib.contextmanager
def _planning_in_two_processes(
    command: list[str], output: int
) -> Iterator[subprocess.Popen[bytes]]:
    """`command` (`_with_a_slow_share`) running, two seconds after both planning processes
    are under way (the other one waits for the endless template); killed afterwards."""
    with subprocess.Popen(command, stdout=output, stderr=output, start_new_session=True) as process:
        try:
            deadline = time.monotonic() + 120
            while not _planning_in_two(process.pid, b""):
                assert process.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
            time.sleep(2)
            yield process
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # a failing run is not left behind


_READ_ONLY_INSIDE = """
import sys, tempfile
from pathlib import Path
from reviewer.limits import Limits
from reviewer.sandbox import Sandbox, Task

if __name__ == "__main__":
    tempfile.tempdir = sys.argv[1]
    sandbox = Sandbox(Limits())
    assert sandbox.run(Task("gotmpl", ("{{ .n }}", {"n": 7}))) == ("ok", "7")
    (directory,) = Path(sys.argv[1]).iterdir()
    unpacked = directory / "chart" / "templates"  # as an archive may unpack it
    unpacked.mkdir(parents=True)
    (unpacked / "x.yaml").write_text("x: 1\\n")
    unpacked.chmod(0o555)
    sandbox.close()
"""


def test_a_closed_sandbox_leaves_no_directory_even_a_read_only_one(tmp_path: Path) -> None:
    # Root removes anything: the capabilities that let it are dropped, as an ordinary user
    # has none of them.
    drop = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"]
    as_user = drop if os.geteuid() == 0 else []
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    try:
        done = subprocess.run(
            [*as_user, sys.executable, "-c", _READ_ONLY_INSIDE, str(scratch)],
            capture_output=True,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        assert list(scratch.iterdir()) == []
    finally:
        for directory in scratch.rglob("*"):
            if directory.is_dir():
                directory.chmod(0o700)


_CLOSE_WHILE_STARTING = """
import multiprocessing.util
from reviewer.limits import Limits
from reviewer.sandbox import Sandbox, Task

if __name__ == "__main__":
    first, second = Sandbox(Limits()), Sandbox(Limits())
    first.start()
    launch = multiprocessing.util.spawnv_passfds

    def launch_then_close(*args):
        pid = launch(*args)
        first.close()  # what a garbage-collected renderer's finalizer may do just then
        return pid

    multiprocessing.util.spawnv_passfds = launch_then_close
    print(second.run(Task("gotmpl", ("{{ .n }}", {"n": 7}))))
    second.close()
"""


def test_closing_a_sandbox_while_another_starts_does_not_hang(tmp_path: Path) -> None:
    """The last sandbox closing must not wait for the resource tracker that a child being
    launched holds already: that child waits for its parent, which would wait forever."""
    script = tmp_path / "close_while_starting.py"
    script.write_text(_CLOSE_WHILE_STARTING, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "('ok', '7')"


def test_local_commands_do_not_load_the_github_client() -> None:
    """`reviewer diff` on a laptop starts without the GitHub client and the CI command."""
    probe = (
        "import sys, reviewer.cli; "
        "print(sorted(m for m in ('github', 'reviewer.commands.ci') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
