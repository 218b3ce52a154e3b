"""Sides from real git repositories built by the tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from reviewer.checkout import git_sides
from reviewer.errors import ReviewerError


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
