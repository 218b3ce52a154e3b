"""What `reviewer diff`, `render`, `explain` and `values` print, as a user sees it."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from agekeys import AgeIdentity, encrypt
from commandargs import run_cli as run
from conftest import GitRepo, git

from reviewer.errors import ExitStatus

APP = "apps: [{template: app}]\n"
TWO_APPS = "apps: [{template: app, name: one}, {template: app, name: two}]\n"
SECRETS = "deployments/prod/a/apps/web/values.sops.yaml"


@pytest.fixture
def fleet(git_repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> GitRepo:
    """Group `prod` (clusters a, b) sharing a group deployment of two releases; plus `dev`."""
    for name in ("PAGER", "CI", "GITHUB_ACTIONS", "SOPS_AGE_KEY", "SOPS_AGE_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)
    git_repo.write("deployments/prod/apps/web/deployment.yaml", TWO_APPS)
    for cluster in ("prod/a", "prod/b", "dev"):
        git_repo.write(f"deployments/{cluster}/cluster.values.yaml", f"where: {cluster}\n")
        git_repo.write(f"deployments/{cluster}/apps/.keep", "")
    git_repo.write("deployments/dev/apps/tool/deployment.yaml", APP)
    git_repo.commit("fleet")
    git(git_repo.root, "checkout", "--quiet", "-b", "feature")
    return git_repo


def diff(repo: GitRepo, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    return run(["diff", "--repo", str(repo.root), *extra], capsys)


# --- 7. failure counts --------------------------------------------------------------------------


def test_a_broken_group_deployment_counts_its_releases_and_one_deployment(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/prod/apps/web/deployment.yaml", "apps: [{template: nope}]\n")
    code, out, _ = diff(fleet, capsys, "--format", "json")
    assert code == ExitStatus.RENDER_FAILED
    summary = json.loads(out)["summary"]
    # 5 releases on the target branch: the 4 of the broken deployment failed, 1 unchanged.
    assert summary["releases"] == {
        "added": 0,
        "changed": 0,
        "removed": 0,
        "unchanged": 1,
        "failed": 4,
    }
    (broken,) = summary["failedDeployments"]
    assert (broken["deployment"], broken["clusters"]) == ("web", ["prod/a", "prod/b"])

    code, out, _ = diff(fleet, capsys)
    assert code == ExitStatus.RENDER_FAILED
    assert (
        "0 changed, 0 added, 0 removed, 4 failed, 1 unchanged release(s); "
        "1 deployment failed to plan (affects 2 clusters)"
    ) in out.splitlines()
    code, out, _ = diff(fleet, capsys, "--format", "markdown")
    assert (
        "4 failed, 1 unchanged release(s); 1 deployment failed to plan (affects 2 clusters)" in out
    )
    assert "| `prod/a` | 0 | 0 | 0 | 2 + 1 deployment(s) |" in out


def test_render_counts_releases_and_deployments_apart(
    fleet: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/prod/apps/web/deployment.yaml", "apps: [{template: nope}]\n")
    code, _, err = run(["render", str(fleet.root), "-o", str(tmp_path / "out")], capsys)
    assert code == ExitStatus.RENDER_FAILED
    assert (
        "1 release(s) rendered, 0 failed; 1 deployment(s) failed to plan (web in 2 cluster(s))"
        in err
    )


# --- 14. output ---------------------------------------------------------------------------------


def test_text_ends_with_the_summary_and_the_header_names_the_refs(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/prod/a/cluster.values.yaml", "where: moved\n")
    code, out, err = diff(fleet, capsys)
    assert code == ExitStatus.OK
    lines = out.splitlines()
    base = git(fleet.root, "rev-parse", "--short=7", "main")
    header = f"reviewer diff: merge base with main ({base}) → working tree of feature"
    assert lines[0] != header, "changes first, summary last"
    tail = lines[lines.index(header) :]
    assert tail == [
        header,
        "2 changed, 0 added, 0 removed, 0 failed, 3 unchanged release(s)",
        "per cluster:",
        "  prod/a  2 changed",
        "  (2 other cluster(s) unchanged)",
        "blast radius (files changed → releases built from them):",
        "  deployments/prod/a/cluster.values.yaml → 2 release(s) in 1 cluster(s), 2 changed",
    ]
    # Plain words on progress: what each side rendered, and what neither side had to.
    unrendered = "3 not rendered (every input the same on both sides)\n"
    assert f"base: 2 release(s) rendered, {unrendered}" in err
    assert f"head: 2 release(s) rendered, {unrendered}" in err
    assert "not rendered again" not in err


def test_summary_prints_only_the_summary_and_blast_radius(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/prod/a/cluster.values.yaml", "where: moved\n")
    code, out, _ = diff(fleet, capsys, "--summary")
    assert code == ExitStatus.OK
    assert out.startswith("reviewer diff: merge base with main (")
    assert "  prod/a  2 changed" in out
    assert "deployments/prod/a/cluster.values.yaml → 2 release(s)" in out
    assert "where: moved" not in out and "[changed]" not in out
    _, markdown, _ = diff(fleet, capsys, "--summary", "--format", "markdown")
    assert "<details>" not in markdown and "| `prod/a` | 0 | 2 | 0 | 0 |" in markdown


def test_markdown_blast_radius_is_a_list(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/prod/a/cluster.values.yaml", "where: moved\n")
    fleet.write("deployments/dev/cluster.values.yaml", "where: elsewhere\n")
    _, markdown, _ = diff(fleet, capsys, "--format", "markdown")
    assert (
        "- `deployments/prod/a/cluster.values.yaml` → 2 release(s) in 1 cluster(s), 2 changed\n"
        "- `deployments/dev/cluster.values.yaml` → 1 release(s) in 1 cluster(s), 1 changed\n"
    ) in markdown


def _on_a_terminal(repo: GitRepo, *args: str, pager: str) -> str:
    """Run the CLI with stdout on a pseudo-terminal; returns what the terminal received."""
    leader, follower = pty.openpty()
    env = {**os.environ, "PAGER": pager, "NO_COLOR": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "reviewer", "diff", "--repo", str(repo.root), *args],
        stdout=follower,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    os.close(follower)
    received = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed
            break
        if not chunk:
            break
        received += chunk
    process.wait()
    os.close(leader)
    return received.decode().replace("\r\n", "\n")


def test_a_terminal_gets_the_pager_with_the_summary_first(
    fleet: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/prod/a/cluster.values.yaml", "where: moved\n")
    paged = tmp_path / "paged.txt"
    pager = f"sh -c 'cat > {paged}'"
    assert _on_a_terminal(fleet, pager=pager) == ""
    text = paged.read_text()
    assert text.startswith("reviewer diff: merge base with main (")
    assert text.index("per cluster:") < text.index("[changed]")

    paged.unlink()
    shown = _on_a_terminal(fleet, "--no-pager", pager=pager)
    assert not paged.exists()
    assert shown.index("[changed]") < shown.index("per cluster:")

    # Not a terminal: never paged, whatever PAGER says.
    os.environ["PAGER"] = pager
    try:
        code, out, _ = diff(fleet, capsys)
    finally:
        del os.environ["PAGER"]
    assert code == ExitStatus.OK and "per cluster:" in out and not paged.exists()


# --- 5. explain and values without the key ------------------------------------------------------


@pytest.fixture
def secret_fleet(fleet: GitRepo, tmp_path: Path) -> tuple[GitRepo, Path]:
    """The fleet with one SOPS file for prod/a's web releases; returns it and the key file."""
    identity = AgeIdentity.generate()
    key_file = identity.write(tmp_path / "keys.txt")
    target = fleet.root / SECRETS
    target.parent.mkdir(parents=True, exist_ok=True)
    encrypt(target.parent, {"password": "hunter2-Sup3r"}, identity, name=target.name)
    fleet.write("deployments/prod/a/apps/web/deployment.yaml", _with_secrets())
    return fleet, key_file


def _with_secrets() -> str:
    return (
        "apps: [{template: app, name: one, secrets: [values.sops.yaml]},"
        " {template: app, name: two}]\n"
    )


RELEASE = ["--cluster", "prod/a", "--deployment", "web", "--release", "one-app"]


def test_explain_and_values_say_which_files_were_not_decrypted(
    secret_fleet: tuple[GitRepo, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, _ = secret_fleet
    code, out, err = run(["explain", str(repo.root), *RELEASE], capsys)
    assert code == ExitStatus.OK and "password:" in out
    assert f"secrets were not decrypted (no usable SOPS key) in 1 file(s) ({SECRETS})" in err
    assert "SOPS_AGE_KEY_FILE" in err
    code, out, err = run(["values", str(repo.root), *RELEASE], capsys)
    assert code == ExitStatus.OK and f"({SECRETS})" in err and "SOPS_AGE_KEY_FILE" in err


def test_values_no_redact_refuses_placeholders_as_real_values(
    secret_fleet: tuple[GitRepo, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo, key_file = secret_fleet
    code, out, err = run(["values", str(repo.root), *RELEASE, "--no-redact"], capsys)
    # A non-zero exit stops the suggested `reviewer values ... > f && helm template -f f`.
    assert code == ExitStatus.INVALID_REPOSITORY and out == ""
    assert f"--no-redact refused: secrets were not decrypted in {SECRETS}" in err
    assert "SOPS_AGE_KEY_FILE" in err and "--secrets keyless" in err

    code, out, err = run(
        ["values", str(repo.root), *RELEASE, "--no-redact", "--secrets", "keyless"], capsys
    )
    assert code == ExitStatus.OK and "password: sops-placeholder" in out
    assert "these values hold placeholders" in err

    monkeypatch.setenv("SOPS_AGE_KEY_FILE", str(key_file))
    code, out, err = run(["values", str(repo.root), *RELEASE, "--no-redact"], capsys)
    assert code == ExitStatus.OK and "password: hunter2-Sup3r" in out
    assert "not decrypted" not in err
