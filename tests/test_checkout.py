"""Sides from real git repositories built by the tests."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from reviewer.checkout import git_sides
from reviewer.errors import ReviewerError
from reviewer.proc import ISOLATED_GIT


def sh(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@pytest.fixture
def repo_dir(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    sh(repo, "init", "--quiet", "--initial-branch=main")
    sh(repo, "config", "user.email", "t@example.invalid")
    sh(repo, "config", "user.name", "test")
    (repo / "a.txt").write_text("base\n")
    (repo / "shared.txt").write_text("one\n")
    sh(repo, "add", ".")
    sh(repo, "commit", "--quiet", "-m", "base")
    return repo


def branch(repo: Path, name: str, files: dict[str, str], start: str = "main") -> str:
    sh(repo, "checkout", "--quiet", "-b", name, start)
    for path, text in files.items():
        (repo / path).write_text(text)
    sh(repo, "add", ".")
    sh(repo, "commit", "--quiet", "-m", name)
    return sh(repo, "rev-parse", "HEAD")


def worktrees(repo: Path) -> int:
    return sh(repo, "worktree", "list").count("\n") + 1


def test_default_head_is_working_tree_and_base_is_merge_base(repo_dir: Path) -> None:
    branch(repo_dir, "feature", {"a.txt": "feature\n"})
    (repo_dir / "a.txt").write_text("uncommitted\n")
    with git_sides(repo_dir, base="main", head=None, merge=False) as sides:
        assert (sides.base.root / "a.txt").read_text() == "base\n"
        assert (sides.head.root / "a.txt").read_text() == "uncommitted\n"
        assert sides.head.ref == "working tree"
        assert sides.base.sha == sh(repo_dir, "rev-parse", "main")
        assert worktrees(repo_dir) == 2
    assert worktrees(repo_dir) == 1


def test_merge_side_holds_both_changes(repo_dir: Path) -> None:
    branch(repo_dir, "feature", {"a.txt": "feature\n"})
    branch(repo_dir, "other", {"shared.txt": "two\n"}, start="main")
    sh(repo_dir, "checkout", "--quiet", "main")
    sh(repo_dir, "merge", "--quiet", "other")
    with git_sides(repo_dir, base="main", head="feature", merge=True) as sides:
        assert (sides.head.root / "a.txt").read_text() == "feature\n"
        assert (sides.head.root / "shared.txt").read_text() == "two\n"
        assert (sides.base.root / "a.txt").read_text() == "base\n"
        assert sides.warnings == ()
    assert worktrees(repo_dir) == 1


def test_merge_conflict_falls_back_to_head_with_warning(repo_dir: Path) -> None:
    branch(repo_dir, "feature", {"a.txt": "feature\n"})
    branch(repo_dir, "conflicting", {"a.txt": "main side\n"}, start="main")
    sh(repo_dir, "checkout", "--quiet", "main")
    sh(repo_dir, "merge", "--quiet", "conflicting")
    with git_sides(repo_dir, base="main", head="feature", merge=True) as sides:
        assert (sides.head.root / "a.txt").read_text() == "feature\n"
        assert "does not merge cleanly" in sides.warnings[0]
    assert worktrees(repo_dir) == 1


def test_worktrees_are_removed_when_the_block_raises(repo_dir: Path) -> None:
    branch(repo_dir, "feature", {"a.txt": "feature\n"})
    with (
        pytest.raises(KeyboardInterrupt),
        git_sides(repo_dir, base="main", head="feature", merge=False),
    ):
        assert worktrees(repo_dir) == 3
        raise KeyboardInterrupt
    assert worktrees(repo_dir) == 1


@pytest.mark.parametrize("git_file", ["kept", "missing"])
def test_a_locked_worktree_is_removed_from_the_users_list(repo_dir: Path, git_file: str) -> None:
    """A `git worktree add` killed by a signal leaves its entry locked ("initializing"),
    and before its `.git` file is written it is not even a working tree to `remove`."""
    with git_sides(repo_dir, base="main", head=None, merge=False) as sides:
        sh(repo_dir, "worktree", "lock", "--reason", "initializing", str(sides.base.root))
        if git_file == "missing":
            (sides.base.root / ".git").unlink()
        assert worktrees(repo_dir) == 2
    assert worktrees(repo_dir) == 1
    assert not list((repo_dir / ".git" / "worktrees").glob("*"))


def test_unknown_ref_is_a_clear_error(repo_dir: Path) -> None:
    with (
        pytest.raises(ReviewerError, match="git ref 'nope' does not name a commit"),
        git_sides(repo_dir, base="nope", head=None, merge=False),
    ):
        pass


def test_default_base_uses_main_when_no_remote(repo_dir: Path) -> None:
    first = sh(repo_dir, "rev-parse", "main")
    branch(repo_dir, "feature", {"a.txt": "feature\n"})
    with git_sides(repo_dir, base=None, head=None, merge=False) as sides:
        assert sides.base.sha == first


# --- repositories as users and CI hand them over --------------------------------------------


def test_a_sparse_working_tree_is_refused_and_its_commits_are_checked_out_in_full(
    repo_dir: Path,
) -> None:
    """Files outside a sparse checkout are not there: compared as they were, every release
    built from them read as removed (and a side's worktree inherited the patterns)."""
    (repo_dir / "charts").mkdir()
    (repo_dir / "charts/web.yaml").write_text("chart\n")
    sh(repo_dir, "add", ".")
    sh(repo_dir, "commit", "--quiet", "-m", "chart")
    branch(repo_dir, "feature", {"a.txt": "feature\n"})
    sh(repo_dir, "sparse-checkout", "set", "--no-cone", "/a.txt")
    assert not (repo_dir / "charts").exists()
    said = _refusal(repo_dir, "main")
    assert "sparse checkout" in said and "--head HEAD" in said
    with git_sides(repo_dir, base="main", head="HEAD", merge=True) as sides:
        for side in (sides.base, sides.head):
            assert (side.root / "charts/web.yaml").read_text() == "chart\n"
    assert worktrees(repo_dir) == 1


def test_the_users_git_hooks_do_not_run_when_a_side_is_checked_out(repo_dir: Path) -> None:
    ran = repo_dir.parent / "hook-ran"
    for hook in ("post-checkout", "reference-transaction"):
        script = repo_dir / ".git/hooks" / hook
        script.write_text(f"#!/bin/sh\necho {hook} >> {ran}\n")
        script.chmod(0o755)
    head = branch(repo_dir, "feature", {"a.txt": "feature\n"})
    ran.unlink(missing_ok=True)  # the test's own checkout ran them
    with git_sides(repo_dir, base="main", head=head, merge=True) as sides:
        assert (sides.head.root / "a.txt").read_text() == "feature\n"
    assert not ran.exists()


def _refusal(repo: Path, base: str | None, env: dict[str, str] | None = None) -> str:
    """What reviewer says when it cannot make the sides (git sees `env`, if given)."""
    with (
        pytest.raises(ReviewerError) as refused,
        git_sides(repo, base=base, head=None, merge=False, env=env or ISOLATED_GIT),
    ):
        pass
    return refused.value.render()


def test_a_shallow_clone_without_the_commits_says_how_to_fetch_them(
    repo_dir: Path, tmp_path: Path
) -> None:
    """What CI's default checkout (one commit deep) gives: no merge base, no main."""
    branch(repo_dir, "feature", {"a.txt": "feature\n"})
    sh(repo_dir, "checkout", "--quiet", "main")
    (repo_dir / "shared.txt").write_text("two\n")
    sh(repo_dir, "commit", "--quiet", "-am", "main moves on")
    for name, options in (("both", "--no-single-branch"), ("one", "--single-branch")):
        clone = tmp_path / name
        command = ["git", "clone", "--quiet", "--depth", "1", options, "--branch", "feature"]
        subprocess.run([*command, repo_dir.as_uri(), clone], check=True)
        said = _refusal(clone, None if name == "both" else "main")
        assert "no common commit" in said if name == "both" else "does not name a commit" in said
        assert "shallow" in said and "fetch-depth: 0" in said


def test_an_ambiguous_ref_is_called_ambiguous(repo_dir: Path) -> None:
    """git would pick the tag and only warn; the user may have meant the branch."""
    sh(repo_dir, "tag", "twin")
    sh(repo_dir, "branch", "twin")
    assert "ambiguous" in _refusal(repo_dir, "twin")


def test_a_name_that_is_also_an_object_id_prefix_is_no_ambiguity(repo_dir: Path) -> None:
    """git warns "ambiguous" for a branch named like the start of any object id (a tag
    `cafe` or `2024`); it names one ref all the same."""
    prefix = sh(repo_dir, "rev-parse", "HEAD:a.txt")[:6]  # a blob's, not a commit's
    sh(repo_dir, "branch", prefix)
    with git_sides(repo_dir, base=prefix, head=None, merge=False) as sides:
        assert sides.base.sha == sh(repo_dir, "rev-parse", "main")


def test_without_git_the_message_says_git_is_needed(repo_dir: Path, tmp_path: Path) -> None:
    said = _refusal(repo_dir, "main", env={"PATH": str(tmp_path / "no-programs-here")})
    assert "git is needed and was not found" in said


@pytest.mark.skipif(os.geteuid() != 0, reason="making a repository another user's needs root")
def test_another_users_repository_says_what_git_said_and_how_to_trust_it(repo_dir: Path) -> None:
    """What a CI container running as root meets in a checkout made by another user."""
    (repo_dir / "sub").mkdir()
    os.chown(repo_dir, 65534, 65534)
    for path in repo_dir.rglob("*"):
        os.lchown(path, 65534, 65534)
    said = _refusal(repo_dir / "sub", "main")  # run from a subdirectory: git wants the top
    assert "belongs to another user" in said
    assert said.endswith(f"safe.directory {repo_dir}")
