"""Sides from git: the checkouts a diff compares (base, head, or the merge result).

Commits are checked out into temporary worktrees that are removed on every exit
path, Ctrl-C included, or into kept trees when the caller passes them (reviewer/trees.py).
The merge result is computed with `git merge-tree`, so the user's working tree and index
are never touched.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from reviewer import proc
from reviewer.errors import CommandError, ReviewerError
from reviewer.proc import ISOLATED_GIT
from reviewer.visible import shell_word

# Fixed identity and dates so the synthetic merge commit never depends on the user's config.
_MERGE_ENV = {
    "GIT_AUTHOR_NAME": "reviewer",
    "GIT_AUTHOR_EMAIL": "reviewer@localhost",
    "GIT_COMMITTER_NAME": "reviewer",
    "GIT_COMMITTER_EMAIL": "reviewer@localhost",
    "GIT_AUTHOR_DATE": "1970-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "1970-01-01T00:00:00Z",
}
# git without the user's configuration, found on the system's default PATH; commands get
# the edge's `Programs.git()` instead (HOME for safe.directory, GIT_CONFIG_* variables).


Checkout = Callable[[Path, str, str], AbstractContextManager[Path]]
"""(repository top, commit, role) -> a tree holding that commit for the block: a temporary
worktree by default, a kept tree (reviewer/trees.py) when the caller passes one."""


@dataclass(frozen=True)
class Side:
    """One side of a diff: a directory to render and what it was made from."""

    label: str  # "base" or "head"
    root: Path
    ref: str  # what the user asked for: a ref, "working tree", or a directory
    sha: str | None = None  # commit, when the side is a commit
    branch: str | None = None  # the checked-out branch, when the side is the working tree
    ignored: tuple[str, ...] = ()
    """Untracked paths under `root` that git ignores (directories end in `/`): not inputs."""


@dataclass(frozen=True)
class Sides:
    """The two sides of a diff, plus warnings about how they were made."""

    base: Side
    head: Side
    warnings: tuple[str, ...] = ()


# The user's hooks (post-checkout of git-lfs or husky, say) are not ours to run: checking
# out a side is no checkout of theirs. A sparse checkout's patterns are the user's view of
# their working tree: a side checked out with them would miss files, read as deleted.
_OWN_GIT = ("-c", "core.hooksPath=/dev/null", "-c", "core.sparseCheckout=false")


def git(
    repo: Path, *args: str, ok_codes: tuple[int, ...] = (0,), env: Mapping[str, str] = ISOLATED_GIT
) -> proc.Completed:
    """Run git in `repo` through the one subprocess chokepoint, seeing only `env`."""
    argv = proc.argv("git", *_OWN_GIT, "-C", repo, *args)
    return proc.run(proc.Command(argv, env=env, ok_codes=ok_codes))


def resolve(repo: Path, ref: str, *, env: Mapping[str, str] = ISOLATED_GIT) -> str:
    """The commit SHA a ref names; a clear error when it names nothing."""
    found = git(repo, "rev-parse", "--verify", f"{ref}^{{commit}}", ok_codes=(0, 1, 128), env=env)
    said = found.stderr.decode("utf-8", "replace")
    if found.returncode == 0 and not _names_two_refs(repo, ref, said, env):
        return found.stdout.decode().strip()
    if "ambiguous" in said:  # git picks a tag over a branch of one name, warning only
        raise ReviewerError(f"git ref '{ref}' is ambiguous in {repo}", hint=_AMBIGUOUS)
    hint = _SHALLOW if _shallow(repo, env) else "a branch, tag or commit (`git log` lists them)"
    raise ReviewerError(f"git ref '{ref}' does not name a commit in {repo}", hint=hint)


_AMBIGUOUS = "name it in full: a longer commit id, or refs/heads/NAME or refs/tags/NAME"
_SHALLOW = (
    "this clone is shallow (part of the history only): fetch what is missing, e.g. "
    "`git fetch --unshallow` or `git fetch origin main`; in GitHub Actions give "
    "actions/checkout `fetch-depth: 0`"
)


def _names_two_refs(repo: Path, ref: str, said: str, env: Mapping[str, str]) -> bool:
    """Whether `ref` is the name of more than one ref (a tag and a branch, say). git's
    "ambiguous" warning alone also comes for a name that is a prefix of some object id."""
    if "ambiguous" not in said:
        return False
    places = [f"refs/{kind}/{ref}" for kind in ("heads", "tags", "remotes")]
    listed = git(repo, "for-each-ref", "--format=%(refname)", *places, env=env)
    return len({line for line in listed.stdout.decode().splitlines() if line in places}) > 1


def _shallow(repo: Path, env: Mapping[str, str]) -> bool:
    found = git(repo, "rev-parse", "--is-shallow-repository", ok_codes=(0, 128), env=env)
    return found.stdout.decode().strip() == "true"


def toplevel(repo: Path, *, env: Mapping[str, str] = ISOLATED_GIT) -> Path:
    """The root of the git work tree containing `repo`; a clear error naming what git
    said when there is none (git missing, no repository, another user's, a bare one)."""
    try:
        found = git(repo, "rev-parse", "--show-toplevel", ok_codes=(0, 128), env=env)
    except CommandError as error:
        if not error.message.startswith("command not found"):
            raise
        raise ReviewerError(
            "git is needed and was not found", hint="install git (Debian: apt-get install git)"
        ) from None
    if found.returncode == 0:
        return Path(found.stdout.decode().strip())
    said = found.stderr.decode("utf-8", "replace")
    owned = _DUBIOUS.search(said)
    if owned is not None:
        raise ReviewerError(
            f"git refuses {owned.group(1)}: the repository belongs to another user",
            hint="if you trust it: git config --global --add safe.directory "
            + shell_word(owned.group(1)),
        )
    if "must be run in a work tree" in said:
        raise ReviewerError(
            f"{repo} is not in a work tree (a bare repository, or inside .git)",
            hint="run reviewer in a clone's working directory",
        )
    raise ReviewerError(f"{repo} is not inside a git repository")


_DUBIOUS = re.compile(r"dubious ownership in repository at '([^']*)'")


def fleet_root(directory: Path, markers: Sequence[str]) -> Path:
    """The nearest directory at or above `directory` holding one of `markers`.

    So `reviewer diff` run in `deployments/staging` reviews the fleet that directory belongs
    to. The search stops at the top of the git work tree; without a match, `directory`.
    """
    start = directory.resolve()
    for candidate in (start, *start.parents):
        if any((candidate / marker).exists() for marker in markers):
            return candidate
        if (candidate / ".git").exists():
            break
    return directory


def default_base(repo: Path, *, env: Mapping[str, str] = ISOLATED_GIT) -> str:
    """Merge base of HEAD with the upstream default branch (origin/HEAD, upstream, main, master)."""
    upstream = default_upstream(repo, env=env)
    found = git(repo, "merge-base", "HEAD", upstream, ok_codes=(0, 1, 128), env=env)
    if found.returncode == 0:
        return found.stdout.decode().strip()
    hint = _SHALLOW if _shallow(repo, env) else f"pass --base REF (for example --base {upstream})"
    raise ReviewerError(f"HEAD and {upstream} have no common commit in {repo}", hint=hint)


def default_upstream(repo: Path, *, env: Mapping[str, str] = ISOLATED_GIT) -> str:
    """The upstream default branch a diff without --base compares with."""
    for candidate in _upstream_candidates(repo, env):
        found = git(
            repo, "rev-parse", "--verify", "--quiet", candidate, ok_codes=(0, 1, 128), env=env
        )
        if found.returncode == 0:
            return candidate.removeprefix("refs/remotes/")
    raise ReviewerError(
        "cannot find the default upstream branch to compare with",
        hint="pass --base REF (for example --base origin/main)",
    )


def _upstream_candidates(repo: Path, env: Mapping[str, str]) -> list[str]:
    candidates: list[str] = []
    origin_head = git(
        repo, "symbolic-ref", "--quiet", "refs/remotes/origin/HEAD", ok_codes=(0, 1), env=env
    )
    if origin_head.returncode == 0:
        candidates.append(origin_head.stdout.decode().strip())
    candidates += ["@{upstream}", "origin/main", "origin/master", "main", "master"]
    return candidates


@contextmanager
def worktree(repo: Path, sha: str, *, env: Mapping[str, str] = ISOLATED_GIT) -> Iterator[Path]:
    """A temporary detached worktree at `sha`, removed afterwards whatever happens."""
    parent = Path(tempfile.mkdtemp(prefix="reviewer-side-"))
    path = parent / "tree"
    try:
        git(repo, "worktree", "add", "--detach", "--quiet", str(path), sha, env=env)
        yield path
    finally:
        # An add cut short (a signal kills git) leaves its entry locked, which a single
        # --force and `prune` both leave alone: the user's worktree list would keep it.
        removed = git(
            repo, "worktree", "remove", "--force", "--force", str(path), ok_codes=(0, 128), env=env
        )
        if removed.returncode != 0:
            git(repo, "worktree", "unlock", str(path), ok_codes=(0, 128), env=env)
        shutil.rmtree(parent, ignore_errors=True)
        git(repo, "worktree", "prune", ok_codes=(0, 128), env=env)


def merge_commit(
    repo: Path, base: str, head: str, *, env: Mapping[str, str] = ISOLATED_GIT
) -> str | None:
    """`head` merged into `base`, as GitHub's merge ref holds it; None on conflicts."""
    merged = git(repo, "merge-tree", "--write-tree", base, head, ok_codes=(0, 1), env=env)
    if merged.returncode == 1:
        return None
    tree = merged.stdout.decode().split()[0]
    command = proc.Command(
        proc.argv("git", "-C", repo, "commit-tree", tree, "-p", base, "-p", head, "-m", "merge"),
        env={**env, **_MERGE_ENV},
    )
    return proc.run(command).stdout.decode().strip()


@contextmanager
def git_sides(
    repo: Path,
    *,
    base: str | None,
    head: str | None,
    merge: bool,
    env: Mapping[str, str] = ISOLATED_GIT,
    checkout: Checkout | None = None,
) -> Iterator[Sides]:
    """Check out base and head (or the merge result) for the duration of the block."""
    check_out = checkout or (lambda top, sha, _role: worktree(top, sha, env=env))
    top = toplevel(repo, env=env)
    if head is None:
        _refuse_sparse(top, env)  # before any checkout: the answer is no review at all
    inner = repo.resolve().relative_to(top.resolve())
    base_ref = base or f"merge base with {default_upstream(top, env=env)}"
    base_sha = resolve(top, base, env=env) if base else default_base(top, env=env)
    warnings: list[str] = []
    with ExitStack() as stack:
        base_root = stack.enter_context(check_out(top, base_sha, "base"))
        head_side = _head_side(stack, top, inner, head, env, check_out)
        if merge:
            head_side, warning = _merged_side(
                stack, top, inner, base_sha, head_side, env, check_out
            )
            warnings += [warning] if warning else []
        base_side = Side("base", base_root / inner, base_ref, base_sha)
        yield Sides(base=base_side, head=head_side, warnings=tuple(warnings))


def _head_side(
    stack: ExitStack,
    top: Path,
    inner: Path,
    head: str | None,
    env: Mapping[str, str],
    check_out: Checkout,
) -> Side:
    if head is None:
        root = top / inner
        branch = _branch(top, env)
        return Side("head", root, "working tree", None, branch, ignored_paths(root, env=env))
    sha = resolve(top, head, env=env)
    return Side("head", stack.enter_context(check_out(top, sha, "head")) / inner, head, sha)


def _refuse_sparse(top: Path, env: Mapping[str, str]) -> None:
    """A sparse working tree lacks the files outside its patterns: they would read as
    deleted, and every release built from them as removed."""
    # Not through `git`, whose `core.sparseCheckout=false` would hide the very setting.
    found = proc.run(
        proc.Command(
            proc.argv("git", "-C", top, "config", "--bool", "core.sparseCheckout"),
            env=env,
            ok_codes=(0, 1, 128),  # 128: a value git cannot read as a boolean, not sparse
        )
    )
    if found.stdout.decode().strip() == "true":
        raise ReviewerError(
            f"the working tree of {top} is a sparse checkout: the files outside it would "
            "read as deleted",
            hint="review the commit instead (--head HEAD checks it out in full), "
            "or `git sparse-checkout disable`",
        )


def ignored_paths(root: Path, *, env: Mapping[str, str] = ISOLATED_GIT) -> tuple[str, ...]:
    """Untracked files and directories under `root` that .gitignore (or info/exclude) hides."""
    listed = git(
        root,
        "ls-files",
        "-z",
        "--others",
        "--ignored",
        "--exclude-standard",
        "--directory",
        env=env,
    )
    return tuple(sorted(name for name in listed.stdout.decode().split("\0") if name))


def _branch(top: Path, env: Mapping[str, str]) -> str | None:
    found = git(top, "symbolic-ref", "--quiet", "--short", "HEAD", ok_codes=(0, 1, 128), env=env)
    return found.stdout.decode().strip() or None if found.returncode == 0 else None


def _merged_side(
    stack: ExitStack,
    top: Path,
    inner: Path,
    base_sha: str,
    head: Side,
    env: Mapping[str, str],
    check_out: Checkout,
) -> tuple[Side, str | None]:
    head_sha = head.sha or resolve(top, "HEAD", env=env)
    merged = merge_commit(top, base_sha, head_sha, env=env)
    if merged is None:
        warning = (
            f"head ({head.ref}) does not merge cleanly into base; showing head alone "
            "instead of the merge result"
        )
        return head, warning
    root = stack.enter_context(check_out(top, merged, "merge")) / inner
    return Side("head", root, f"merge of {head.ref} into base", merged), None


def directory_sides(base: Path, head: Path) -> Sides:
    """Two plain directories compared as they are."""
    for path in (base, head):
        if not path.is_dir():
            raise ReviewerError(f"{path} is not a directory")
    return Sides(Side("base", base, str(base)), Side("head", head, str(head)))
