"""Which commits a pull-request review compares, found the way GitHub builds its merge ref.

The target side is the first parent of GitHub's merge commit (the event's `base.sha` can be
stale); the other side is the merge commit itself. Without one, a merge is made here, and
when the branches conflict the PR head is shown against the merge base.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from reviewer.checkout import Side, Sides, git, merge_commit, resolve, worktree
from reviewer.errors import ReviewerError
from reviewer.markdown import Trusted
from reviewer.proc import ISOLATED_GIT


@dataclass(frozen=True)
class Commits:
    """What is compared: target vs merge; `head` is the PR head; `fallback` when no merge."""

    target: str
    merge: str
    head: str
    fallback: bool = False


def pick_commits(
    top: Path,
    *,
    head: str,
    bases: tuple[str, ...],
    pr_head: str | None,
    env: Mapping[str, str] = ISOLATED_GIT,
) -> Commits:
    """Target and merge commits: GitHub's merge commit at `head`, else a merge made here.

    git sees only `env` (the edge's `Programs.git()`).
    """
    checked_out = resolve(top, head, env=env)
    parents = _parents(top, checked_out, env)
    base = _first_commit(top, bases, env)
    if len(parents) == 2 and (parents[1] == pr_head if pr_head else base in (None, parents[0])):
        _require_commits(top, parents, env)
        return Commits(target=parents[0], merge=checked_out, head=parents[1])
    pr = resolve(top, pr_head, env=env) if pr_head else checked_out
    if base is None:
        raise ReviewerError(
            f"{head} is not GitHub's merge commit of the pull request and no target is known",
            hint="check out refs/pull/N/merge, or pass --base with the target branch",
        )
    merged = merge_commit(top, base, pr, env=env)
    if merged is not None:
        return Commits(target=base, merge=merged, head=pr)
    return Commits(target=_merge_base(top, base, pr, env), merge=pr, head=pr, fallback=True)


def _parents(top: Path, sha: str, env: Mapping[str, str]) -> list[str]:
    # The commit object itself, not rev-parse: a shallow clone hides parents it lacks.
    text = git(top, "cat-file", "-p", sha, env=env).stdout.decode()
    header = text.split("\n\n", 1)[0]
    return [line.split()[1] for line in header.splitlines() if line.startswith("parent ")]


def _first_commit(top: Path, refs: tuple[str, ...], env: Mapping[str, str]) -> str | None:
    for ref in refs:
        found = git(
            top,
            "rev-parse",
            "--verify",
            "--quiet",
            f"{ref}^{{commit}}",
            ok_codes=(0, 1, 128),
            env=env,
        )
        if found.returncode == 0:
            return found.stdout.decode().strip()
    return None


def _require_commits(top: Path, shas: list[str], env: Mapping[str, str]) -> None:
    for sha in shas:
        found = git(top, "cat-file", "-e", f"{sha}^{{commit}}", ok_codes=(0, 1, 128), env=env)
        if found.returncode:
            raise ReviewerError(
                f"commit {sha[:7]}, a parent of the merge commit, is not in the clone",
                hint="check out the merge commit with its parents (actions/checkout: "
                "fetch-depth: 2)",
            )


def _merge_base(top: Path, base: str, head: str, env: Mapping[str, str]) -> str:
    found = git(top, "merge-base", base, head, ok_codes=(0, 1, 128), env=env)
    if found.returncode:
        raise ReviewerError(
            f"cannot find the merge base of {base[:7]} and {head[:7]}",
            hint="check out with full history (actions/checkout: fetch-depth: 0)",
        )
    return found.stdout.decode().strip()


@contextmanager
def pr_sides(
    top: Path,
    inner: Path,
    commits: Commits,
    *,
    number: int | None,
    base_label: str,
    env: Mapping[str, str] = ISOLATED_GIT,
) -> Iterator[Sides]:
    """Worktrees of the target and merge commits for the duration of the block."""
    pull = f"#{number}" if number else "the pull request"
    warnings: tuple[str, ...] = ()
    head_label = f"merge of {pull}"
    if commits.fallback:
        head_label = f"{pull} head"
        # Trusted Markdown: the target branch is named by the repository, not by the PR.
        warnings = (
            Trusted(
                f"**No merge result**: {pull} does not merge cleanly into {base_label}, so "
                f"this shows its head {commits.head[:7]} against the merge base "
                f"{commits.target[:7]}. Changes made on {base_label} since then are not "
                "included: resolve the conflicts for a review of what would land."
            ),
        )
    with ExitStack() as stack:
        base_root = stack.enter_context(worktree(top, commits.target, env=env))
        head_root = stack.enter_context(worktree(top, commits.merge, env=env))
        yield Sides(
            base=Side("base", base_root / inner, base_label, commits.target),
            head=Side("head", head_root / inner, head_label, commits.merge),
            warnings=warnings,
        )
