"""Kept side trees: the commits a diff compares, checked out once and moved in place.

A diff's commit sides (base, head, merge result) are checked out into trees kept under
`$XDG_CACHE_HOME/reviewer/trees/<repository>/<role>/`, beside the render cache, and moved
to the next commit with `git read-tree --reset -u`, which rewrites only the files whose
content differs; `git clean -ffdx` then removes whatever the commit does not hold. Each
tree has its own git directory (HEAD and index) borrowing the repository's objects, so the
user's HEAD, index, refs and worktree list are never touched. A tree another run holds,
or one git fails to update, gives way to a temporary worktree (docs/cache.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from reviewer.checkout import git, worktree
from reviewer.errors import CommandError
from reviewer.proc import ISOLATED_GIT
from reviewer.render_cache import default_render_cache_dir

KEEP_REPOSITORIES = 4
"""Repositories whose trees are kept; the least recently used beyond these are removed."""

_COMPLETE = "complete"  # written after an update succeeded; a tree without it is rebuilt
_LOCK = ".lock"
# Whatever the repository's configuration says: stat every file (no file-system monitor's
# word, no untracked cache) and check out every path (no sparse checkout).
_WHOLE_TREE = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "core.sparseCheckout=false",
)


def default_trees_dir(environ: Mapping[str, str]) -> Path:
    """`$XDG_CACHE_HOME/reviewer/trees` (else `~/.cache/…`): beside the render cache, not in
    it, so a render cache saved elsewhere (the action's) never carries checkouts."""
    return default_render_cache_dir(environ).parent / "trees"


@dataclass(frozen=True)
class SideTrees:
    """Where kept trees live, the git environment they are updated with, and where to say
    which checkout each side got."""

    root: Path
    env: Mapping[str, str] = field(default_factory=lambda: dict(ISOLATED_GIT))
    note: Callable[[str], None] = lambda _message: None
    keep: int = KEEP_REPOSITORIES

    @contextmanager
    def checkout(self, top: Path, sha: str, role: str) -> Iterator[Path]:
        """A tree holding exactly commit `sha` for the block: the kept tree of `role`,
        updated in place, or a temporary worktree when that one is busy or fails."""
        with ExitStack() as stack:
            tree = self._kept(stack, top, sha, role)
            if tree is None:
                tree = stack.enter_context(worktree(top, sha, env=self.env))
            yield tree

    def _kept(self, stack: ExitStack, top: Path, sha: str, role: str) -> Path | None:
        try:
            common = _common_dir(top, self.env)
            repository = self.root / _digest(common)
            held = stack.enter_context(_holding(repository, role))
            if held:
                evict(self.root, keep=self.keep, current=repository)
        except (CommandError, OSError):
            self.note(f"{role} checkout: temporary worktree (cannot keep trees in {self.root})")
            return None
        if not held:
            self.note(f"{role} checkout: temporary worktree (the kept tree is in use)")
            return None
        return self._updated(repository / role, common, sha, role)

    def _updated(self, slot: Path, common: Path, sha: str, role: str) -> Path | None:
        reused = (slot / _COMPLETE).is_file()
        try:
            tree = _update(slot, common, sha, self.env, reused=reused)
        except (CommandError, OSError):
            _remove(slot)
            self.note(f"{role} checkout: temporary worktree (updating the kept tree failed)")
            return None
        self.note(f"{role} checkout: {'reused' if reused else 'new'} tree {tree}")
        return tree


@contextmanager
def _holding(repository: Path, role: str) -> Iterator[bool]:
    """The repository shared (so no other run evicts it) and the role's slot exclusively."""
    with _locked(repository.with_name(repository.name + _LOCK), fcntl.LOCK_SH) as shared:
        if not shared:
            yield False
            return
        repository.mkdir(exist_ok=True)
        with _locked(repository / (role + _LOCK), fcntl.LOCK_EX) as exclusive:
            yield exclusive


@contextmanager
def _locked(path: Path, kind: int) -> Iterator[bool]:
    """flock `path` without waiting; False when another run holds it or it was removed
    (an eviction) between opening and locking."""
    # Only the user reads the trees: a checkout may hold what a filter (git-crypt, LFS) wrote.
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(descriptor, kind | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield _same_file(path, descriptor)
    finally:
        os.close(descriptor)


def _same_file(path: Path, descriptor: int) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(descriptor).st_ino
    except FileNotFoundError:
        return False


def _common_dir(top: Path, env: Mapping[str, str]) -> Path:
    listed = git(top, "rev-parse", "--git-common-dir", env=env).stdout.decode().strip()
    return (top / listed).resolve()


def _digest(common: Path) -> str:
    return hashlib.sha256(os.fsencode(common)).hexdigest()[:32]


def _update(slot: Path, common: Path, sha: str, env: Mapping[str, str], *, reused: bool) -> Path:
    """Move the slot's tree to `sha`: every tracked file as the commit holds it, nothing
    else. The completion marker is absent while the tree is between commits."""
    if reused:
        (slot / _COMPLETE).unlink()
    else:
        _remove(slot)
    git_dir, tree = slot / "git", slot / "tree"
    git_dir.mkdir(parents=True, exist_ok=True)
    tree.mkdir(exist_ok=True)
    (git_dir / "commondir").write_text(f"{common}\n")
    (git_dir / "HEAD").write_text(f"{sha}\n")
    (tree / ".git").write_text(f"gitdir: {git_dir}\n")
    # Named explicitly, never discovered: a missing `.git` must not lead git to a parent's.
    where = (f"--git-dir={git_dir}", f"--work-tree={tree}", *_WHOLE_TREE)
    git(tree, *where, "read-tree", "--reset", "-u", sha, env=env)
    git(tree, *where, "clean", "-ffdxq", env=env)
    (slot / _COMPLETE).write_text(f"{sha}\n")
    return tree


def _remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def evict(root: Path, *, keep: int, current: Path | None = None) -> None:
    """Remove the trees of all but the `keep` most recently used repositories (`current`
    counts as used now); a repository another run is using is left alone."""
    if current is not None:
        with contextlib.suppress(OSError):
            os.utime(current.with_name(current.name + _LOCK))
    locks = sorted(root.glob("*" + _LOCK), key=_used, reverse=True)
    for lock in locks[keep:]:
        _remove_repository(lock)


def _used(lock: Path) -> float:
    try:
        return lock.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def _remove_repository(lock: Path) -> bool:
    """Remove one repository's trees unless a run holds them; True when removed."""
    with _locked(lock, fcntl.LOCK_EX) as exclusive:
        if not exclusive:
            return False
        _remove(lock.with_name(lock.name.removesuffix(_LOCK)))
        lock.unlink(missing_ok=True)
        return True


@dataclass(frozen=True)
class TreesUsage:
    """How many repositories have kept trees, and the bytes their files take."""

    repositories: int
    size: int


def usage(root: Path) -> TreesUsage:
    """The kept trees under `root`."""
    repositories = [path for path in root.glob("*") if path.is_dir()]
    return TreesUsage(len(repositories), sum(_size(path) for path in repositories))


def _size(directory: Path) -> int:
    total = 0
    for parent, _dirs, files in os.walk(directory):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(parent, name)).st_size
    return total


def clear(root: Path) -> int:
    """Remove every kept tree no run is using; the number of repositories left in use."""
    return sum(not _remove_repository(lock) for lock in root.glob("*" + _LOCK))
