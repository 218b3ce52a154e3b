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
def git_repo(tmp_path: Path) -> Path:
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


def test_default_head_is_working_tree_and_base_is_merge_base(git_repo: Path) -> None:
    branch(git_repo, "feature", {"a.txt": "feature\n"})
    (git_repo / "a.txt").write_text("uncommitted\n")
    with git_sides(git_repo, base="main", head=None, merge=False) as sides:
        assert (sides.base.root / "a.txt").read_text() == "base\n"
        assert (sides.head.root / "a.txt").read_text() == "uncommitted\n"
        assert sides.head.ref == "working tree"
        assert sides.base.sha == sh(git_repo, "rev-parse", "main")
        assert worktrees(git_repo) == 2
    assert worktrees(git_repo) == 1


def test_merge_side_holds_both_changes(git_repo: Path) -> None:
    branch(git_repo, "feature", {"a.txt": "feature\n"})
    branch(git_repo, "other", {"shared.txt": "two\n"}, start="main")
    sh(git_repo, "checkout", "--quiet", "main")
    sh(git_repo, "merge", "--quiet", "other")
    with git_sides(git_repo, base="main", head="feature", merge=True) as sides:
        assert (sides.head.root / "a.txt").read_text() == "feature\n"
        assert (sides.head.root / "shared.txt").read_text() == "two\n"
        assert (sides.base.root / "a.txt").read_text() == "base\n"
        assert sides.warnings == ()
    assert worktrees(git_repo) == 1


def test_merge_conflict_falls_back_to_head_with_warning(git_repo: Path) -> None:
    branch(git_repo, "feature", {"a.txt": "feature\n"})
    branch(git_repo, "conflicting", {"a.txt": "main side\n"}, start="main")
    sh(git_repo, "checkout", "--quiet", "main")
    sh(git_repo, "merge", "--quiet", "conflicting")
    with git_sides(git_repo, base="main", head="feature", merge=True) as sides:
        assert (sides.head.root / "a.txt").read_text() == "feature\n"
        assert "does not merge cleanly" in sides.warnings[0]
    assert worktrees(git_repo) == 1


def test_worktrees_are_removed_when_the_block_raises(git_repo: Path) -> None:
    branch(git_repo, "feature", {"a.txt": "feature\n"})
    with (
        pytest.raises(KeyboardInterrupt),
        git_sides(git_repo, base="main", head="feature", merge=False),
    ):
        assert worktrees(git_repo) == 3
        raise KeyboardInterrupt
    assert worktrees(git_repo) == 1


def test_unknown_ref_is_a_clear_error(git_repo: Path) -> None:
    with pytest.raises(ReviewerError, match="git ref 'nope' does not name a commit"):
        with git_sides(git_repo, base="nope", head=None, merge=False):
            pass


def test_default_base_uses_main_when_no_remote(git_repo: Path) -> None:
    first = sh(git_repo, "rev-parse", "main")
    branch(git_repo, "feature", {"a.txt": "feature\n"})
    with git_sides(git_repo, base=None, head=None, merge=False) as sides:
        assert sides.base.sha == first
