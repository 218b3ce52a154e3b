"""Which commits a review compares, on real repositories shaped like an Actions checkout."""

from __future__ import annotations

import pytest
from conftest import GitRepo, git

from reviewer.commits import pick_commits, pr_sides
from reviewer.errors import ReviewerError


def branches(repo: GitRepo, *, conflict: bool = False) -> tuple[str, str]:
    """A `feature` branch and a `main` that moved on; returns (main tip, feature tip)."""
    repo.write("file.txt", "one\n")
    repo.commit("start")
    git(repo.root, "checkout", "--quiet", "-b", "feature")
    repo.write("file.txt", "feature\n")
    head = repo.commit("feature")
    git(repo.root, "checkout", "--quiet", "main")
    repo.write("file.txt" if conflict else "other.txt", "main\n")
    return repo.commit("main moves on"), head


def test_github_merge_commit_gives_its_parents(git_repo: GitRepo) -> None:
    target, head = branches(git_repo)
    git(git_repo.root, "checkout", "--quiet", "--detach", target)
    git(git_repo.root, "merge", "--quiet", "--no-ff", "-m", "Merge", head)
    merge = git(git_repo.root, "rev-parse", "HEAD")
    commits = pick_commits(git_repo.root, head="HEAD", bases=(), pr_head=head)
    assert (commits.target, commits.merge, commits.head, commits.fallback) == (
        target,
        merge,
        head,
        False,
    )


def test_a_pr_head_is_merged_here_into_the_target(git_repo: GitRepo) -> None:
    target, head = branches(git_repo)
    commits = pick_commits(git_repo.root, head=head, bases=("main",), pr_head=None)
    assert (commits.target, commits.head, commits.fallback) == (target, head, False)
    assert commits.merge not in (target, head)


def test_conflicts_fall_back_to_the_head_against_the_merge_base(git_repo: GitRepo) -> None:
    target, head = branches(git_repo, conflict=True)
    commits = pick_commits(git_repo.root, head=head, bases=("main",), pr_head=None)
    base = git(git_repo.root, "merge-base", target, head)
    assert (commits.target, commits.merge, commits.fallback) == (base, head, True)
    with pr_sides(
        git_repo.root,
        git_repo.root.relative_to(git_repo.root),
        commits,
        number=7,
        base_label="main",
    ) as sides:
        assert (sides.base.root / "file.txt").read_text() == "one\n"
        assert (sides.head.root / "file.txt").read_text() == "feature\n"
        assert sides.head.ref == "#7 head"
        assert "does not merge cleanly into main" in sides.warnings[0]


def test_without_a_merge_commit_a_target_is_needed(git_repo: GitRepo) -> None:
    _, head = branches(git_repo)
    with pytest.raises(ReviewerError, match="no target is known"):
        pick_commits(git_repo.root, head=head, bases=("nowhere",), pr_head=None)
