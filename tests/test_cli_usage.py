"""What a newcomer meets on the command line: names that match nothing, a missing differ,
a subdirectory, a closed pipe, a settings file to try. Real git repositories, the real CLI."""

from __future__ import annotations

import errno
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from conftest import GitRepo, git

from reviewer.cli import main
from reviewer.commands import render as render_cmd
from reviewer.console import Console, pager_command
from reviewer.errors import ExitStatus

APP = "apps: [{template: app}]\n"
CLUSTERS = ("prod/eu", "prod/us", "dev/a")


@pytest.fixture
def fleet(git_repo: GitRepo) -> GitRepo:
    """Groups prod (eu, us) and dev (a), one deployment `web` everywhere; main, then a branch."""
    git_repo.write("deployments/apps/web/deployment.yaml", APP)
    for cluster in CLUSTERS:
        git_repo.write(f"deployments/{cluster}/cluster.values.yaml", f"where: {cluster}\n")
        git_repo.write(f"deployments/{cluster}/apps/.keep", "")
    git_repo.write("deployments/prod/group.values.yaml", "tier: gold\n")
    git_repo.commit("fleet")
    git(git_repo.root, "checkout", "--quiet", "-b", "feature")
    return git_repo


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[object, str, str]:
    with pytest.raises(SystemExit) as done:
        main(argv)
    captured = capsys.readouterr()
    return done.value.code, captured.out, captured.err


# --- filters that match nothing (issue 15, item 4) ------------------------------------------


def test_a_group_name_as_cluster_fails_before_rendering_listing_its_clusters(
    fleet: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rendered"
    code, _, err = run(["render", str(fleet.root), "-o", str(out), "--cluster", "prod"], capsys)
    assert code == ExitStatus.USAGE
    assert "prod is a group; its clusters are: prod/eu, prod/us" in err
    assert not out.exists() and "rendered" not in err


@pytest.mark.parametrize(
    ("flag", "name", "message"),
    [
        ("--cluster", "prod/eu-1", "--cluster prod/eu-1: no such cluster; did you mean: prod/eu,"),
        (
            "--deployment",
            "wbe",
            "--deployment wbe: no such deployment in any cluster; did you mean: web?",
        ),
    ],
)
def test_diff_with_a_filter_matching_nothing_exits_64_with_the_nearest_names(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str], flag: str, name: str, message: str
) -> None:
    fleet.write("deployments/prod/group.values.yaml", "tier: platinum\n")
    code, out, err = run(["diff", "--repo", str(fleet.root), "--base", "main", flag, name], capsys)
    assert code == ExitStatus.USAGE
    assert message in err
    assert out == "" and "rendering" not in err


def test_a_cluster_new_on_the_head_side_is_a_valid_filter(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/dev/b/apps/.keep", "")
    argv = ["diff", "--repo", str(fleet.root), "--base", "main", "--cluster", "dev/b"]
    code, out, err = run([*argv, "--format", "json"], capsys)
    assert code == ExitStatus.OK, err
    assert {r["cluster"] for r in json.loads(out)["releases"]} == {"dev/b"}


# --- a differ that is not installed (item 9) -------------------------------------------------


def test_differ_dyff_without_dyff_fails_before_rendering(
    fleet: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bare = tmp_path / "bin-without-dyff"
    bare.mkdir()
    monkeypatch.setenv("PATH", str(bare))
    code, _, err = run(["diff", "--repo", str(fleet.root), "--differ", "dyff"], capsys)
    assert code == ExitStatus.USAGE
    assert "no `dyff` executable is on PATH" in err and "install dyff" in err
    assert "rendering" not in err


# --- explain: suggestions, an empty PATH, chart defaults (item 10) ---------------------------


def explain(fleet: GitRepo, *extra: str) -> list[str]:
    return ["explain", str(fleet.root), "--cluster", "eu", "--deployment", "web", *extra]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--release", "ap"],
            "--release ap: no such release in deployment 'web' of cluster 'eu'; did you mean: app?",
        ),
        (
            ["--release", "app", "--cluster", "euu"],
            "--cluster euu: no such cluster; did you mean: eu",
        ),
        (
            ["--release", "app", "--deployment", "wbe"],
            "cluster prod/eu has no such deployment; did you mean: web?",
        ),
        (["--release", "app", "nowhere.at.all"], "no value at or under 'nowhere.at.all'"),
    ],
)
def test_explain_names_what_it_could_not_find(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, _, err = run([*explain(fleet), *argv], capsys)
    assert code == ExitStatus.USAGE
    assert message in err


def test_explain_shows_chart_defaults_as_the_lowest_level(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/global.values.yaml", "replicas: 3\n")
    code, out, err = run([*explain(fleet), "--release", "app"], capsys)
    assert code == ExitStatus.OK, err
    lines = out.splitlines()
    assert 'chartDefault: "from-chart"  ← chart values.yaml (chart default)' in lines
    assert (
        "replicas: 3  ← deployments/global.values.yaml (global)  "
        "(overrides chart values.yaml (chart default))"
    ) in lines


# --- a subdirectory of the repository (item 11) ----------------------------------------------


def test_diff_from_a_subdirectory_reviews_the_whole_fleet(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet.write("deployments/prod/group.values.yaml", "tier: platinum\n")
    monkeypatch.chdir(fleet.root / "deployments" / "prod")
    code, out, err = run(["diff", "--base", "main", "--format", "json"], capsys)
    assert code == ExitStatus.OK, err
    changed = {r["cluster"] for r in json.loads(out)["releases"] if r["status"] == "changed"}
    assert changed == {"prod/eu", "prod/us"}


# --- a reader that leaves early (item 12) ----------------------------------------------------


def test_a_closed_pipe_ends_quietly_with_status_141(fleet: GitRepo) -> None:
    """`reviewer diff --exit-code 2>&1 | head -1`: like git, 128 + SIGPIPE, never "failed"."""
    fleet.write("deployments/prod/group.values.yaml", "tier: platinum\n")
    argv = [sys.executable, "-m", "reviewer", "diff", "--base", "main", "--exit-code", "-j1"]
    local = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS")}
    env = {**local, "NO_COLOR": "1"}  # outside Actions: no `stop-commands` line first
    with subprocess.Popen(
        argv, cwd=fleet.root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env
    ) as reader:
        assert reader.stdout is not None
        first = reader.stdout.readline()
        reader.stdout.close()  # what `head -1` does after its line
        status = reader.wait()
    assert first.startswith(b"rendering base")
    assert status == 141
    assert not list(Path(fleet.root.parent).glob("reviewer-crash-*"))


# --- trying a settings file locally (item 13) ------------------------------------------------


def test_a_changed_working_tree_settings_file_is_named_with_how_to_try_it(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write(".reviewer.yaml", "noise: {labels: [team]}\n")
    code, _, err = run(["diff", "--repo", str(fleet.root), "--base", "main"], capsys)
    assert code == ExitStatus.OK, err
    assert ".reviewer.yaml differs on the head side (working tree); the base side's copy" in err
    assert f"--config {(fleet.root / '.reviewer.yaml').resolve()}" in err


def test_config_by_absolute_path_is_read_locally_and_refused_in_ci(
    fleet: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "try.yaml"
    outside.write_text("definitions: elsewhere\n", encoding="utf-8")
    argv = ["diff", "--repo", str(fleet.root), "--base", "main", "--config", str(outside)]
    code, _, err = run(argv, capsys)
    # The file outside the repository was read: its definitions root is what is missing.
    assert code == ExitStatus.INVALID_REPOSITORY
    assert "definitions root 'elsewhere/' not found" in err
    code, _, err = run(["ci", "--repo", str(fleet.root), "--config", str(outside)], capsys)
    assert code == ExitStatus.USAGE
    assert "in CI the settings come from the target branch only" in err


# --- the system refuses a resource ------------------------------------------------------------


def test_too_few_file_descriptors_is_said_plainly_not_reported_as_a_bug(tmp_path: Path) -> None:
    """A machine whose limit on open files is low (`ulimit -n 24`): the run stops with a
    status of its own and says which limit to raise, instead of asking for a bug report."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    example = Path(__file__).resolve().parents[1] / "examples" / "fleet"

    def few_files() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (24, 24))

    done = subprocess.run(
        [sys.executable, "-m", "reviewer", "render", str(example), "-o", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        env={**os.environ, "TMPDIR": str(scratch)},
        preexec_fn=few_files,
        check=False,
    )
    assert done.returncode == ExitStatus.NO_RESOURCES, done.stderr
    assert "refused reviewer file descriptors: Too many open files" in done.stderr
    assert "ulimit -n" in done.stderr
    assert "bug" not in done.stderr
    assert not list(scratch.glob("reviewer-crash-*"))


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (MemoryError(), "refused reviewer memory"),
        (RuntimeError("can't start new thread"), "refused reviewer a new thread"),
        (OSError(errno.ENOSPC, "No space left on device"), "refused reviewer disk space"),
    ],
)
def test_a_lack_of_resources_deep_in_a_command_is_said_plainly(
    fleet: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    error: Exception,
    said: str,
) -> None:
    def refused(*_: object) -> None:
        try:
            raise error
        except Exception as cause:  # as a library wraps it
            raise ValueError("could not go on") from cause

    monkeypatch.setattr(render_cmd, "run", refused)
    code, _, err = run(["render", str(fleet.root), "-o", str(tmp_path / "o")], capsys)
    assert code == ExitStatus.NO_RESOURCES
    assert said in err and "the run stopped" in err


def _while_out_of_space() -> None:
    """A bug in handling a full disk: still a bug."""
    try:
        raise OSError(errno.ENOSPC, "No space left on device")
    except OSError:
        raise AttributeError("'NoneType' object has no attribute 'foo'") from None


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (RuntimeError("can't start new car"), "can't start new car"),
        (None, "has no attribute 'foo'"),
    ],
)
def test_any_other_error_is_still_a_bug_with_its_log(
    fleet: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    error: Exception | None,
    said: str,
) -> None:
    def broken(*_: object) -> None:
        if error is None:
            _while_out_of_space()
        raise error or AssertionError

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(render_cmd, "run", broken)
    code, _, err = run(["render", str(fleet.root), "-o", str(tmp_path / "o")], capsys)
    assert code == ExitStatus.BUG
    assert "this is a bug" in err
    (log,) = tmp_path.glob("reviewer-crash-*.log")
    assert said in log.read_text()


def test_an_unwritable_report_or_snapshot_is_a_clear_error(
    fleet: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`-o` under a file (or a missing or read-only directory): status 3, naming the path."""
    fleet.write("deployments/prod/group.values.yaml", "tier: platinum\n")
    (tmp_path / "file").write_text("not a directory\n")
    report = tmp_path / "file" / "report.json"
    argv = ["diff", "--repo", str(fleet.root), "--base", "main", "-o", str(report)]
    code, _, err = run(argv, capsys)
    assert code == ExitStatus.INVALID_REPOSITORY
    assert f"{report}: cannot write the report (Not a directory)" in err
    snapshot = tmp_path / "file" / "snapshot"
    code, _, err = run(["render", str(fleet.root), "-o", str(snapshot)], capsys)
    assert code == ExitStatus.INVALID_REPOSITORY
    assert f"{snapshot}: cannot write the snapshot (Not a directory)" in err
    assert not list(tmp_path.glob("reviewer-crash-*"))


def test_a_full_disk_under_the_report_is_a_lack_of_resources(
    fleet: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    report = tmp_path / "report.json"
    write_text = Path.write_text

    def full(path: Path, *args: Any, **kwargs: Any) -> int:
        if path == report:
            raise OSError(errno.ENOSPC, "No space left on device")
        return write_text(path, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full)
    fleet.write("deployments/prod/group.values.yaml", "tier: platinum\n")
    argv = ["diff", "--repo", str(fleet.root), "--base", "main", "-o", str(report)]
    code, _, err = run(argv, capsys)
    assert code == ExitStatus.NO_RESOURCES
    assert f"{report}: cannot write the report (No space left on device)" in err
    assert "the system refused reviewer disk space" in err


# --- streams and signals a caller may hand over ----------------------------------------------


def _reviewer(fleet: GitRepo, *redirect: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`reviewer diff` of a changed fleet, run by bash with `redirect` applied to it."""
    fleet.write("deployments/prod/group.values.yaml", "tier: platinum\n")
    local = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS")}
    command = f"{sys.executable} -m reviewer diff --base main -j1 --no-pager {' '.join(redirect)}"
    return subprocess.run(
        ["bash", "-c", command],
        cwd=fleet.root,
        capture_output=True,
        text=True,
        env={**local, **env, "TMPDIR": str(fleet.root.parent)},
        check=False,
    )


@pytest.mark.parametrize(
    "environment",
    [{"PYTHONIOENCODING": "ascii"}, {"PYTHONIOENCODING": "latin-1", "LC_ALL": "C"}],
)
def test_a_stream_that_cannot_spell_the_report_shows_escapes(
    fleet: GitRepo, environment: dict[str, str]
) -> None:
    """reviewer's own arrows (→) and any name outside the stream's encoding once crashed
    the run; they are shown as escapes instead."""
    done = _reviewer(fleet, **environment)
    assert done.returncode == ExitStatus.OK, done.stderr
    assert "main (" in done.stdout and "\\u2192" in done.stdout
    assert not list(fleet.root.parent.glob("reviewer-crash-*"))


@pytest.mark.parametrize("redirect", [">&-", "2>&-", ">&- 2>&-"])
def test_a_closed_stream_is_written_to_as_to_dev_null(fleet: GitRepo, redirect: str) -> None:
    done = _reviewer(fleet, redirect)
    assert done.returncode == ExitStatus.OK, done.stderr
    assert not list(fleet.root.parent.glob("reviewer-crash-*"))
    if redirect == "2>&-":
        assert "platinum" in done.stdout and "error" not in done.stdout


def test_ctrl_c_ends_the_run_with_128_plus_sigint(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(render_cmd, "run", interrupted)
    code, _, err = run(["render", str(fleet.root), "-o", str(fleet.root.parent / "o")], capsys)
    assert code == 130
    assert "interrupted" in err and "bug" not in err


def test_a_dumb_terminal_gets_no_pager() -> None:
    assert pager_command({"TERM": "dumb", "PAGER": "sh"}) is None
    assert pager_command({"TERM": "xterm", "PAGER": "sh"}) == ("sh",)


def test_ctrl_c_in_the_pager_is_the_pagers() -> None:
    """less takes Ctrl-C (to stop a search); the terminal sends it to reviewer as well,
    which must wait for the pager rather than end and leave it on the terminal."""
    pager = ["sh", "-c", "kill -INT $PPID; sleep 0.2; cat >/dev/null; echo paged"]
    script = f"from reviewer import proc; print(proc.feed({pager!r}, 'report'))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["paged", "True"]


def test_a_full_device_behind_stderr_loses_messages_not_the_report(fleet: GitRepo) -> None:
    done = _reviewer(fleet, "2>/dev/full")
    assert done.returncode == ExitStatus.OK
    assert "platinum" in done.stdout


def test_a_full_device_behind_stdout_is_named(fleet: GitRepo) -> None:
    done = _reviewer(fleet, ">/dev/full")
    assert done.returncode == ExitStatus.NO_RESOURCES
    assert "cannot write the results to standard output (No space left on device)" in done.stderr


class _FailingOnce(io.StringIO):
    """A stream whose first write fails (a full device, freed at once)."""

    failed = False

    def write(self, text: str) -> int:
        if not self.failed:
            self.failed = True
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().write(text)


def test_a_message_that_could_not_be_written_is_dropped_not_retried() -> None:
    """rich keeps what it could not write and writes it with the next message."""
    err = _FailingOnce()
    console = Console(out=io.StringIO(), err=err)
    console.info("first")
    console.info("second")
    assert "first" not in err.getvalue()
